#!/usr/bin/env bash
# A stand-in for `dpstudio` in the GUI's run tests: `run … --progress-json -o FILE` prints a scripted
# progress stream (docs/worker-protocol.md) and exits with a chosen code; `devices --json` prints a
# scripted machine. Controlled by environment variables:
#   FAKE_DPSTUDIO_SCENARIO   ok (default) | noise | check-failed | error-exit1 | refused | bad-args | crash
#                            | signal | slow | ignore-term | chatty | quiet-failure
# Like dpstudio, a run that exits non-zero ends its stream with a failed event (exit code and why), except
# bad-args (dpstudio refused its flags before the run) and signal (dpstudio itself died); quiet-failure's
# reason is in the failed event alone, with mpirun's last words on stderr.
#   FAKE_DPSTUDIO_RANKS      ranks in the hello event (default 2)
#   FAKE_DPSTUDIO_ACTIONS    actions per rank and step (default 4)
#   FAKE_DPSTUDIO_ARGS_FILE  where to write the arguments, one per line
#   FAKE_DPSTUDIO_PID_FILE   slow/ignore-term: where to write the pid of the child standing in for mpirun
#   FAKE_DPSTUDIO_DEVICES    cpu (default) | gpu | no-mpirun | partial | garbage | fail
set -u
here=$(cd "$(dirname "$0")" && pwd)
scenario=${FAKE_DPSTUDIO_SCENARIO:-ok}
ranks=${FAKE_DPSTUDIO_RANKS:-2}
actions=${FAKE_DPSTUDIO_ACTIONS:-4}

devices() {
    case ${FAKE_DPSTUDIO_DEVICES:-cpu} in
    gpu) cat <<'JSON'
{"format_version":1,"cpu":{"cores":16,"model":"Fake EPYC"},"cuda":{"built":true,"runtime_version":"13.0","message":null},
 "gpus":[{"index":0,"name":"NVIDIA H200","memory_bytes":150754820096,"compute_capability":"9.0"}],
 "mpirun":{"path":"/usr/bin/mpirun","version":"mpirun (Open MPI) 4.1.4"},"worker":{"path":"/usr/libexec/dpstudio-worker"}}
JSON
    ;;
    no-mpirun) echo '{"format_version":1,"cpu":{"cores":2,"model":"Fake CPU"},"cuda":{"built":false,"runtime_version":null,"message":"cuda: not built"},"gpus":[],"mpirun":{"path":null,"version":null},"worker":{"path":"/usr/libexec/dpstudio-worker"}}' ;;
    partial) echo '{"cpu":{"cores":4}}' ;;
    garbage) echo 'this is not json' ;;
    fail) echo "dpstudio: devices: something broke" >&2; exit 3 ;;
    *) echo '{"format_version":1,"cpu":{"cores":2,"model":"Fake CPU @ 3.00GHz"},"cuda":{"built":false,"runtime_version":null,"message":"cuda: not built"},"gpus":[],"mpirun":{"path":"/usr/bin/mpirun","version":"mpirun (Open MPI) 4.1.4"},"worker":{"path":"/usr/libexec/dpstudio-worker"}}' ;;
    esac
    exit 0
}

[ "${1:-}" = devices ] && devices

# `run PROJECT [options]`: only what the stream needs is read.
output="" steps=3 warmup=1
[ -n "${FAKE_DPSTUDIO_ARGS_FILE:-}" ] && printf '%s\n' "$@" >"$FAKE_DPSTUDIO_ARGS_FILE"
while [ $# -gt 0 ]; do
    case $1 in
    -o) output=$2; shift ;;
    --steps) steps=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    esac
    shift
done

announce() {
    echo "dpstudio: mpirun -np $ranks --oversubscribe --mca btl self,vader dpstudio-worker --project /tmp/dpstudio-run.json" >&2
    echo "dpstudio: backend cpu, comm mpi, $ranks ranks, $steps measured steps after $warmup warm-up" >&2
}
hello() { announce; echo "{\"event\":\"hello\",\"format_version\":1,\"ranks\":$ranks,\"steps\":$steps,\"warmup\":$warmup,\"backend\":\"cpu\",\"comm\":\"mpi\"}"; }
progress() { echo "{\"event\":\"progress\",\"rank\":$1,\"step\":$2,\"done\":$3,\"total\":$actions}"; }
step() {
    local d r
    for ((d = 1; d <= actions; d++)); do
        for ((r = 0; r < ranks; r++)); do progress "$r" "$1" "$d"; done
    done
}
done_event() {
    echo "{\"event\":\"done\",\"format_version\":1,\"output\":\"$output\",\"correctness\":{\"passed\":$1,\"max_loss_error\":$2,\"max_grad_error\":3e-13},\"median_step\":0,\"step_makespan_us\":[1200.5,1180.0,1250.0]}"
}
failed_event() { echo "{\"event\":\"failed\",\"format_version\":2,\"exit_code\":$1,\"message\":\"$2\"}"; }
write_measured() { sed "s/\"passed\": true/\"passed\": $1/" "$here/fake-dpstudio-measured.json" >"$output"; }

