#!/usr/bin/env bash
# The GPU check of the CUDA backend. On a machine with a GPU, nvcc, CMake and ninja (no Qt, no Open MPI, no package
# registry needed: Open MPI, OpenBLAS, nlohmann-json and CLI11 come from .deps/debs, see
# scripts/fetch-gpu-deps.sh) it builds the engine alone and prints a table, each row with its threshold
# and PASS/FAIL:
#   1  each kernel and GEMM against the CPU backend on random data (fp32 TF32 off ≤ 1e-5, bf16 ≤ 1e-2)
#   2  DualPipeV on 2 ranks and DualPipe on 4 ranks sharing one GPU (MPI through host buffers), fp32 and
#      bf16, correctness check with the CUDA thresholds; the same over NCCL where there are enough GPUs
#   3  TFLOP/s of the model's GEMMs (hidden 4096, 4096 tokens) against a large square GEMM (≥ 70%)
#   4  a project's measured makespan against its calibrated prediction (within 10%), and the overlapped
#      slot's time against F + B (reported)
#
# Usage: scripts/gpu-check.sh [--dry-run] [--build-dir DIR] [--deps auto|system|prefix] [--budget SECONDS]
#   --dry-run     build everything this machine can and print every row as SKIPPED with the reason
#                 (CI: the script and dpstudio-gpucheck are exercised on every change)
#   --build-dir   build in (or reuse) DIR; default build-gpucheck, configured from the "gpucheck" preset
#   --deps        where Open MPI & co come from: system packages, the .deps prefix, or auto (system when
#                 mpirun and cblas.h are there)
#   --budget      seconds for the whole check (default 300); rows that would not fit are SKIPPED
# Exit status: 0 when no row failed, 1 when one did, 2 when the check could not run (bad flags, no build).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/gpu-deps-env.sh
source "$root/scripts/gpu-deps-env.sh"

dry_run=0
build_dir=""
deps=auto
budget=300
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --build-dir) build_dir=${2:?--build-dir needs a folder}; shift ;;
    --deps) deps=${2:?--deps needs auto, system or prefix}; shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
reuse_build=0
[ -n "$build_dir" ] && [ -f "$build_dir/CMakeCache.txt" ] && reuse_build=1
build_dir=$(realpath -m "${build_dir:-$root/build-gpucheck}")
work=$(mktemp -d "${TMPDIR:-/tmp}/dps-gpucheck.XXXXXX")
trap 'rm -rf "$work"' EXIT
rows=$work/rows.tsv
: >"$rows"
start=$(date +%s)

log() { echo "gpu-check: $*" >&2; }
elapsed() { echo $(( $(date +%s) - start )); }
remaining() { echo $(( budget - $(elapsed) )); }

# ------------------------------------------------------------------ the machine

gpu_count=0
gpu_names="none"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpu_count=$(nvidia-smi -L | grep -c '^GPU')
  gpu_names=$(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd, -)
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
describe_machine() {
  log "OS: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(ldd --version 2>/dev/null | head -1)"
  log "nvcc: $("$nvcc" --version 2>/dev/null | tail -1 || echo missing); $(cmake --version | head -1); ninja $(ninja --version 2>/dev/null || echo missing)"
  log "GPUs: $gpu_count ($gpu_names)"
}
describe_machine

# CUDA architectures: the first GPU's compute capability, else 90 (H100/H200) — `native` needs a GPU.
cuda_arch=90
if [ "$gpu_count" -gt 0 ]; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
  [ -n "$cap" ] && cuda_arch=$cap
fi

# ------------------------------------------------------------------ Open MPI, OpenBLAS, JSON, CLI11

have_system_deps() {
  command -v mpirun >/dev/null && command -v mpicxx >/dev/null \
    && { [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ]; } \
    && [ -d /usr/include/nlohmann ] && [ -d /usr/include/CLI ]
}
deps_args=()
setup_deps() {
  if [ "$deps" = system ] || { [ "$deps" = auto ] && have_system_deps; }; then
    log "dependencies: system packages"
    return 0
  fi
  local debs=$root/.deps/debs prefix=$build_dir/deps-root
  if ! compgen -G "$debs/*.deb" >/dev/null; then
    log "no Open MPI/OpenBLAS here and no packages in $debs: run scripts/fetch-gpu-deps.sh on a Debian 12 machine first"
    return 1
  fi
  if [ ! -e "$prefix/.unpacked" ]; then
    log "unpacking $(find "$debs" -name "*.deb" | wc -l) packages into $prefix"
    rm -rf "$prefix" && dps_unpack_debs "$debs" "$prefix" && touch "$prefix/.unpacked" || return 1
  fi
  local need have
  need=$(dps_glibc_needed "$prefix")
  have=$(ldd --version 2>/dev/null | head -1 | grep -o '[0-9]\+\.[0-9]\+$')
  if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    log "the packages (Debian 12) need glibc $need, this machine has $have: they cannot run here"
    return 1
  fi
  dps_deps_env "$prefix"
  deps_args=("${DPS_DEPS_CMAKE_ARGS[@]}")
  log "dependencies: $prefix (glibc needed $need, here $have)"
}

