#!/usr/bin/env bash
# dpstudio-worker exits 2 on bad flags in both of its modes (run and probe), before MPI starts
# (engine/protocol/exitcodes.h: 2 = bad flags), naming the flag at fault.
# Usage: worker_flags.sh WORKER
set -u
WORKER=$1
failures=0
expect() { # expect NAME PATTERN ARGS...
    local name=$1 pattern=$2
    shift 2
    local err rc
    err=$("$WORKER" "$@" 2>&1 > /dev/null)
    rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pattern" <<< "$err"; then
        echo "ok: $name"
    else
        echo "FAIL: $name: exit $rc (expected 2), stderr: $err" >&2
        failures=$((failures + 1))
    fi
}
expect "run mode: an unknown option" "unknown option '--bogus'" --project p.json --output m.json --bogus 1
expect "run mode: --project missing" "--project is required" --output m.json
expect "run mode: --steps not a count" "--steps" --project p.json --output m.json --steps zero
expect "run mode: an unknown backend" "--backend: expected auto, cpu or cuda" --project p.json --output m.json --backend tpu
expect "probe mode: an unknown option" "unknown option '--bogus'" --probe-info --bogus 1
expect "probe mode: --probe-compute without --shapes" "needs --shapes" --probe-compute
exit $((failures > 0))