# Stand-in for mpirun and its ranks: a child that runs until it is ended.
start_child() {
    sleep 300 &
    child=$!
    [ -n "${FAKE_DPSTUDIO_PID_FILE:-}" ] && echo "$child" >"$FAKE_DPSTUDIO_PID_FILE"
}
run_slowly() {
    local s=0
    while true; do
        step $((s % (steps + warmup)))
        s=$((s + 1))
        sleep 0.1 &
        wait $!
    done
}

case $scenario in
ok | noise)
    hello
    [ "$scenario" = noise ] && echo "plain text on stdout, not an event" && echo "[rank 0] a note on stderr" >&2
    for ((s = 0; s < steps + warmup; s++)); do step "$s"; done
    [ "$scenario" = noise ] && echo "{not json either" && echo "dpstudio: a message for humans" >&2
    write_measured true
    done_event true 2.1e-08
    exit 0 ;;
chatty)
    hello
    for ((s = 0; s < steps + warmup; s++)); do
        for ((i = 0; i < 4000; i++)); do echo "[dpstudio-worker rank 0] step $s: line $i of a chatty rank"; done >&2
        step "$s"
    done
    write_measured true
    done_event true 2.1e-08
    exit 0 ;;
check-failed)
    hello
    for ((s = 0; s < steps + warmup; s++)); do step "$s"; done
    write_measured false
    done_event false 0.03
    echo "dpstudio: correctness check failed: stage 1 parameter w2: gradient metric 0.4 > 1e-10" >&2
    failed_event 1 "correctness check failed: stage 1 parameter w2: gradient metric 0.4 > 1e-10"
    exit 1 ;;
error-exit1)
    echo '{"event":"error","rank":0,"message":"the world size is 3 but variant dualpipev has 2 ranks"}'
    echo "dpstudio: run refused or its check failed: rank 0: the world size is 3 but variant dualpipev has 2 ranks" >&2
    failed_event 1 "rank 0: the world size is 3 but variant dualpipev has 2 ranks"
    exit 1 ;;
refused)
    echo "dpstudio: error: variant 'dualpipev': the layer partition covers 6 of 8 layers; nothing was started" >&2
    failed_event 1 "variant 'dualpipev': the layer partition covers 6 of 8 layers; nothing was started"
    exit 1 ;;
bad-args)
    echo "--steps: 0 is not in 1..1000000" >&2
    exit 2 ;;
crash)
    hello
    step 0
    progress 0 1 1
    echo '{"event":"error","rank":1,"message":"exited on signal 11 (Segmentation fault)"}'
    echo "dpstudio: run failed: rank 1: exited on signal 11 (Segmentation fault)" >&2
    failed_event 3 "rank 1: exited on signal 11 (Segmentation fault)"
    exit 3 ;;
quiet-failure)
    hello
    step 0
    failed_event 3 "run timed out after 5 s without progress (rank 1 at step 1, 0/4 actions): mpirun and its ranks were ended"
    echo "mpirun: Forwarding signal 15 to job" >&2
    exit 3 ;;
signal)
    hello
    kill -SEGV $$ ;;
slow)
    child=""
    trap '[ -n "$child" ] && kill $child 2>/dev/null && wait $child; echo "dpstudio: cancelled: mpirun and its ranks were ended" >&2; failed_event 130 "cancelled: mpirun and its ranks were ended"; exit 130' TERM
    start_child
    hello
    run_slowly ;;
ignore-term)
    trap 'echo "dpstudio: (fake) ignoring SIGTERM" >&2' TERM
    start_child
    hello
    run_slowly ;;
*)
    echo "fake-dpstudio: unknown scenario $scenario" >&2
    exit 2 ;;
esac
