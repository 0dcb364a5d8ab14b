# One end-to-end run of dpstudio-worker under mpirun, then dps_check_measured on what it wrote.
# -D: MPIRUN, WORKER, CHECKER, PROJECT, VARIANT, RANKS, OUTDIR; optional CRASH_RANK (the run must then fail
# and mpirun must end by itself: the test's TIMEOUT catches a hang), SINGLE_COPY (vader's single-copy
# mechanism, default none; "default" leaves vader's own choice, cross-memory attach where it works, and the
# worker then runs without its progress thread) and MPI_WAIT (DPSTUDIO_MPI_WAIT: spin or sleep).
set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
if(DEFINED CRASH_RANK)
  set(ENV{DPSTUDIO_WORKER_CRASH_RANK} ${CRASH_RANK})
endif()
if(DEFINED MPI_WAIT)
  set(ENV{DPSTUDIO_MPI_WAIT} ${MPI_WAIT})
endif()
set(single_copy --mca btl_vader_single_copy_mechanism none)
if(DEFINED SINGLE_COPY)
  if(SINGLE_COPY STREQUAL "default")
    set(single_copy)
  else()
    set(single_copy --mca btl_vader_single_copy_mechanism ${SINGLE_COPY})
  endif()
endif()
set(steps 2)
file(REMOVE_RECURSE ${OUTDIR})
file(MAKE_DIRECTORY ${OUTDIR})
execute_process(
  COMMAND ${MPIRUN} -np ${RANKS} --oversubscribe --mca btl self,vader ${single_copy}
    ${WORKER} --project ${PROJECT} --variant ${VARIANT} --steps ${steps} --warmup 1
    --output ${OUTDIR}/measured.json --trace-dir ${OUTDIR}/traces
  OUTPUT_FILE ${OUTDIR}/events.jsonl
  ERROR_FILE ${OUTDIR}/stderr.txt
  RESULT_VARIABLE rc
  TIMEOUT 100)
file(READ ${OUTDIR}/stderr.txt stderr_text)
if(DEFINED CRASH_RANK)
  if(rc EQUAL 0)
    message(FATAL_ERROR "rank ${CRASH_RANK} was killed but mpirun exited 0\n${stderr_text}")
  endif()
  if(rc MATCHES "timeout")
    message(FATAL_ERROR "mpirun did not end after rank ${CRASH_RANK} was killed\n${stderr_text}")
  endif()
  message(STATUS "mpirun ended with '${rc}' after rank ${CRASH_RANK} was killed")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun exited with '${rc}'\n${stderr_text}")
endif()
execute_process(
  COMMAND ${CHECKER} ${PROJECT} ${VARIANT} ${OUTDIR}/measured.json ${OUTDIR}/events.jsonl ${steps} ${OUTDIR}/traces
  RESULT_VARIABLE check_rc)
if(NOT check_rc EQUAL 0)
  message(FATAL_ERROR "dps_check_measured failed for ${VARIANT}")
endif()
