#!/bin/sh
# End-to-end checks of `dpstudio analyze`: the critical path of a measured step, its share per rank,
# stragglers, --compare with another run, the prediction's path from the recorded project, and bad input. The
# hand-made run is 1F1B on 2 ranks × 2 microbatches (F 1 µs, B 2 µs, messages 0.5 µs; tests/sim/test_criticalpath.cpp
# works it out by hand): path 0F0 → 1F0 → 1B0 → 1F1 → 1B1 → 0B1, 10 µs, rank 0 3 µs, rank 1 6 µs, transfers 1 µs.
# Usage: analyze_e2e.sh /path/to/dpstudio DATA_DIR   (needs python3 for JSON)
set -u
DPS="$1"
DATA="$2"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$0")/lib.sh"

# The hand-made run: 3 identical steps; each rank computes 6 µs a step (waits excluded), so neither straggles.
python3 - "$DATA/measured/tiny-dualpipev.measured.json" "$WORK/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# (action, start, end, wait) per rank: each slot starts when its rank is free and waits for its inputs.
rows = {
    0: [("0F0", 0, 1, 0), ("0F1", 1, 2, 0), ("0B0", 2, 7, 3), ("0B1", 7, 10, 1)],
    1: [("1F0", 0, 2.5, 1.5), ("1B0", 2.5, 4.5, 0), ("1F1", 4.5, 5.5, 0), ("1B1", 5.5, 7.5, 0)],
}
ranks = []
for r, slots in rows.items():
    actions = []
    for step in range(3):
        for a, s, e, w in slots:
            actions.append({"action": a, "step": step, "start_us": s, "end_us": e, "wait_us": w, "compute_us": e - s - w,
                            "bytes_sent": 0, "bytes_received": 0, "memory_bytes": 0, "activation_bytes": 0})
    ranks.append({"rank": r, "actions": actions})
d["ranks"] = ranks
d["steps"] = [{"step": s, "makespan_us": 10.0} for s in range(3)]
d["median_step"] = 1
d.pop("project", None)
d["variant"] = "1f1b"
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY

expect 0 "analyze text" -- "$DPS" analyze "$WORK/run.json"
contains "$WORK/out" "Critical path of measured step 1 (the median): 10 µs (6 actions, 2 transfers)" "analyze text"
contains "$WORK/out" "Stragglers (median compute per step more than 10 % above the median of the other ranks): none" \
    "analyze text"

expect 0 "analyze json" -- "$DPS" analyze "$WORK/run.json" --json
check_py "analyze json values" '
import json, sys
d = json.load(open(sys.argv[1]))
p = d["critical_path"]
assert p["length_us"] == 10, p["length_us"]
assert [r["us"] for r in p["ranks"]] == [3, 6], p["ranks"]
assert p["transfer_us"] == 1 and p["transfer_share"] == 0.1, p
acts = [e["action"] for e in p["elements"] if e["kind"] == "action"]
assert acts == ["0F0", "1F0", "1B0", "1F1", "1B1", "0B1"], acts
s = d["stragglers"]
# compute per step (busy = end - start - wait): rank 0 1 + 1 + 2 + 2 = 6, rank 1 1 + 2 + 1 + 2 = 6
assert s["stragglers"] == [], s["stragglers"]
assert [r["compute_per_step"]["median_us"] for r in s["ranks"]] == [6, 6], s["ranks"]
assert s["ranks"][1]["excess"] == 0 and s["spread"] == "p10-p90", s
' "$WORK/out"

expect 1 "analyze a step the run lacks" -- "$DPS" analyze "$WORK/run.json" --step 9
contains "$WORK/err" "--step: the run has no measured step 9" "analyze --step"
expect 2 "analyze a missing file" -- "$DPS" analyze "$WORK/missing.json"
expect 2 "analyze a negative threshold" -- "$DPS" analyze "$WORK/run.json" --threshold -1

# --compare: the same run with 0B1 (rank 0) 0.5 µs later and 0.5 µs longer in every step.
python3 - "$WORK/run.json" "$WORK/other.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for a in d["ranks"][0]["actions"]:
    if a["action"] == "0B1":
        a["start_us"] += 0.5
        a["end_us"] += 1.0
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY
expect 0 "analyze --compare" -- "$DPS" analyze "$WORK/run.json" --compare "$WORK/other.json" --json
check_py "compare json" '
import json, sys
d = json.load(open(sys.argv[1]))["diff"]
assert d["makespan_us"] == 10 and d["other_makespan_us"] == 11, d
assert d["only_in_this"] == 0 and d["only_in_other"] == 0, d
a = d["actions"][0]
assert (a["action"], a["rank"], a["start_us"], a["other_start_us"], a["duration_us"], a["other_duration_us"]) \
    == ("0B1", 0, 7, 7.5, 3, 3.5), a
assert all(x["start_us"] == x["other_start_us"] for x in d["actions"][1:]), d["actions"]
' "$WORK/out"
expect 0 "analyze --compare text" -- "$DPS" analyze "$WORK/run.json" --compare "$WORK/other.json"
contains "$WORK/out" "step 1: makespan 11 µs against 10 µs (+1 µs)" "analyze --compare text"

# The recorded project gives the prediction's critical path too.
expect 0 "analyze with the recorded project" -- "$DPS" analyze "$DATA/measured/tiny-dualpipev.measured.json" --json
check_py "predicted path" '
import json, sys
d = json.load(open(sys.argv[1]))
p = d["predicted_critical_path"]
assert p["variant"] == "dualpipev", p["variant"]
assert abs(sum(r["us"] for r in p["ranks"]) + p["transfer_us"] - p["length_us"]) < 1e-6, p
' "$WORK/out"
[ -s "$WORK/err" ] && fail "analyze of the recorded project's own run warned: $(cat "$WORK/err")"

# A run held against another schedule is analysed, with a warning naming what differs.
expect 0 "analyze against another variant" -- "$DPS" analyze "$DATA/measured/tiny-dualpipev.measured.json" \
    --project "$DATA/projects/runtime_small.dpstudio.json" --variant dualpipe
contains "$WORK/err" "is not a run of variant dualpipe of $DATA/projects/runtime_small.dpstudio.json: the run has 2 ranks, the variant 4" \
    "the mismatch is named"
expect 0 "analyze --compare another schedule" -- "$DPS" analyze "$WORK/run.json" \
    --compare "$DATA/measured/tiny-dualpipev.measured.json"
contains "$WORK/err" "ran another schedule" "a diff of two schedules warns"

finish "analyze_e2e: all checks passed"