# ------------------------------------------------------------------ build

build() {
  local jobs
  jobs=$(nproc 2>/dev/null || echo 2)
  if [ "$reuse_build" -eq 0 ]; then
    log "configuring $build_dir (preset gpucheck, CUDA architectures $cuda_arch)"
    (cd "$root" && cmake --preset gpucheck -B "$build_dir" -DCMAKE_CUDA_COMPILER="$nvcc" \
      -DCMAKE_CUDA_ARCHITECTURES="$cuda_arch" "${deps_args[@]}" >"$work/configure.log" 2>&1) || {
      tail -30 "$work/configure.log" >&2
      return 1
    }
  fi
  # dpstudio-cuda: the CUDA module (libdpstudio-cuda.so) the worker loads at run time for --backend cuda.
  log "building dpstudio, dpstudio-worker, the CUDA module, dpstudio-gpucheck in $build_dir"
  cmake --build "$build_dir" --target dpstudio dpstudio-worker dpstudio-cuda dpstudio-gpucheck -j "$jobs" \
    >"$work/build.log" 2>&1 || {
    tail -40 "$work/build.log" >&2
    return 1
  }
  log "built in $(elapsed) s"
}

# ------------------------------------------------------------------ rows

bin=$build_dir/bin
gpucheck() { "$bin/dpstudio-gpucheck" "$@" >>"$rows"; }
skip_reason=""
if [ "$dry_run" -eq 1 ]; then
  skip_reason="dry run (no GPU used)"
fi

# row_or_skip SECONDS: the reason to skip a row needing about SECONDS, or "" to run it.
row_or_skip() {
  if [ -n "$skip_reason" ]; then echo "$skip_reason"; return; fi
  if [ "$(remaining)" -lt "$1" ]; then echo "time budget: $(remaining) s left of $budget s"; return; fi
  echo ""
}

# make_project FILE KIND RANKS MICROBATCHES DTYPE [make-project options...]
make_project() {
  local file=$1 kind=$2 ranks=$3 mbs=$4 dtype=$5
  shift 5
  "$bin/dpstudio-gpucheck" make-project --out "$file" --kind "$kind" --ranks "$ranks" --microbatches "$mbs" \
    --dtype "$dtype" "$@"
}

# run_project PROJECT OUT [dpstudio run options...]: runs on the GPU; the log lands beside OUT.
run_project() {
  local project=$1 out=$2
  shift 2
  "$bin/dpstudio" run "$project" --backend cuda --timeout 120 -o "$out" "$@" >"$out.log" 2>&1
}

# correctness_row LABEL KIND RANKS MICROBATCHES DTYPE COMM VISIBLE REASON
correctness_row() {
  local label=$1 kind=$2 ranks=$3 mbs=$4 dtype=$5 comm=$6 visible=$7 reason=$8
  local project=$work/$kind-$ranks-$dtype-$comm.dpstudio.json out=$work/$kind-$ranks-$dtype-$comm.json
  make_project "$project" "$kind" "$ranks" "$mbs" "$dtype" --layers 8 --hidden 512 --seq 128 || reason="make-project failed"
  if [ -n "$reason" ]; then
    gpucheck correctness --label "$label" --dtype "$dtype" --skip "$reason"
    return
  fi
  CUDA_VISIBLE_DEVICES=$visible run_project "$project" "$out" --steps 2 --warmup 1 \
    || log "$label: dpstudio run failed (exit $?), log: $(tail -3 "$out.log" | paste -sd' ' -)"
  if [ -f "$out" ]; then
    gpucheck correctness --label "$label" --dtype "$dtype" --comm "$comm" --measured "$out"
  else
    gpucheck correctness --label "$label" --dtype "$dtype" --error "no measured trace: $(tail -1 "$out.log" 2>/dev/null)"
  fi
}

rows_kernels() {
  log "row 1: kernels and GEMMs against the CPU backend"
  local reason
  reason=$(row_or_skip 20)
  gpucheck kernels ${reason:+--skip "$reason"}
}

