#!/bin/sh
# A stand-in for mpirun in the launcher's tests (selected with DPSTUDIO_MPIRUN). It never starts the worker;
# it plays a scripted run chosen by FAKE_MPIRUN_MODE:
#   ok           hello, progress of 2 ranks, a log line, done; copies $FAKE_MEASURED to the --output path
#   fail-check   like ok, but the done event's correctness failed; exits 1
#   crash        hello, progress, then Open MPI's message that rank 1 died of SIGSEGV; exits 139
#   error-event  hello, then an error event from rank 1; exits 3
#   hang         hello, then waits for ever (children in its group and one in a session of its own)
#   stubborn     like hang, but ignores SIGTERM (so only SIGKILL ends it)
#   garbled      progress lines cut in the middle of writes, a non-JSON stdout line; exits 0
#   mute-hang    hello, then closes its stdout and stderr and waits for ever
#   unordered    rank 1's progress before rank 0's hello and after its done (as mpirun may merge them)
#   long         like ok, but its 8 progress events come 0.4 s apart (a run longer than a 1 s timeout that
#                never stops progressing for that long)
# FAKE_MPIRUN_ARGS: file to write the arguments to (one per line) and OMPI_ALLOW_RUN_AS_ROOT.
# FAKE_MPIRUN_PIDS: file to write the pids of the processes a hanging run leaves waiting.
if [ "$1" = "--version" ]; then
    echo "mpirun (Open MPI) 4.1.4-fake"
    echo ""
    echo "Report bugs to nobody"
    exit 0
fi

if [ -n "$FAKE_MPIRUN_ARGS" ]; then
    : > "$FAKE_MPIRUN_ARGS.tmp"
    for arg in "$@"; do printf '%s\n' "$arg" >> "$FAKE_MPIRUN_ARGS.tmp"; done
    printf 'OMPI_ALLOW_RUN_AS_ROOT=%s\n' "${OMPI_ALLOW_RUN_AS_ROOT:-}" >> "$FAKE_MPIRUN_ARGS.tmp"
    mv "$FAKE_MPIRUN_ARGS.tmp" "$FAKE_MPIRUN_ARGS"
fi

output=""
while [ $# -gt 0 ]; do
    if [ "$1" = "--output" ]; then output="$2"; fi
    shift
done

hello() { echo '{"event":"hello","format_version":1,"ranks":2,"steps":1,"warmup":1,"backend":"cpu","comm":"mpi"}'; }
progress() {
    for step in 0 1; do
        echo "{\"event\":\"progress\",\"rank\":0,\"step\":$step,\"done\":4,\"total\":4}"
        echo "{\"event\":\"progress\",\"rank\":1,\"step\":$step,\"done\":4,\"total\":4}"
    done
}
done_event() {
    echo "{\"event\":\"done\",\"format_version\":1,\"output\":\"$output\",\"correctness\":{\"passed\":$1,\"max_loss_error\":1e-9,\"max_grad_error\":1e-12},\"median_step\":0,\"step_makespan_us\":[1234.5]}"
}
wait_forever() {
    sleep 1000 &
    in_group=$!
    setsid sleep 1000 &
    own_session=$!
    if [ -n "$FAKE_MPIRUN_PIDS" ]; then
        printf '%s\n%s\n%s\n' "$$" "$in_group" "$own_session" > "$FAKE_MPIRUN_PIDS.tmp"
        mv "$FAKE_MPIRUN_PIDS.tmp" "$FAKE_MPIRUN_PIDS"
    fi
    while :; do sleep 1; done
}

case "${FAKE_MPIRUN_MODE:-ok}" in
ok)
    hello; progress
    echo "rank 0: a log line on stdout"
    echo "a log line on stderr" >&2
    if [ -n "$FAKE_MEASURED" ] && [ -n "$output" ]; then cp "$FAKE_MEASURED" "$output"; fi
    done_event true
    exit 0 ;;
fail-check)
    hello; progress
    done_event false
    echo '{"event":"error","rank":0,"message":"correctness: stage 1 parameter w2: gradient metric 3e-2 > 1e-10"}'
    exit 1 ;;
crash)
    hello; progress
    echo "--------------------------------------------------------------------------" >&2
    echo "mpirun noticed that process rank 1 with PID 4242 on node fake exited on signal 11 (Segmentation fault)." >&2
    echo "--------------------------------------------------------------------------" >&2
    exit 139 ;;
error-event)
    hello
    echo '{"event":"error","rank":1,"message":"std::bad_alloc in 1F3"}'
    exit 3 ;;
hang)
    hello
    echo '{"event":"progress","rank":0,"step":0,"done":4,"total":4}'
    echo '{"event":"progress","rank":1,"step":0,"done":2,"total":4}'
    wait_forever ;;
stubborn)
    trap '' TERM
    hello
    wait_forever ;;
garbled)
    printf '{"event":"hello","format_version":1,'
    sleep 0.1
    printf '"ranks":2,"steps":1,"warmup":0,"backend":"cpu","comm":"mpi"}\nnot json {"event":\n'
    printf '{"event":"progress","rank":0,"step":0,"done":1,"total":1}\n{"event":"progress","rank":1,'
    sleep 0.1
    printf '"step":0,"done":1,"total":1}\n'
    done_event true
    exit 0 ;;
mute-hang)
    hello
    exec >/dev/null 2>&1
    wait_forever ;;
long)
    hello
    for done in 1 2 3 4; do
        for rank in 0 1; do
            sleep 0.4
            echo "{\"event\":\"progress\",\"rank\":$rank,\"step\":0,\"done\":$done,\"total\":4}"
        done
    done
    done_event true
    exit 0 ;;
unordered)
    echo '{"event":"progress","rank":1,"step":0,"done":1,"total":2}'
    hello
    echo '{"event":"progress","rank":0,"step":0,"done":2,"total":2}'
    done_event true
    echo '{"event":"progress","rank":1,"step":0,"done":2,"total":2}'
    exit 0 ;;
esac
echo "fake-mpirun: unknown FAKE_MPIRUN_MODE $FAKE_MPIRUN_MODE" >&2
exit 2
