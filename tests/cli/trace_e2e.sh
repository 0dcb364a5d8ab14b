#!/usr/bin/env bash
# End to end: `dpstudio import-trace` on the committed PyTorch profiler traces (tests/data/traces), then
# calibrate and the validated export on the imported run; broken traces exit 1 naming the file and the
# reason and write nothing. Usage: trace_e2e.sh DPSTUDIO [TEST_DATA_DIR].
set -u
DPSTUDIO=$(realpath "$1")
DATA=${2:-$(dirname "$(realpath "$0")")/../data}
T="$DATA/traces"
PROJECT="$T/torch-block.dpstudio.json"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dps-trace-e2e-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$0")/lib.sh"

# --- a real torch 1.13 trace (gzipped, legacy layout), a folder ------------------------------------------
"$DPSTUDIO" import-trace "$T/torch113-dualpipev" --project "$PROJECT" -o "$WORK/m.json" >"$WORK/out" 2>"$WORK/err"
rc=$?
check "import-trace of the DualPipeV traces exits 0" '[ $rc -eq 0 ] || { cat "$WORK/err" >&2; false; }'
check "it says what it imported and the prediction" 'grep -q "^imported 2 ranks, 2 steps, 62 actions; median step 1: makespan 42.59 ms$" "$WORK/out" && grep -q "^predicted for the project.s devices (variant dualpipev): makespan " "$WORK/out" || { cat "$WORK/out" >&2; false; }'
check "it says which spans timed the actions and how the clocks were aligned" 'grep -q "timing: 0 compute actions from GPU-side spans (gpu_user_annotation), 62 from CPU-side user annotations" "$WORK/err" && grep -q "clock: aligned at the first step.s start" "$WORK/err"'
check "the file is measured format 2, no correctness check, its source, the project recorded" 'python3 - "$WORK/m.json" <<PY
import json, sys
m = json.load(open(sys.argv[1]))
assert m["format_version"] == 2, m["format_version"]
assert m["correctness"] is None
assert m["source"]["kind"] == "torch.profiler" and m["source"]["layout"] == "legacy", m["source"]
assert m["variant"] == "dualpipev" and m["project"]["variants"][0]["name"] == "dualpipev"
assert [s["makespan_us"] for s in m["steps"]] == [47321.0, 42588.0], m["steps"]
assert sorted(len(r["actions"]) for r in m["ranks"]) == [30, 32]
PY'

"$DPSTUDIO" calibrate "$WORK/m.json" -o "$WORK/costs.json" >"$WORK/cal" 2>&1
rc=$?
check "calibrate works on the imported run" '[ $rc -eq 0 ] || { cat "$WORK/cal" >&2; false; }'
check "F of stage 0 is the trimmed mean of the measured 0F slots (1061, 1105, 1150, 1230, 1259, 1275 µs: 10 % of 6 cuts none, 1180 µs)" 'python3 -c "import json,sys; c=json.load(open(sys.argv[1])); assert c[\"stages\"][0][\"f_us\"] == 1180.0, c[\"stages\"][0]" "$WORK/costs.json"'

"$DPSTUDIO" export "$PROJECT" --format validated-config --measured "$WORK/m.json" -o "$WORK/vc.json" 2>"$WORK/vcerr"
rc=$?
check "the validated export of an imported run is not validated (exit 1)" '[ $rc -eq 1 ]'
check "and says measured externally, not checked" 'grep -q "not validated: the run was measured externally, not checked (torch.profiler (legacy layout" "$WORK/vcerr" && python3 -c "import json,sys; v=json.load(open(sys.argv[1])); assert v[\"measured\"][\"note\"] == \"measured externally, not checked\" and v[\"measured\"][\"correctness\"] is None and v[\"validated\"] is False" "$WORK/vc.json"'

