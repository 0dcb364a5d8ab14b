#!/usr/bin/env bash
# End to end: `dpstudio run` of a tiny DualPipeV project on 2 real MPI ranks, then calibrate and predict with
# the fitted costs; a killed rank, a timeout and Ctrl-C each end the run with the right exit code and leave
# no process behind.
# Usage: run_e2e.sh DPSTUDIO [TEST_DATA_DIR]. Exits 77 (skipped) when mpirun or the worker is missing.
set -u
DPSTUDIO=$(realpath "$1")
DATA=${2:-$(dirname "$(realpath "$0")")/../data}
PROJECT="$DATA/launch/tiny.dpstudio.json"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dps-run-e2e-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$0")/lib.sh"

# Processes (not zombies) whose command line mentions $1: the ranks of one run, found by its unique output.
live_with() {
    local pid
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        [ "$pid" = "$$" ] && continue
        grep -qa -- "$1" "/proc/$pid/cmdline" 2>/dev/null || continue
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = "Z" ] && continue
        echo "$pid"
    done
}

# Waits (at most 60 s) until the progress stream in $1 has a progress event.
wait_progress() {
    for _ in $(seq 600); do
        grep -q '"event":"progress"' "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

devices=$("$DPSTUDIO" devices --json)
if ! printf '%s' "$devices" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["mpirun"]["path"] and d["worker"]["path"] else 1)'; then
    echo "skipped: mpirun or dpstudio-worker not found"; printf '%s\n' "$devices"; exit 77
fi

# The CPU profile the runs are predicted with: probed into a private cache (a short budget), then reused.
export XDG_CACHE_HOME="$WORK/cache"
"$DPSTUDIO" devices --probe --project "$PROJECT" --budget 1 >/dev/null 2>"$WORK/probe"
check "devices --probe caches this machine's profile" 'ls "$WORK"/cache/dpstudio/cpu-*.json >/dev/null 2>&1 || { cat "$WORK/probe" >&2; false; }'

# --- a real run with the progress stream -------------------------------------------------------------------
"$DPSTUDIO" run "$PROJECT" -o "$WORK/m.json" --steps 3 --warmup 1 --progress-json >"$WORK/stream" 2>"$WORK/err"
rc=$?
check "run exits 0" '[ $rc -eq 0 ] || { cat "$WORK/err" >&2; false; }'
check "stdout is exactly the JSON progress stream (hello first, done last)" 'python3 - "$WORK/stream" <<PY
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
assert events and events[0]["event"] == "hello" and events[-1]["event"] == "done", events[:1] + events[-1:]
assert all("event" in e for e in events)
last = {(e["rank"], e["step"]) for e in events if e["event"] == "progress"}
assert (0, 3) in last and (1, 3) in last, "every rank reports progress up to the last step"
PY'
check "the table goes to stderr" 'grep -q "predicted vs measured" "$WORK/err" && grep -q "rank 1 peak activations" "$WORK/err"'
check "the run is predicted for this machine from the cached profile, checked before the run, and says so" 'grep -Eq "^dpstudio: predicted for this machine \(probed CPU profile, $WORK/cache/dpstudio/cpu-[0-9a-f]*\.json; (checked now|probed again now): this machine.s GEMMs [^;]*; [0-9]* cores? shared by the ranks\): makespan " "$WORK/err" && grep -q "^prediction: for this machine (probed CPU profile, $WORK/cache/dpstudio/cpu-" "$WORK/err" && { ! grep -q "timing .* kernels" "$WORK/err" || grep -q "says, more than 15 %: probing again" "$WORK/err"; } || { cat "$WORK/err" >&2; false; }'
"$DPSTUDIO" run "$PROJECT" -o "$WORK/nominal.json" --steps 1 --warmup 0 --nominal >"$WORK/nout" 2>"$WORK/nerr"
check "run --nominal predicts for the project's devices" 'grep -q "^prediction: for the project.s devices (100 GFLOP/s × efficiency 0.6" "$WORK/nout" || { cat "$WORK/nout" "$WORK/nerr" >&2; false; }'
"$DPSTUDIO" compare "$PROJECT" --this-machine >"$WORK/cmp" 2>"$WORK/cmperr"
check "compare --this-machine predicts both variants from the cached profile" 'grep -q "costs: this machine (probed CPU profile, $WORK/cache/dpstudio/cpu-[0-9a-f]*\.json; [0-9]* cores\? shared by the ranks)" "$WORK/cmp" && grep -q "^dualpipev " "$WORK/cmp" && grep -q "^1f1b " "$WORK/cmp" && ! grep -q "not simulated" "$WORK/cmp" || { cat "$WORK/cmp" "$WORK/cmperr" >&2; false; }'
check "measured.json: correctness passed, every action once per step, activations and memory as predicted" 'python3 - "$WORK/m.json" "$WORK/err" <<PY
import json, re, sys
m = json.load(open(sys.argv[1]))
assert m["format_version"] == 1 and m["correctness"]["passed"], m["correctness"]
assert len(m["steps"]) == 3 and m["median_step"] in [s["step"] for s in m["steps"]]
for rank in m["ranks"]:
    for step in range(3):
        actions = [a["action"] for a in rank["actions"] if a["step"] == step]
        assert actions and len(actions) == len(set(actions)), (rank["rank"], step)
