#!/usr/bin/env bash
# Benchmark of `dpstudio run` (not part of ctest): prints a table of
#  1. executor overhead per action: a DualPipeV run of a model so small that compute is negligible, where
#     every µs a rank spends outside waiting for data (busy time of each slot plus the gaps between slots)
#     is the executor's own cost (an upper bound: the tiny GEMMs, GELU and message posting are included);
#     and, for the bench model, the mean gap between consecutive actions (time in no action at all);
#  2. DualPipeV on 2 ranks: measured makespan against the calibrated prediction (calibrate on one run,
#     predict with `simulate --costs`, compare with a second run; target within 10 %);
#  3. step time of DualPipeV on 2 ranks, 4 stages of one block each, hidden 1024, sequence 32, microbatch 1,
#     20 microbatches, one thread per rank (a reference Python implementation takes about 1.28 s).
# Usage: run_bench.sh DPSTUDIO [WORKDIR]   (WORKDIR keeps the projects, measured traces and costs)
set -euo pipefail
DPSTUDIO=$(realpath "$1")
WORK=${2:-$(mktemp -d "${TMPDIR:-/tmp}/dps-bench-XXXXXX")}
mkdir -p "$WORK"
STEPS=${BENCH_STEPS:-5}

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

run() { # name output
    echo "running $1 → $2" >&2
    "$DPSTUDIO" run "$WORK/$1.dpstudio.json" -o "$WORK/$2" --steps "$STEPS" --warmup 1 --threads 1 \
        >"$WORK/$2.out" 2>"$WORK/$2.err" || { cat "$WORK/$2.err" >&2; exit 1; }
}

project tiny 4 8 32 1 20
project bench 4 1024 4096 32 20
run tiny tiny.json
run bench calibration.json
"$DPSTUDIO" calibrate "$WORK/calibration.json" -o "$WORK/costs.json" >"$WORK/costs.txt"
run bench measured.json
"$DPSTUDIO" simulate "$WORK/bench.dpstudio.json" --costs "$WORK/costs.json" --json >"$WORK/predicted.json"
"$DPSTUDIO" simulate "$WORK/bench.dpstudio.json" --json >"$WORK/predicted-model.json"

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

tiny, calib, measured = load("tiny.json"), load("calibration.json"), load("measured.json")
busy, gaps = per_action(tiny)
overhead = statistics.mean(busy) + statistics.mean(gaps)
_, bench_gaps = per_action(measured)
pred = load("predicted.json")["makespan_us"]
pred_model = load("predicted-model.json")["makespan_us"]
meas, meas_calib = median_makespan(measured), median_makespan(calib)
err = (pred - meas) / meas * 100
err_in = (pred - meas_calib) / meas_calib * 100
ok = lambda good: "yes" if good else "NO"
rows = [
    ("executor overhead per action (tiny model: busy + gap, mean)", f"{overhead:.1f} µs", "< 20 µs", ok(overhead < 20)),
    ("  of which busy (median) / gap between actions (mean)", f"{statistics.median(busy):.1f} / {statistics.mean(gaps):.1f} µs", "", ""),
    ("gap between actions, bench model (mean)", f"{statistics.mean(bench_gaps):.1f} µs", "", ""),
    ("DualPipeV 2 ranks: measured makespan (median step)", f"{meas / 1000:.1f} ms", "", ""),
    ("DualPipeV 2 ranks: calibrated prediction", f"{pred / 1000:.1f} ms ({err:+.1f} %)", "within 10 %", ok(abs(err) <= 10)),
    ("  same, against the calibration run itself", f"{meas_calib / 1000:.1f} ms ({err_in:+.1f} %)", "", ""),
    ("  prediction from the project's model (uncalibrated)", f"{pred_model / 1000:.1f} ms", "", ""),
    ("step time, DualPipeV 2 ranks, h1024 s32 mb1, 20 mbs, 1 thread", f"{meas / 1e6:.3f} s", "< 1.28 s (Python)", ok(meas / 1e6 < 1.28)),
]
load = open("/proc/loadavg").read().split()[:3]
print(f"host: {measured.get('host')}, cpu: {measured.get('cpu')}, {measured.get('mpi_version')}, backend {measured.get('backend')}, "
      f"{len(measured['steps'])} measured steps, load average {' '.join(load)} on {os.cpu_count()} cores")
w = max(len(r[0]) for r in rows)
print(f"| {'metric'.ljust(w)} | {'value':>22} | {'target':>17} | met |")
print(f"|{'-' * (w + 2)}|{'-' * 24}|{'-' * 19}|-----|")
for name, value, target, met in rows:
    print(f"| {name.ljust(w)} | {value:>22} | {target:>17} | {met:>3} |")
PY
echo "files: $WORK" >&2
