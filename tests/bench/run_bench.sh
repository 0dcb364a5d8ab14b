#!/usr/bin/env bash
# Benchmark of `dpstudio run` and of the prediction for this machine (not part of ctest). Prints
#  1. executor overhead per action: a DualPipeV run of a model so small that compute is negligible, where
#     every µs a rank spends outside waiting for data (busy time of each slot plus the gaps between slots)
#     is the executor's own cost (an upper bound: the tiny GEMMs, GELU and message posting are included);
#  2. fidelity (measured against predicted step time), for two configurations:
#       machine  the default project's machine-sized variant (as scripts/main-job.sh adds it: DualPipeV on as
#                many ranks as there are cores, 2 to 8, 20 microbatches of the 16-layer model);
#       h1024    DualPipeV on 2 ranks, 4 stages of one block each, hidden 1024, FFN 4096, sequence 32,
#                microbatch 1, 20 microbatches (a reference Python implementation takes about 1.28 s a step);
#     each run twice (median of BENCH_STEPS ≥ 5 measured steps each, one thread per rank):
#       probed      the first run against the prediction for this machine, uncalibrated (its CPU profile:
#                   `dpstudio devices --probe`, probed once and cached), goal within 15 %;
#       calibrated  the second run against the prediction with the costs calibrated on the first, goal
#                   within 5 %;
#     with the largest per-rank idle error (the idle of a rank is the makespan less its busy time: small
#     numbers, so its relative error is large; the absolute error is shown too) and the largest per-rank
#     memory error in bytes (predicted peak against the backend's counted peak; goal 0 bytes);
#  3. the step time of h1024 against the reference Python figure.
# Errors are (measured − predicted) ÷ predicted, as `dpstudio run` reports them. The machine's load average
# is printed: other work on the machine slows the runs, not the probe's medians.
# Usage: run_bench.sh DPSTUDIO [WORKDIR]   (WORKDIR keeps the projects, measured traces, costs and reports)
#        run_bench.sh --table DPSTUDIO [WORKDIR]   the per-rank idle and calibration table instead (idle_table.sh)
set -euo pipefail
if [ "${1:-}" = "--table" ]; then
    shift
    exec "$(dirname "$(realpath "$0")")/idle_table.sh" "$@"
fi
DPSTUDIO=$(realpath "$1")
WORK=${2:-$(mktemp -d "${TMPDIR:-/tmp}/dps-bench-XXXXXX")}
mkdir -p "$WORK"
STEPS=${BENCH_STEPS:-5}
[ "$STEPS" -ge 5 ] || { echo "BENCH_STEPS must be at least 5 (a median of 5 steps)" >&2; exit 2; }

project() { # name layers hidden ffn seq microbatches
    cat >"$WORK/$1.dpstudio.json" <<JSON
{
  "format_version": 1,
  "name": "bench $1",
  "seed": 233,
  "model": {"layers": $2, "hidden": $3, "ffn": $4, "seq_len": $5, "microbatch_size": 1, "dtype": "fp32"},
  "variants": [{"name": "dualpipev", "kind": "dualpipev", "ranks": 2, "microbatches": $6, "stages_per_rank": 2,
                "layer_partition": [1, 1, 1, 1]}],
  "active_variant": "dualpipev"
}
JSON
}

# The default project with the main job's machine-sized variant, made the active one.
machine_project() {
    local cores ranks
    cores=$(nproc 2>/dev/null || echo 2)
    ranks=$((cores < 2 ? 2 : cores > 8 ? 8 : cores))
    "$DPSTUDIO" init -o "$WORK/machine.dpstudio.json" --force >/dev/null
    python3 - "$WORK/machine.dpstudio.json" "$ranks" <<'PY'
import json, sys
path, ranks = sys.argv[1], int(sys.argv[2])
project = json.load(open(path))
project["variants"].append({"name": "this-machine", "kind": "dualpipev", "ranks": ranks, "microbatches": 20,
                            "stages_per_rank": 2})
project["active_variant"] = "this-machine"
json.dump(project, open(path, "w"), indent=2)
PY
}

run() { # name output [dpstudio run flags...]
    local name=$1 output=$2
    shift 2
    echo "running $name → $output $*" >&2
    "$DPSTUDIO" run "$WORK/$name.dpstudio.json" -o "$WORK/$output" --steps "$STEPS" --warmup 1 --threads 1 "$@" \
        >"$WORK/$output.out" 2>"$WORK/$output.err" || { cat "$WORK/$output.err" >&2; exit 1; }
}

# The predictions the runs are compared with, as JSON. Made after the run, from the cached CPU profile that run left
# (it probes again when its check finds more than 15 % of drift, docs/cpu-profile.md); unlike the run's own report
# they are not scaled to the speed the run's check found (idle_table.sh reads the reports instead).
predict() { # name output [simulate flags...]
    local name=$1 output=$2
    shift 2
    "$DPSTUDIO" simulate "$WORK/$name.dpstudio.json" --this-machine --json "$@" >"$WORK/$output" 2>>"$WORK/probe.err"
}

project tiny 4 8 32 1 20
project h1024 4 1024 4096 32 20
machine_project
uptime >"$WORK/load-before.txt"
run tiny tiny.json
for config in machine h1024; do
    run "$config" "$config.probed.json"
    predict "$config" "$config.probed.prediction.json"
    # calibrate refuses a fit that does not reproduce the run within its steps' spread: then no calibrated run
    if "$DPSTUDIO" calibrate "$WORK/$config.probed.json" -o "$WORK/$config.costs.json" >"$WORK/$config.costs.txt" 2>&1
    then
        run "$config" "$config.calibrated.json" --costs "$WORK/$config.costs.json"
        predict "$config" "$config.calibrated.prediction.json" --costs "$WORK/$config.costs.json"
    fi