table = open(sys.argv[2]).read()
for line in table.splitlines():
    if "peak activations" in line or "peak memory" in line:  # exact (docs/memory.md)
        assert line.rstrip().endswith(" 0 %"), line
PY'

# --- calibrate, then predict and run with the fitted costs --------------------------------------------------
"$DPSTUDIO" calibrate "$WORK/m.json" -o "$WORK/costs.json" >"$WORK/cal" 2>&1
rc=$?
# The fit is tried on the run's own steps: accepted, or (a noisy machine) refused with the reason, nothing written.
check "calibrate checks the fit on the run: accepted, or refused with the reason and nothing written" \
    '{ [ $rc -eq 0 ] && grep -q "^fit against the run: predicts" "$WORK/cal"; } || { [ $rc -eq 1 ] && grep -q "^refused: " "$WORK/cal" && [ ! -e "$WORK/costs.json" ]; } || { cat "$WORK/cal" >&2; false; }'
"$DPSTUDIO" calibrate "$WORK/m.json" -o "$WORK/costs.json" --keep-refused >"$WORK/cal" 2>&1
rc=$?
check "calibrate --keep-refused exits 0" '[ $rc -eq 0 ] || { cat "$WORK/cal" >&2; false; }'
check "costs.json has four stages with F" 'python3 -c "import json,sys; c=json.load(open(sys.argv[1])); assert c[\"format_version\"]==1 and len(c[\"stages\"])==4 and all(\"f_us\" in s for s in c[\"stages\"])" "$WORK/costs.json"'
check "costs.json keeps the fit's slot variation: 101 rising percentiles of measured ÷ fitted − 1" 'python3 -c "import json,sys; q=json.load(open(sys.argv[1]))[\"slot_variation\"]; assert len(q)==101 and q==sorted(q) and q[0]<=0<=q[-1], q" "$WORK/costs.json"'
"$DPSTUDIO" simulate "$PROJECT" --costs "$WORK/costs.json" --json >"$WORK/sim.json"
check "simulate --costs exits 0" '[ $? -eq 0 ]'
check "simulate --costs predicts the median of 31 steps drawn from the slot variation" 'python3 -c "import json,sys; d=json.load(open(sys.argv[1]))[\"drawn\"]; assert d[\"draws\"]==31 and d[\"p10_makespan_us\"]<=d[\"p90_makespan_us\"], d" "$WORK/sim.json"'
"$DPSTUDIO" simulate "$PROJECT" --this-machine --costs "$WORK/costs.json" >"$WORK/simtext"
check "simulate --this-machine says the makespan was drawn and gives no MFU (the cluster's peak is not this CPU's)" 'grep -q "^makespan: .*(the median of 31 steps drawn from the slot variation (p10 " "$WORK/simtext" && ! grep -q "MFU" "$WORK/simtext" || { cat "$WORK/simtext" >&2; false; }'
"$DPSTUDIO" run "$PROJECT" -o "$WORK/m2.json" --costs "$WORK/costs.json" >"$WORK/out2" 2>"$WORK/err2"
rc=$?
check "run --costs exits 0 and prints the table on stdout" '[ $rc -eq 0 ] && grep -q "^makespan" "$WORK/out2"'
check "run --costs says whether the machine moved since the calibration run" \
    'grep -q "^machine against .*costs.json: this run.s slots took .*: the machine \(is as calibrated\|changed\)" "$WORK/out2"'

