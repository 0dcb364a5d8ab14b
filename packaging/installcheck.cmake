# Installs the build into a scratch prefix and starts the installed designer offscreen.
#   cmake -DBUILD_DIR=<build> -DPREFIX=<scratch> [-DPROJECT_FILE=<project>] -P installcheck.cmake
foreach(var BUILD_DIR PREFIX)
  if(NOT ${var})
    message(FATAL_ERROR "installcheck: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installcheck: cmake --install failed (${rc}):\n${out}\n${err}")
endif()

set(expected
  bin/dualpipe-studio
  bin/dpstudio
  share/applications/dualpipe-studio.desktop
  share/icons/hicolor/scalable/apps/dualpipe-studio.svg
  share/dualpipe-studio/default.dpstudio.json)
if(EXISTS ${BUILD_DIR}/bin/dpstudio-worker OR EXISTS ${BUILD_DIR}/engine/worker/dpstudio-worker)
  list(APPEND expected libexec/dpstudio-worker)
endif()
foreach(f ${expected})
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "installcheck: ${PREFIX}/${f} was not installed")
  endif()
endforeach()

# The desktop entry names the installed program and icon.
file(READ ${PREFIX}/share/applications/dualpipe-studio.desktop desktop)
foreach(line "Exec=dualpipe-studio" "Icon=dualpipe-studio" "Type=Application")
  string(FIND "${desktop}" "${line}" at)
  if(at LESS 0)
    message(FATAL_ERROR "installcheck: the desktop entry lacks '${line}'")
  endif()
endforeach()

# Start the installed app offscreen: main window and comparison screenshots.
set(shot ${PREFIX}/check-main.png)
set(compare ${PREFIX}/check-compare.png)
set(runtime ${PREFIX}/xdg-runtime)
file(MAKE_DIRECTORY ${runtime})
file(CHMOD ${runtime} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=${runtime} XDG_CONFIG_HOME=${PREFIX}/config
          ${PREFIX}/bin/dualpipe-studio --screenshot ${shot} --compare-screenshot ${compare} ${PROJECT_FILE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installcheck: the installed dualpipe-studio failed (${rc}):\n${out}\n${err}")
endif()
foreach(png ${shot} ${compare})
  if(NOT EXISTS ${png})
    message(FATAL_ERROR "installcheck: no screenshot at ${png}")
  endif()
  file(SIZE ${png} size)
  if(size LESS 20000)
    message(FATAL_ERROR "installcheck: ${png} is only ${size} bytes: nothing was drawn")
  endif()
  file(READ ${png} magic LIMIT 8 HEX)
  if(NOT magic STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "installcheck: ${png} is not a PNG")
  endif()
endforeach()

# A broken project is refused with a message and a non-zero exit, not a crash.
file(WRITE ${PREFIX}/broken.dpstudio.json "{ \"format_version\": 1, ")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=${runtime} XDG_CONFIG_HOME=${PREFIX}/config
          ${PREFIX}/bin/dualpipe-studio --screenshot ${PREFIX}/broken.png ${PREFIX}/broken.dpstudio.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "installcheck: a broken project should exit 1, got ${rc}:\n${err}")
endif()
message(STATUS "installcheck: installed into ${PREFIX}; the designer started offscreen and drew both views")