done
uptime >"$WORK/load-after.txt"

python3 - "$WORK" <<'PY'
import json, os, statistics, sys
work = sys.argv[1]
load = lambda name: json.load(open(f"{work}/{name}"))

def per_action(m):
    """(busy per slot, gap before each slot) over all measured steps and ranks, µs."""
    busy, gaps = [], []
    for rank in m["ranks"]:
        last = {}
        for a in rank["actions"]:
            busy.append(a["end_us"] - a["start_us"] - a["wait_us"])
            gaps.append(a["start_us"] - last.get(a["step"], 0.0))
            last[a["step"]] = a["end_us"]
    return busy, gaps

def median_makespan(m):
    return next(s["makespan_us"] for s in m["steps"] if s["step"] == m["median_step"])

def measured_ranks(m):
    """rank → (median over the steps of the step's makespan − the rank's busy time, peak memory over all steps),
    as `dpstudio run` reports them."""
    spans, out = {s["step"]: s["makespan_us"] for s in m["steps"]}, {}
    for rank in m["ranks"]:
        busy = {step: 0.0 for step in spans}
        for a in rank["actions"]:
            busy[a["step"]] = busy.get(a["step"], 0.0) + a["end_us"] - a["start_us"] - a["wait_us"]
        idle = statistics.median(spans[s] - b for s, b in busy.items() if s in spans)
        out[rank["rank"]] = (idle, max(a["memory_bytes"] for a in rank["actions"]))
    return out

def fidelity(config, kind):
    p, m = load(f"{config}.{kind}.prediction.json"), load(f"{config}.{kind}.json")
    meas, pred = median_makespan(m), p["makespan_us"]
    idle_rel, idle_abs, mem = 0.0, 0.0, 0
    for r, (idle, peak) in measured_ranks(m).items():
        pr = p["ranks"][r]
        d = idle - pr["idle_us"]
        if abs(d) >= abs(idle_abs):
            idle_abs = d
            idle_rel = d / pr["idle_us"] if pr["idle_us"] > 0 else float("inf")
        if abs(peak - pr["peak_memory_bytes"]) >= abs(mem):
            mem = peak - pr["peak_memory_bytes"]
    return meas, pred, (meas - pred) / pred * 100, idle_rel * 100, idle_abs, mem

ok = lambda good: "yes" if good else "NO"
tiny = load("tiny.json")
busy, gaps = per_action(tiny)
overhead = statistics.mean(busy) + statistics.mean(gaps)
rows = [
    ("executor overhead per action (tiny model: busy + gap, mean)", f"{overhead:.1f} µs", "< 20 µs", ok(overhead < 20)),
    ("  of which busy (median) / gap between actions (mean)", f"{statistics.median(busy):.1f} / {statistics.mean(gaps):.1f} µs", "", ""),
]
names = {"machine": "default project, this-machine variant", "h1024": "DualPipeV 2 ranks, h1024 s32 mb1"}
for config in ("machine", "h1024"):
    ranks = len(load(f"{config}.probed.json")["ranks"])
    for kind, goal in (("probed", 15), ("calibrated", 5)):
        if not os.path.exists(f"{work}/{config}.{kind}.json"):
            rows.append((f"{names[config]} ({ranks} ranks): {kind}", "calibration refused", f"within {goal} %", "NO"))
            continue
        meas, pred, err, idle_rel, idle_abs, mem = fidelity(config, kind)
        label = f"{names[config]} ({ranks} ranks): {kind}"
        rows.append((f"{label}: makespan measured / predicted", f"{meas / 1e6:.3f} / {pred / 1e6:.3f} s ({err:+.1f} %)",
                     f"within {goal} %", ok(abs(err) <= goal)))
        rows.append((f"  largest per-rank idle error", f"{idle_rel:+.0f} % ({idle_abs / 1e3:+.1f} ms)", "", ""))
        rows.append((f"  largest per-rank memory error", f"{mem:+.0f} B", "0 B", ok(mem == 0)))
step = median_makespan(load("h1024.probed.json")) / 1e6
rows.append(("step time, DualPipeV 2 ranks, h1024 s32 mb1, 20 mbs, 1 thread", f"{step:.3f} s", "< 1.28 s (Python)", ok(step < 1.28)))
m = load("h1024.probed.json")
before, after = (open(f"{work}/load-{w}.txt").read().split("load average:")[1].strip() for w in ("before", "after"))
profile = load("h1024.probed.prediction.json")["costs"]
print(f"host: {m.get('host')}, cpu: {m.get('cpu')}, {m.get('mpi_version')}, backend {m.get('backend')} ({m.get('device')}), "
      f"{len(m['steps'])} measured steps per run, {os.cpu_count()} cores; load average before {before}, after {after}")
print(f"predicted for {profile}")
w = max(len(r[0]) for r in rows)
v = max(len(r[1]) for r in rows)
print(f"| {'metric'.ljust(w)} | {'value'.rjust(v)} | {'target':>17} | met |")
print(f"|{'-' * (w + 2)}|{'-' * (v + 2)}|{'-' * 19}|-----|")
for name, value, target, met in rows:
    print(f"| {name.ljust(w)} | {value.rjust(v)} | {target:>17} | {met:>3} |")
PY
echo "files: $WORK" >&2
