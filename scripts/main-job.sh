#!/usr/bin/env bash
# The main job on the embedded default project.
# With a display (and the GUI built) it opens the designer on the default project. Without one it runs the
# default project headless: generate and validate both variants, compare them, simulate the active one, run
# it for real on this machine through mpirun, and write everything (CSV, traces, comparison, measured run,
# validated config, overlay chart) to a folder, printing where.
# Environment: DPS_BUILD_DIR (default build/), DPS_OUT (default out/), DPS_HEADLESS=1 forces headless,
# DPS_RUN_STEPS (default 2).
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

step "default project -> $project"
"$dp" init -o "$project" --force
step "generate + validate both variants (PyTorch schedule CSV)"
"$dp" generate --schedule dualpipe --ranks 8 --microbatches 20 -o "$out/dualpipe_pp8_mb20.csv"
"$dp" generate --schedule dualpipev --ranks 4 --microbatches 20 -o "$out/dualpipev_pp4_mb20.csv"
"$dp" validate "$project"
step "compare DualPipe against DualPipeV"
"$dp" compare "$project" | tee "$out/comparison.txt"
"$dp" compare "$project" --json >"$out/comparison.json"
step "simulate the active variant"
"$dp" simulate "$project" --trace "$out/predicted.trace.json" | tee "$out/prediction.txt"
step "run the active variant for real on this machine (mpirun, CPU backend)"
run_ok=1
if "$dp" run "$project" -o "$out/measured.json" --trace-dir "$out/traces" --steps "${DPS_RUN_STEPS:-2}" --warmup 1 \
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
