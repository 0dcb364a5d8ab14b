#!/usr/bin/env bash
# The main job on the embedded default project.
# With a display (and the GUI built) it opens the designer on the default project. Without one it runs the
# default project headless: its copy in the output folder gets a third variant sized for this machine
# ("this-machine": DualPipeV on as many ranks as there are cores, 2 to 8), made the active one; it generates
# and validates the schedules, compares the variants for the project's devices and for this machine (the CPU
# profile `dpstudio devices --probe` measures, probed once and cached; ranks beyond the cores share them),
# simulates the active one for this machine, runs it for real on this machine's CPUs through mpirun (the
# report compares it with that prediction), and writes everything (CSV, traces, comparisons, measured run,
# validated config, overlay chart) to the folder, printing where.
# Environment: DPS_BUILD_DIR (default build/), DPS_OUT (default out/), DPS_HEADLESS=1 forces headless,
# DPS_RUN_STEPS (default 3).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${DPS_BUILD_DIR:-$here/build}
dp=$build/bin/dpstudio
studio=$build/bin/dualpipe-studio
if [ ! -x "$dp" ]; then
  echo "main job: $dp not found: build first (cmake --preset default && cmake --build --preset default)" >&2
  exit 2
fi
if [ -z "${DPS_HEADLESS:-}" ] && [ -x "$studio" ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
  exec "$studio"
fi

out=${DPS_OUT:-$here/out}
mkdir -p "$out"
project=$out/default.dpstudio.json
step() { printf '\n== %s\n' "$*"; }

# DualPipeV on as many ranks as this machine has cores: 2 stages per rank, so at most 8 ranks for 16 layers.
cores=$(nproc 2>/dev/null || echo 2)
ranks=$((cores < 2 ? 2 : cores > 8 ? 8 : cores))
step "default project -> $project, with a variant for this machine (DualPipeV on $ranks ranks, $cores cores)"
"$dp" init -o "$project" --force
python3 - "$project" "$ranks" <<'PY'
import json, sys
path, ranks = sys.argv[1], int(sys.argv[2])
project = json.load(open(path))
project["variants"].append({"name": "this-machine", "kind": "dualpipev", "ranks": ranks, "microbatches": 20,
                            "stages_per_rank": 2})
project["active_variant"] = "this-machine"
with open(path, "w") as f:
    json.dump(project, f, indent=2)
    f.write("\n")
PY
step "generate + validate the variants (PyTorch schedule CSV)"
"$dp" generate --schedule dualpipe --ranks 8 --microbatches 20 -o "$out/dualpipe_pp8_mb20.csv"
"$dp" generate --schedule dualpipev --ranks 4 --microbatches 20 -o "$out/dualpipev_pp4_mb20.csv"
"$dp" generate --schedule dualpipev --ranks "$ranks" --microbatches 20 -o "$out/dualpipev_pp${ranks}_mb20.csv"
"$dp" validate "$project"
step "compare the variants on the project's devices"
"$dp" compare "$project" | tee "$out/comparison.txt"
"$dp" compare "$project" --json >"$out/comparison.json"
step "compare them on this machine (its CPU profile: probed once, about 15 s, then cached; $cores cores shared)"
"$dp" compare "$project" --this-machine | tee "$out/comparison-this-machine.txt"
"$dp" compare "$project" --this-machine --json >"$out/comparison-this-machine.json"
step "simulate the active variant (this-machine) for this machine"
"$dp" simulate "$project" --this-machine --trace "$out/predicted.trace.json" | tee "$out/prediction.txt"
step "run it for real on this machine (mpirun, CPU backend) against that prediction"
run_ok=1
if "$dp" run "$project" -o "$out/measured.json" --trace-dir "$out/traces" --steps "${DPS_RUN_STEPS:-3}" --warmup 1 \
    | tee "$out/run.txt"; then
  "$dp" calibrate "$out/measured.json" -o "$out/costs.json"
else
  run_ok=0
  echo "main job: the run did not succeed (see above); continuing with the prediction only" >&2
fi
step "export the validated config"
if [ $run_ok -eq 1 ]; then
  "$dp" export "$project" --format validated-config --measured "$out/measured.json" -o "$out/validated-config.json" || true
  if [ -x "$studio" ]; then
    QT_QPA_PLATFORM=offscreen "$studio" --screenshot "$out/overlay.png" --measured "$out/measured.json" "$project" \
      || echo "main job: overlay screenshot failed" >&2
  fi
else
  "$dp" export "$project" --format validated-config -o "$out/validated-config.json" || true
fi
"$dp" export "$project" --format torch-csv -o "$out/active.csv" 2>/dev/null
if [ -x "$studio" ]; then
  QT_QPA_PLATFORM=offscreen "$studio" --compare-screenshot "$out/comparison.png" "$project" \
    || echo "main job: comparison screenshot failed" >&2
fi
printf '\nmain job: results in %s\n' "$out"
ls -1 "$out"
