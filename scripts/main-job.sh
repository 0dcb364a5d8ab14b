#!/usr/bin/env bash
# The main job on the embedded default project: generate and validate both variants, then compare them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${DPS_BUILD_DIR:-$here/build}
dp=$build/bin/dpstudio
out=${DPS_OUT:-$here/out}
mkdir -p "$out"
"$dp" generate --schedule dualpipe --ranks 8 --microbatches 20 -o "$out/dualpipe_pp8_mb20.csv"
"$dp" generate --schedule dualpipev --ranks 4 --microbatches 20 -o "$out/dualpipev_pp4_mb20.csv"
"$dp" validate "$out/dualpipe_pp8_mb20.csv"
"$dp" validate "$out/dualpipev_pp4_mb20.csv"
"$dp" generate --schedule dualpipev --ranks 4 --microbatches 20 --format text
echo "main job: wrote $out"