# Files one by one, another variant; a Kineto trace with GPU spans whose files carry no rank in the name.
"$DPSTUDIO" import-trace "$T/torch113-1f1b/rank1.json.gz" "$T/torch113-1f1b/rank0.json.gz" --project "$PROJECT" --variant 1f1b -o "$WORK/f.json" >"$WORK/out" 2>"$WORK/err"
check "files given one by one, in any order" '[ $? -eq 0 ] && grep -q "^imported 2 ranks, 2 steps, 32 actions" "$WORK/out"'
"$DPSTUDIO" import-trace "$T/kineto-gpu" --project "$PROJECT" --variant 1f1b-2mb -o "$WORK/g.json" >"$WORK/out" 2>"$WORK/err"
check "Kineto traces with gpu_user_annotation spans are timed by them" '[ $? -eq 0 ] && grep -q "timing: 8 compute actions from GPU-side spans" "$WORK/err" && grep -q "makespan 1.06 ms" "$WORK/out"'

# --map: the hand-made DualPipeV trace with its PP: prefix renamed.
sed 's/"PP:/"step-/' "$T/kineto-split-overlap/rank0.json" >"$WORK/rank0.json"
sed 's/"PP:/"step-/' "$T/kineto-split-overlap/rank1.json" >"$WORK/rank1.json"
"$DPSTUDIO" import-trace "$WORK/rank0.json" "$WORK/rank1.json" --map 'step-(.*)=$1' --project "$PROJECT" -o "$WORK/map.json" >"$WORK/out" 2>"$WORK/err"
check "--map REGEX=ACTION-TEMPLATE names other schemes" '[ $? -eq 0 ] && grep -q "^imported 2 ranks, 1 step, 31 actions" "$WORK/out" || { cat "$WORK/err" >&2; false; }'

# --- broken traces: exit 1, the file and the reason, nothing written (an older output stays) -----------------
echo "older" >"$WORK/keep.json"
broken() { # name, expected text on stderr
    "$DPSTUDIO" import-trace "$T/broken/$1" --project "$PROJECT" --variant 1f1b-2mb -o "$WORK/keep.json" >/dev/null 2>"$WORK/err"
    local rc=$? expect="$2"
    check "broken/$1: exit 1 and '$2'" '[ $rc -eq 1 ] && grep -qF -- "$expect" "$WORK/err" || { echo "rc=$rc"; cat "$WORK/err" >&2; false; }'
    check "broken/$1: nothing written" '[ "$(cat "$WORK/keep.json")" = older ] && [ -z "$(ls "$WORK" | grep "keep.json.")" ]'
}
broken truncated "broken/truncated/rank0.json: not valid JSON"
broken missing-rank "rank 1: missing (no trace file of rank 1 among the 1 given; 2 ranks expected by variant '1f1b-2mb')"
broken duplicate "broken/duplicate/rank0.json (rank 0), step 0: compute action 0F1 appears 2 times"
broken mismatch "broken/mismatch/rank0.json (rank 0), step 0: 0F5 is not in the schedule of rank 0 (variant '1f1b-2mb')"
broken no-rank "broken/no-rank/trace.json: no rank: the trace has no distributedInfo.rank and its name has no rank<N>"

"$DPSTUDIO" import-trace "$WORK/none.json" -o "$WORK/x.json" >/dev/null 2>"$WORK/err"
check "a trace that does not exist: exit 2" '[ $? -eq 2 ] && grep -q "none.json: cannot read" "$WORK/err"'
"$DPSTUDIO" import-trace "$T/kineto-gpu" --variant 1f1b -o "$WORK/x.json" >/dev/null 2>&1
check "--variant without --project: exit 2" '[ $? -eq 2 ]'
"$DPSTUDIO" import-trace "$T/kineto-gpu" --map 'no-equals' -o "$WORK/x.json" >/dev/null 2>"$WORK/err"
check "a --map without '=': exit 1 naming it" '[ $? -eq 1 ] && grep -q "\-\-map .no-equals.: must be REGEX=ACTION-TEMPLATE" "$WORK/err"'

finish "all checks passed"