# --- a killed rank -----------------------------------------------------------------------------------------
OUT="$WORK/killed.json"
"$DPSTUDIO" run "$PROJECT" -o "$OUT" --steps 1000000 --progress-json >"$WORK/kstream" 2>"$WORK/kerr" &
runner=$!
wait_progress "$WORK/kstream"
victim=""
for pid in $(live_with "$OUT"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=1$'; then victim=$pid; fi
done
check "found rank 1 of the run" '[ -n "$victim" ]'
[ -n "$victim" ] && kill -KILL "$victim"
wait $runner
rc=$?
check "a killed rank ends the run with exit 3" '[ $rc -eq 3 ] || { echo "exit $rc" >&2; cat "$WORK/kerr" >&2; false; }'
check "the message names rank 1" 'grep -q "run failed: .*rank 1" "$WORK/kerr" || { cat "$WORK/kerr" >&2; false; }'
check "no process of the killed run is left" '[ -z "$(live_with "$OUT")" ]'

# --- a timeout: rank 1 hangs in its first step, so the progress stops --------------------------------------
OUT="$WORK/timeout.json"
start=$(date +%s)
DPSTUDIO_WORKER_HANG_RANK=1 "$DPSTUDIO" run "$PROJECT" -o "$OUT" --steps 3 --timeout 2 >/dev/null 2>"$WORK/terr"
rc=$?
check "a timeout ends the run with exit 3" '[ $rc -eq 3 ] && grep -q "timed out after 2 s without progress" "$WORK/terr"'
check "within the grace period" '[ $(( $(date +%s) - start )) -lt 30 ]'
check "no process of the timed-out run is left" '[ -z "$(live_with "$OUT")" ]'

# --- Ctrl-C ------------------------------------------------------------------------------------------------
OUT="$WORK/cancel.json"
"$DPSTUDIO" run "$PROJECT" -o "$OUT" --steps 1000000 --progress-json >"$WORK/cstream" 2>"$WORK/cerr" &
runner=$!
wait_progress "$WORK/cstream"
kill -INT $runner
wait $runner
rc=$?
check "Ctrl-C ends the run with exit 130" '[ $rc -eq 130 ] || { echo "exit $rc" >&2; cat "$WORK/cerr" >&2; false; }'
check "no process of the cancelled run is left" '[ -z "$(live_with "$OUT")" ]'

# --- the launcher itself killed (e.g. by a GUI after its grace period): mpirun is told, ranks end ----------
OUT="$WORK/orphan.json"
"$DPSTUDIO" run "$PROJECT" -o "$OUT" --steps 1000000 --progress-json >"$WORK/ostream" 2>/dev/null &
runner=$!
wait_progress "$WORK/ostream"
kill -KILL $runner
wait $runner 2>/dev/null
for _ in $(seq 100); do [ -z "$(live_with "$OUT")" ] && break; sleep 0.1; done
check "a killed launcher leaves no rank behind" '[ -z "$(live_with "$OUT")" ]'

# --- refused before starting -------------------------------------------------------------------------------
"$DPSTUDIO" run "$DATA/launch/bad_partition.dpstudio.json" -o "$WORK/bad.json" 2>"$WORK/berr"
rc=$?
check "a bad project is refused with exit 1" '[ $rc -eq 1 ] && grep -q "nothing was started" "$WORK/berr"'
DPSTUDIO_MPIRUN="$WORK/none" "$DPSTUDIO" run "$PROJECT" -o "$WORK/x.json" 2>"$WORK/merr"
rc=$?
check "a missing mpirun exits 3 with the hint" '[ $rc -eq 3 ] && grep -q "mpirun not found: install openmpi-bin or set DPSTUDIO_MPIRUN" "$WORK/merr"'

finish "all checks passed"
