#!/usr/bin/env bash
# The per-rank idle and calibration table of docs/running.md ("Run-to-run variation"), rerun: for the main job's
# machine-sized variant (the default project's DualPipeV on as many ranks as there are cores, 2 to 8) and for
# DualPipeV on 2 ranks of 4 blocks, hidden 1024, FFN 4096, sequence 32, microbatch 1, 20 microbatches:
#   run 1   against the prediction for this machine (its probed CPU profile), uncalibrated;
#   then    `dpstudio calibrate` on run 1 (it may refuse the fit: the reason is printed);
#   run 2   against the prediction with those costs (`--costs`), when the fit was accepted;
#   run 3   a fresh run against the uncalibrated prediction again.
# Each run measures BENCH_STEPS ≥ 5 steps after one warm-up step, one BLAS thread per rank. Per rank, idle is
# the median over the steps of (the step's makespan − the rank's Σ end − start − wait), as `dpstudio run`
# reports it; the makespan is the median step's, with the steps' min–max. Beside each run, /proc/loadavg before
# and after it: other work on the machine slows the runs (not the probe), so take the table on a quiet machine.
# Usage: run_bench.sh --table DPSTUDIO [WORKDIR]   (or idle_table.sh DPSTUDIO [WORKDIR])
set -euo pipefail
DPSTUDIO=$(realpath "$1")
WORK=${2:-$(mktemp -d "${TMPDIR:-/tmp}/dps-idle-table-XXXXXX")}
mkdir -p "$WORK"
STEPS=${BENCH_STEPS:-5}
[ "$STEPS" -ge 5 ] || { echo "BENCH_STEPS must be at least 5 (a median of 5 steps)" >&2; exit 2; }

"$DPSTUDIO" init -o "$WORK/h1024.dpstudio.json" --force --schedule dualpipev --ranks 2 --layers 4 --hidden 1024 \
    --seq-len 32 --microbatch-size 1 --microbatches 20 >/dev/null
"$DPSTUDIO" init -o "$WORK/machine.dpstudio.json" --force >/dev/null
python3 - "$WORK/machine.dpstudio.json" <<'PY'
import json, os, sys
path = sys.argv[1]
ranks = min(8, max(2, os.cpu_count() or 2))
project = json.load(open(path))
project["variants"].append({"name": "this-machine", "kind": "dualpipev", "ranks": ranks, "microbatches": 20,
                            "stages_per_rank": 2})
project["active_variant"] = "this-machine"
json.dump(project, open(path, "w"), indent=2)
PY

# run NAME OUTPUT [flags]: one measured run, its load average before and after beside it.
run() {
    local name=$1 output=$2
    shift 2
    echo "running $name → $output $*" >&2
    cut -d' ' -f1-3 /proc/loadavg >"$WORK/$output.load"
    "$DPSTUDIO" run "$WORK/$name.dpstudio.json" -o "$WORK/$output" --steps "$STEPS" --warmup 1 --threads 1 "$@" \
        >"$WORK/$output.out" 2>"$WORK/$output.err" || { cat "$WORK/$output.err" >&2; exit 1; }
    cut -d' ' -f1-3 /proc/loadavg >>"$WORK/$output.load"
}

# The prediction of each row is the run's own, from its report (OUTPUT.out): the run checks the cached profile first
# and predicts at the speed it finds (docs/cpu-profile.md), which a later `simulate --this-machine` would not see.
for config in machine h1024; do
    run "$config" "$config.run1.json"
    if "$DPSTUDIO" calibrate "$WORK/$config.run1.json" -o "$WORK/$config.costs.json" >"$WORK/$config.costs.txt" 2>&1; then
        run "$config" "$config.run2.json" --costs "$WORK/$config.costs.json"
    fi
    run "$config" "$config.run3.json"
done

python3 - "$WORK" <<'PY'
import json, os, statistics, sys
work = sys.argv[1]
load = lambda name: json.load(open(os.path.join(work, name)))

def measured(m):
    """(median step makespan, min, max, {rank: median idle over the steps}) in µs."""
    span = {s["step"]: s["makespan_us"] for s in m["steps"]}
    idle = {}
    for rank in m["ranks"]:
        busy = {step: 0.0 for step in span}
        for a in rank["actions"]:
            busy[a["step"]] = busy.get(a["step"], 0.0) + a["end_us"] - a["start_us"] - a["wait_us"]
        idle[rank["rank"]] = statistics.median(span[s] - b for s, b in busy.items() if s in span)
    median = next(s["makespan_us"] for s in m["steps"] if s["step"] == m["median_step"])
    return median, min(span.values()), max(span.values()), idle

def reported(output):
    """The run's report: {"makespan": µs, rank: idle µs} from its predicted column ("makespan  17.451 s  …")."""
    scale = {"s": 1e6, "ms": 1e3, "µs": 1.0, "us": 1.0}
    values = {}
    for line in open(os.path.join(work, output + ".out")):
        words = line.split()
        if len(words) >= 3 and words[0] == "makespan":
            values["makespan"] = float(words[1]) * scale[words[2]]
        elif len(words) >= 5 and words[0] == "rank" and words[2] == "idle":
            values[int(words[1])] = float(words[3]) * scale[words[4]]
    return values

ms = lambda us: f"{us / 1e3:.2f} ms"
rows = []
names = {"machine": "main job (this-machine variant)", "h1024": "DualPipeV 2 ranks, 4 layers h1024 s32 mb1 × 20"}
for config in ("machine", "h1024"):
    for run, label in (("run1", "run 1"), ("run2", "run 2, calibrated on run 1"), ("run3", "run 3, fresh")):
        if not os.path.exists(os.path.join(work, f"{config}.{run}.json")):
            text = open(os.path.join(work, f"{config}.costs.txt")).read().strip().splitlines()
            rows.append((f"{names[config]}, {label}", "calibration refused", text[-1] if text else "", "", "", ""))
            continue
        prediction = reported(f"{config}.{run}.json")
        median, low, high, idle = measured(load(f"{config}.{run}.json"))
        loads = " → ".join(l.strip() for l in open(os.path.join(work, f"{config}.{run}.json.load")))
        p = prediction["makespan"]
        rows.append((f"{names[config]}, {label}: makespan", ms(p), f"{ms(median)} ({ms(low)}–{ms(high)})",
                     f"{(median - p) / p * 100:+.1f} %", "", loads))
        for r, value in sorted(idle.items()):
            pi = prediction[r]
            rows.append((f"  rank {r} idle", ms(pi), ms(value), f"{(value - pi) / pi * 100:+.1f} %" if pi else "n/a",
                         f"{(value - pi) / median * 100:+.1f} %", ""))
print(f"{os.cpu_count()} cores; {os.environ.get('BENCH_STEPS', '5')} measured steps per run; idle: median over the "
      "steps; load: /proc/loadavg (1, 5, 15 min) before → after the run")
print("| run | predicted | measured (steps min–max) | error | idle error ÷ makespan | load |")
print("|---|---|---|---|---|---|")
for row in rows:
    print("| " + " | ".join(row) + " |")
PY
echo "files: $WORK" >&2