rows_correctness() {
  log "row 2: correctness of runs on shared GPUs (MPI) and over NCCL"
  local dtype reason nccl2 nccl4
  for dtype in fp32 bf16; do
    reason=$(row_or_skip 25)
    correctness_row "DualPipeV 2 ranks, 1 shared GPU, $dtype" dualpipev 2 8 "$dtype" mpi-host 0 "$reason"
    reason=$(row_or_skip 25)
    correctness_row "DualPipe 4 ranks, 1 shared GPU, $dtype" dualpipe 4 8 "$dtype" mpi-host 0 "$reason"
  done
  for dtype in fp32 bf16; do
    nccl2=$(row_or_skip 25)
    [ -z "$nccl2" ] && [ "$gpu_count" -lt 2 ] && nccl2="NCCL needs 2 GPUs, this machine has $gpu_count"
    correctness_row "DualPipeV 2 ranks, NCCL, $dtype" dualpipev 2 8 "$dtype" nccl 0,1 "$nccl2"
    nccl4=$(row_or_skip 25)
    [ -z "$nccl4" ] && [ "$gpu_count" -lt 4 ] && nccl4="NCCL needs 4 GPUs, this machine has $gpu_count"
    correctness_row "DualPipe 4 ranks, NCCL, $dtype" dualpipe 4 8 "$dtype" nccl 0,1,2,3 "$nccl4"
  done
}

rows_gemm() {
  log "row 3: GEMM throughput"
  local reason
  reason=$(row_or_skip 40)
  gpucheck gemm --hidden 4096 --tokens 4096 ${reason:+--skip "$reason"}
}

rows_calibration() {
  log "row 4: measured makespan against the calibrated prediction"
  local ranks=1 visible=0 label="DualPipeV 1 rank bf16 h=2048" reason
  if [ "$gpu_count" -ge 2 ]; then ranks=2; visible=0,1; label="DualPipeV 2 ranks NCCL bf16 h=2048"; fi
  local project=$work/calibration.dpstudio.json
  make_project "$project" dualpipev "$ranks" 16 bf16 --layers 8 --hidden 2048 --seq 1024 --microbatch-size 2
  reason=$(row_or_skip 90)
  if [ -n "$reason" ]; then
    gpucheck compare --label "$label" --skip "$reason"
    return
  fi
  local step=""
  CUDA_VISIBLE_DEVICES=$visible run_project "$project" "$work/first.json" --steps 5 --warmup 2 || step=first
  [ -z "$step" ] && { "$bin/dpstudio" calibrate "$work/first.json" --project "$project" -o "$work/costs.json" \
    >"$work/costs.json.log" 2>&1 || step=costs; }
  [ -z "$step" ] && { CUDA_VISIBLE_DEVICES=$visible run_project "$project" "$work/second.json" --steps 5 --warmup 2 \
    --costs "$work/costs.json" || step=second; }
  if [ -n "$step" ]; then
    gpucheck compare --label "$label" --error "$step step failed: $(tail -1 "$work/$step.json.log" 2>/dev/null)"
  else
    gpucheck compare --label "$label" --project "$project" --costs "$work/costs.json" --measured "$work/second.json"
  fi
}

# ------------------------------------------------------------------ the table

print_table() {
  local title=$1
  echo
  echo "$title"
  awk -F'\t' '
    { check[NR] = $1; value[NR] = $2; threshold[NR] = $3; result[NR] = $4
      if (length($1) > w1) w1 = length($1); if (length($3) > w3) w3 = length($3)
      count[$4]++ }
    END {
      if (w1 > 64) w1 = 64
      printf "%-" w1 "s  %-9s  %-" w3 "s  %s\n", "check", "result", "threshold", "measured"
      for (i = 1; i <= NR; i++)
        printf "%-" w1 "s  %-9s  %-" w3 "s  %s\n", check[i], result[i], threshold[i], value[i]
      printf "\n%d passed, %d failed, %d skipped, %d reported\n", count["PASS"], count["FAIL"], count["SKIPPED"], count["INFO"]
    }' <(sort -s -n -k1,1 "$rows")
}

if ! setup_deps; then
  [ "$dry_run" -eq 1 ] && exit 2
  exit 2
fi
if ! build; then
  log "the build failed: no table"
  exit 2
fi
if [ "$dry_run" -eq 0 ] && [ "$gpu_count" -eq 0 ]; then
  skip_reason="no GPU (nvidia-smi lists none)"
fi
rows_kernels
rows_gemm
rows_correctness
rows_calibration

mode="GPU check"
[ "$dry_run" -eq 1 ] && mode="GPU check, dry run"
print_table "$mode: $gpu_count GPU(s) ($gpu_names), CUDA $("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p'), $(elapsed) s"

if [ "$dry_run" -eq 1 ]; then
  # Every row must be there and skipped: 18 kernel rows, 2 GEMM rows, 8 correctness rows, 2 calibration rows.
  total=$(wc -l <"$rows")
  skipped=$(awk -F'\t' '$4 == "SKIPPED"' "$rows" | wc -l)
  if [ "$total" -ne 30 ] || [ "$skipped" -ne 30 ]; then
    log "dry run: expected 30 rows, all SKIPPED; got $total rows, $skipped skipped"
    exit 1
  fi
  exit 0
fi
awk -F'\t' '$4 == "FAIL" { failed = 1 } END { exit failed }' "$rows"
