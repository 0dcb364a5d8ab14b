#!/usr/bin/env bash
# Fuzzes one parser with clang's libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer:
#   scripts/fuzz.sh TARGET SECONDS      TARGET: schedule_csv | project | costs | measured
# The corpus is tests/fuzz/TARGET/ (new interesting inputs are added, then the folder is minimised); a crasher is written there
# too, as crash-<sha1>, so CI replays it from then on. Builds into build-fuzz/ (clang, engine only, no Qt,
# no CUDA). Installs clang from Debian when it is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-}
seconds=${2:-}
case "$target" in
  schedule_csv|project|costs|measured) ;;
  *) echo "usage: scripts/fuzz.sh schedule_csv|project|costs|measured SECONDS" >&2; exit 2 ;;
esac
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: SECONDS must be a whole number ≥ 1 (libFuzzer reads 0 as no limit), got '$seconds'" >&2; exit 2; }
if ! command -v clang++ >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends clang
fi
build="$root/build-fuzz"
mkdir -p "$build"
log="$build/configure.log"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDPS_BUILD_GUI=OFF -DDPS_WITH_CUDA=OFF \
  -DDPS_BUILD_BENCHMARKS=OFF -DDPS_LIBFUZZER=ON \
  "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" >"$log" 2>&1 \
  || { cat "$log" >&2; exit 1; }
cmake --build "$build" --target "fuzz_$target"
corpus="$root/tests/fuzz/$target"
mkdir -p "$corpus"
echo "fuzz.sh: fuzzing $target for $seconds s with corpus $corpus" >&2
status=0
"$build/bin/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$corpus/" -print_final_stats=1 "$corpus" || status=$?
# Keep the committed corpus small: the inputs that together cover what the whole corpus covers, plus the
# seeds and every crasher (kept by name).
minimal=$(mktemp -d)
trap 'rm -rf "$minimal" "$minimal".artifact-*' EXIT
"$build/bin/fuzz_$target" -set_cover_merge=1 -artifact_prefix="$minimal.artifact-" "$minimal" "$corpus" >/dev/null 2>&1 || true
if [ -n "$(ls -A "$minimal")" ]; then
  find "$corpus" -maxdepth 1 -type f ! -name 'seed-*' ! -name 'crash-*' ! -name 'timeout-*' ! -name 'oom-*' -delete
  cp "$minimal"/* "$corpus"/
fi
echo "fuzz.sh: $target: corpus now $(ls "$corpus" | wc -l) files; fuzzer exit status $status" >&2
exit $status
