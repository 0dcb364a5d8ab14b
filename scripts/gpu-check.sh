#!/usr/bin/env bash
# The GPU check of the CUDA backend. On a machine with a GPU, nvcc, CMake and ninja (no Qt, no Open MPI, no package
# registry needed: Open MPI, OpenBLAS, nlohmann-json and CLI11 come from .deps/debs, see
# scripts/fetch-gpu-deps.sh) it builds the engine alone and prints ONE table, each row with its threshold and
# PASS/FAIL (or INFO: reported, no threshold; SKIPPED: with the reason), sections in this order:
#   1  correctness of each kernel and GEMM against the CPU backend on random data (fp32 TF32 off ≤ 1e-5,
#      bf16 ≤ 1e-2)
#   2  correctness of the model: the whole model on the GPU against the CPU backend (loss and gradient errors,
#      the worker's CUDA thresholds), then pipelined runs against their sequential reference: DualPipeV on
#      2 ranks and DualPipe on 4 ranks sharing one GPU (MPI through host buffers), fp32 and bf16; the same
#      over NCCL where there are enough GPUs
#   3  GEMM TFLOP/s at the model's shapes (a layer's six GEMMs, h=2048, T=2048, f=8192) against the device
#      preset's peak (resources/presets/devices/, `dpstudio presets --json`): bf16 ≥ the preset's efficiency
#   4  F&B overlap gain: an overlapped slot's device time against F + B of the same stage (reported), and
#      the overlap factor the calibration fits to the run of section 5 (reported)
#   5  predicted vs measured makespan of DualPipeV (bf16, h=2048): the device preset's prediction against a
#      first run (reported), the prediction calibrated on that run against a second run (within 10%)
#   6  tiny transformers of the model library (`dpstudio init --model M --scale tiny`, fp32, every process on
#      GPU 0, MPI through host buffers), against their sequential reference with the worker's CUDA thresholds:
#      the tiny MoE (DeepSeek-V3: MLA, routed experts split over EP 2) on DualPipeV and on DualPipe, 2 ranks x
#      dp 2 (4 processes), each with the run report's "a2a hidden" share per rank (reported; "not reported"
#      when the report has none), and the tiny dense transformer (Llama 3 8B) on DualPipeV, 2 ranks
#
# Time budget: the whole check, build included, stays under --budget seconds (default 540: under 10
# minutes on one H200 with 16 cores, where it typically takes about 6). Every step runs under `timeout`
# with its own limit (below), cut to what is left of the budget; a step that does not have its typical
# need left is not started and its rows are SKIPPED "time budget: …"; a step that times out gets a FAIL row.
#   step                          limit s   typical s (one H200, 16 cores)
#   configure                     120       30
#   build (4 targets)             360       150
#   1 kernels                     60        10
#   2 model vs CPU (per dtype)    90        10
#   2 each correctness run        60        15     (4 on one GPU, 8 with 4 GPUs)
#   3 GEMM                        60        10
#   4 overlap                     60        10
#   5 each makespan run           90        20     (2, and a calibration of 30 s at most)
#   6 each tiny transformer run   60        15     (3: tiny MoE DualPipeV and DualPipe, tiny dense DualPipeV)
#
# Usage: scripts/gpu-check.sh [--dry-run] [--build-dir DIR] [--deps auto|system|prefix] [--budget SECONDS]
#                             [--device PRESET]
#   --dry-run     build everything this machine can and print every row as SKIPPED with the reason
#                 (CI: the script and dpstudio-gpucheck are exercised on every change; ctest gpu_check_dry_run)
#   --build-dir   build in (or reuse) DIR; default build-gpucheck, configured from the "gpucheck" preset
#   --deps        where Open MPI & co come from: system packages, the .deps prefix, or auto (system when
#                 mpirun and cblas.h are there)
#   --budget      seconds for the whole check (default 540)
#   --device      the device preset the GEMM row and the prediction use (default auto: from the GPU's name)
# Exit status: 0 when no row failed, 1 when one did, 2 when the check could not run (bad flags, no build).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/gpu-deps-env.sh
source "$root/scripts/gpu-deps-env.sh"

dry_run=0
build_dir=""
deps=auto
budget=540
device=auto
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --build-dir) build_dir=${2:?--build-dir needs a folder}; shift ;;
    --deps) deps=${2:?--deps needs auto, system or prefix}; shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift ;;
    --device) device=${2:?--device needs a preset id or auto}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case $budget in ''|*[!0-9]*) echo "gpu-check: --budget: expected whole seconds, got '$budget'" >&2; exit 2 ;; esac
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

# ------------------------------------------------------------------ the time budget

# Seconds kept back for what runs outside the steps' limits: the rows that only print or read files, the table.
reserve=20
# limit_of STEP: the step's own limit (the table in the file comment).
limit_of() {
  case $1 in
    configure) echo 120 ;; build) echo 360 ;; kernels) echo 60 ;; reference) echo 90 ;; run) echo 60 ;;
    gemm) echo 60 ;; overlap) echo 60 ;; perf-run) echo 90 ;; calibrate) echo 30 ;; tiny) echo 60 ;; *) echo 60 ;;
  esac
}
# need_of STEP: what the step typically takes; it starts only with that much left of the budget.
need_of() {
  case $1 in
    configure) echo 30 ;; build) echo 60 ;; kernels) echo 10 ;; reference) echo 10 ;; run) echo 15 ;;
    gemm) echo 10 ;; overlap) echo 10 ;; perf) echo 60 ;; tiny) echo 15 ;; *) echo 10 ;;
  esac
}
# step_seconds STEP: the step's limit cut to what is left of the budget (after the reserve).
step_seconds() {
  local limit left
  limit=$(limit_of "$1")
  left=$(( $(remaining) - reserve ))
  [ "$left" -lt "$limit" ] && limit=$left
  [ "$limit" -lt 1 ] && limit=0
  echo "$limit"
}
# limited STEP CMD...: CMD under `timeout` for step_seconds(STEP); 124 when it ran out (or had no time at all).
limited() {
  local step=$1 seconds
  shift
  seconds=$(step_seconds "$step")
  [ "$seconds" -lt 1 ] && return 124
  timeout --kill-after=5 "$seconds" "$@"
}

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
  log "GPUs: $gpu_count ($gpu_names); budget $budget s"
}
describe_machine

# The device preset of sections 3 and 5: auto names it from the GPU (dpstudio-gpucheck); without one, h200.
if [ "$device" = auto ] && [ "$gpu_count" -eq 0 ]; then
  device=h200
  log "device preset: h200 (no GPU to name one)"
fi

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
  local jobs rc
  jobs=$(nproc 2>/dev/null || echo 2)
  if [ "$reuse_build" -eq 0 ]; then
    log "configuring $build_dir (preset gpucheck, CUDA architectures $cuda_arch; at most $(step_seconds configure) s)"
    (cd "$root" && limited configure cmake --preset gpucheck -B "$build_dir" -DCMAKE_CUDA_COMPILER="$nvcc" \
      -DCMAKE_CUDA_ARCHITECTURES="$cuda_arch" "${deps_args[@]}" >"$work/configure.log" 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ]; then
      tail -30 "$work/configure.log" >&2
      [ "$rc" -eq 124 ] && log "configuring ran out of its time"
      return 1
    fi
  fi
  # dpstudio-cuda: the CUDA module (libdpstudio-cuda.so) the worker loads at run time for --backend cuda.
  log "building dpstudio, dpstudio-worker, the CUDA module, dpstudio-gpucheck in $build_dir (at most $(step_seconds build) s)"
  limited build cmake --build "$build_dir" --target dpstudio dpstudio-worker dpstudio-cuda dpstudio-gpucheck -j "$jobs" \
    >"$work/build.log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -40 "$work/build.log" >&2
    [ "$rc" -eq 124 ] && log "the build ran out of its time"
    return 1
  fi
  log "built in $(elapsed) s"
}

# ------------------------------------------------------------------ rows

bin=$build_dir/bin
skip_reason=""
if [ "$dry_run" -eq 1 ]; then
  skip_reason="dry run (no GPU used)"
fi

# row_or_skip STEP: the reason to skip a step, or "" to run it.
row_or_skip() {
  if [ -n "$skip_reason" ]; then echo "$skip_reason"; return; fi
  local left=$(( $(remaining) - reserve ))
  if [ "$left" -lt "$(need_of "$1")" ]; then echo "time budget: $(remaining) s left of $budget s"; return; fi
  echo ""
}

# timed_out_row CHECK STEP: the FAIL row of a step that ran out of time.
timed_out_row() {
  printf '%s\ttimed out after %s s\tdone within its limit\tFAIL\n' "$1" "$2" >>"$rows"
}

# gpucheck STEP CHECK SUBCOMMAND [options...]: a subcommand's rows into the table. One that measures on the
# GPU (kernels, reference, gemm, overlap) runs under the step's limit and gets a FAIL row named CHECK when it
# runs out of time; one that only prints (--skip, --error) or reads files (correctness, compare) takes
# milliseconds and gets 30 s, which the budget's reserve covers.
gpucheck() {
  local step=$1 check=$2 seconds=30 rc arg measuring=0
  shift 2
  case $1 in kernels|reference|gemm|overlap) measuring=1 ;; esac
  for arg in "$@"; do [ "$arg" = --skip ] && measuring=0; done
  if [ "$measuring" -eq 1 ]; then
    seconds=$(step_seconds "$step")
    limited "$step" "$bin/dpstudio-gpucheck" "$@" >>"$rows"
  else
    timeout --kill-after=5 "$seconds" "$bin/dpstudio-gpucheck" "$@" >>"$rows"
  fi
  rc=$?
  { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && timed_out_row "$check" "$seconds"
  return 0
}

# make_project FILE KIND RANKS MICROBATCHES DTYPE [make-project options...]
make_project() {
  local file=$1 kind=$2 ranks=$3 mbs=$4 dtype=$5
  shift 5
  "$bin/dpstudio-gpucheck" make-project --out "$file" --kind "$kind" --ranks "$ranks" --microbatches "$mbs" \
    --dtype "$dtype" --device "$device" "$@"
}

# run_project STEP PROJECT OUT [dpstudio run options...]: runs on the GPU under the step's limit (dpstudio
# run's own --timeout 5 s inside it, so it ends the ranks itself); the log lands beside OUT.
run_project() {
  local step=$1 project=$2 out=$3 seconds
  shift 3
  seconds=$(step_seconds "$step")
  [ "$seconds" -lt 10 ] && { echo "time budget: $(remaining) s left" >"$out.log"; return 124; }
  limited "$step" "$bin/dpstudio" run "$project" --backend cuda --timeout $(( seconds - 5 )) -o "$out" "$@" \
    >"$out.log" 2>&1
}

# correctness_row LABEL KIND RANKS MICROBATCHES DTYPE COMM VISIBLE REASON
correctness_row() {
  local label=$1 kind=$2 ranks=$3 mbs=$4 dtype=$5 comm=$6 visible=$7 reason=$8
  local project=$work/$kind-$ranks-$dtype-$comm.dpstudio.json out=$work/$kind-$ranks-$dtype-$comm.json rc
  make_project "$project" "$kind" "$ranks" "$mbs" "$dtype" --layers 8 --hidden 512 --seq 128 || reason="make-project failed"
  if [ -n "$reason" ]; then
    gpucheck run "2 $label" correctness --label "$label" --dtype "$dtype" --skip "$reason"
    return
  fi
  CUDA_VISIBLE_DEVICES=$visible run_project run "$project" "$out" --steps 2 --warmup 1
  rc=$?
  [ "$rc" -ne 0 ] && log "$label: dpstudio run failed (exit $rc), log: $(tail -3 "$out.log" | paste -sd' ' -)"
  if [ -f "$out" ]; then
    gpucheck run "2 $label" correctness --label "$label" --dtype "$dtype" --comm "$comm" --measured "$out"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    timed_out_row "2 $label" "$(limit_of run)"
  else
    gpucheck run "2 $label" correctness --label "$label" --dtype "$dtype" --error "no measured trace: $(tail -1 "$out.log" 2>/dev/null)"
  fi
}

# tiny_row LABEL MODEL SCHEDULE REASON [A2A_LABEL]: `dpstudio init --model MODEL --scale tiny` (the preset's
# structure at CPU sizes, fp32; an MoE's routed experts over EP 2 on dp 2) on SCHEDULE with 2 ranks and the device
# preset, run with every process on GPU 0 (MPI through host buffers): its correctness row in section 6 and, with
# A2A_LABEL, the run report's "a2a hidden" row under that label. The project is made even in a dry run, so a
# broken `init` fails the dry run too.
tiny_row() {
  local label=$1 model=$2 schedule=$3 reason=$4 a2a=${5:-} rc
  local project=$work/tiny-$model-$schedule.dpstudio.json out=$work/tiny-$model-$schedule.json
  if ! "$bin/dpstudio" init -o "$project" --model "$model" --scale tiny --schedule "$schedule" --ranks 2 \
      --microbatches 4 --device "$tiny_device" >"$project.log" 2>&1; then
    gpucheck tiny "6 $label" correctness --section 6 --label "$label" --dtype fp32 \
      --error "dpstudio init failed: $(tail -1 "$project.log")"
    [ -n "$a2a" ] && gpucheck tiny "6 $label" a2a --label "$a2a" --skip "no project"
    return
  fi
  if [ -n "$reason" ]; then
    gpucheck tiny "6 $label" correctness --section 6 --label "$label" --dtype fp32 --skip "$reason"
    [ -n "$a2a" ] && gpucheck tiny "6 $label" a2a --label "$a2a" --skip "$reason"
    return
  fi
  CUDA_VISIBLE_DEVICES=0 run_project tiny "$project" "$out" --steps 2 --warmup 1
  rc=$?
  [ "$rc" -ne 0 ] && log "$label: dpstudio run failed (exit $rc), log: $(tail -3 "$out.log" | paste -sd' ' -)"
  if [ -f "$out" ]; then
    gpucheck tiny "6 $label" correctness --section 6 --label "$label" --dtype fp32 --comm mpi-host --measured "$out"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    timed_out_row "6 $label" "$(limit_of tiny)"
  else
    gpucheck tiny "6 $label" correctness --section 6 --label "$label" --dtype fp32 \
      --error "no measured trace: $(tail -1 "$out.log" 2>/dev/null)"
  fi
  [ -n "$a2a" ] && gpucheck tiny "6 $label" a2a --label "$a2a" --log "$out.log"
}

# Section 3 and 4 measure at the makespan run's shapes: hidden 2048, 2 × 1024 tokens, ffn 8192, 4 layers a stage.
perf_hidden=2048
perf_seq=1024
perf_mbsize=2
perf_layers=8

rows_kernels() {
  log "1: kernels and GEMMs against the CPU backend"
  local reason
  reason=$(row_or_skip kernels)
  gpucheck kernels "1 kernels" kernels ${reason:+--skip "$reason"}
}

rows_reference() {
  log "2: the model on the GPU against the CPU backend"
  local dtype reason project
  for dtype in fp32 bf16; do
    project=$work/reference-$dtype.dpstudio.json
    reason=$(row_or_skip reference)
    make_project "$project" dualpipev 2 4 "$dtype" --layers 8 --hidden 512 --seq 128 || reason="make-project failed"
    gpucheck reference "2 model on the GPU vs the CPU reference, $dtype" reference --project "$project" \
      --dtype "$dtype" --microbatches 4 ${reason:+--skip "$reason"}
  done
}

rows_correctness() {
  log "2: correctness of runs on shared GPUs (MPI) and over NCCL"
  local dtype reason nccl2 nccl4
  for dtype in fp32 bf16; do
    reason=$(row_or_skip run)
    correctness_row "DualPipeV 2 ranks, 1 shared GPU, $dtype" dualpipev 2 8 "$dtype" mpi-host 0 "$reason"
    reason=$(row_or_skip run)
    correctness_row "DualPipe 4 ranks, 1 shared GPU, $dtype" dualpipe 4 8 "$dtype" mpi-host 0 "$reason"
  done
  for dtype in fp32 bf16; do
    nccl2=$(row_or_skip run)
    [ -z "$nccl2" ] && [ "$gpu_count" -lt 2 ] && nccl2="NCCL needs 2 GPUs, this machine has $gpu_count"
    correctness_row "DualPipeV 2 ranks, NCCL, $dtype" dualpipev 2 8 "$dtype" nccl 0,1 "$nccl2"
    nccl4=$(row_or_skip run)
    [ -z "$nccl4" ] && [ "$gpu_count" -lt 4 ] && nccl4="NCCL needs 4 GPUs, this machine has $gpu_count"
    correctness_row "DualPipe 4 ranks, NCCL, $dtype" dualpipe 4 8 "$dtype" nccl 0,1,2,3 "$nccl4"
  done
}

rows_gemm() {
  log "3: GEMM throughput against the device preset's peak"
  local reason
  reason=$(row_or_skip gemm)
  gpucheck gemm "3 GEMM TFLOP/s" gemm --hidden $perf_hidden --tokens $(( perf_seq * perf_mbsize )) \
    --ffn $(( 4 * perf_hidden )) --device "$device" ${reason:+--skip "$reason"}
}

rows_overlap() {
  log "4: an overlapped F&B slot against F + B"
  local reason
  reason=$(row_or_skip overlap)
  gpucheck overlap "4 overlapped F&B slot vs F + B" overlap --hidden $perf_hidden \
    --tokens $(( perf_seq * perf_mbsize )) --ffn $(( 4 * perf_hidden )) --layers $(( perf_layers / 2 )) --dtype bf16 \
    ${reason:+--skip "$reason"}
}

rows_makespan() {
  log "5: measured makespan against the device preset's and the calibrated prediction"
  local ranks=1 visible=0 label="DualPipeV 1 rank, bf16" reason step=""
  if [ "$gpu_count" -ge 2 ]; then ranks=2; visible=0,1; label="DualPipeV 2 ranks NCCL, bf16"; fi
  local project=$work/makespan.dpstudio.json
  make_project "$project" dualpipev "$ranks" 16 bf16 --layers $perf_layers --hidden $perf_hidden --seq $perf_seq \
    --microbatch-size $perf_mbsize
  reason=$(row_or_skip perf)
  if [ -n "$reason" ]; then
    gpucheck perf-run "5 $label" compare --label "$label" --skip "$reason"
    return
  fi
  CUDA_VISIBLE_DEVICES=$visible run_project perf-run "$project" "$work/first.json" --steps 5 --warmup 2 || step=first
  [ -z "$step" ] && { limited calibrate "$bin/dpstudio" calibrate "$work/first.json" --project "$project" \
    -o "$work/costs.json" >"$work/costs.json.log" 2>&1 || step=costs; }
  [ -z "$step" ] && { CUDA_VISIBLE_DEVICES=$visible run_project perf-run "$project" "$work/second.json" --steps 5 \
    --warmup 2 --costs "$work/costs.json" || step=second; }
  local first=()
  [ -f "$work/first.json" ] && [ "$step" != first ] && first=(--first "$work/first.json")
  if [ -n "$step" ]; then
    gpucheck calibrate "5 $label" compare --label "$label" --project "$project" "${first[@]}" \
      --error "$step step failed: $(tail -1 "$work/$step.json.log" 2>/dev/null)"
  else
    gpucheck calibrate "5 $label" compare --label "$label" --project "$project" "${first[@]}" \
      --costs "$work/costs.json" --measured "$work/second.json"
  fi
}

rows_tiny() {
  log "6: tiny transformers of the model library (MoE with expert parallelism, dense) on one shared GPU"
  # `dpstudio init` takes a preset id: what --device auto stands for on this machine.
  tiny_device=$device
  [ "$tiny_device" = auto ] && tiny_device=$("$bin/dpstudio-gpucheck" device-preset --device auto)
  local reason
  reason=$(row_or_skip tiny)
  tiny_row "tiny DeepSeek-V3 MoE, DualPipeV 2 ranks x dp 2, EP 2, 1 shared GPU, fp32" deepseek-v3 dualpipev \
    "$reason" "tiny DeepSeek-V3 MoE, DualPipeV"
  reason=$(row_or_skip tiny)
  tiny_row "tiny DeepSeek-V3 MoE, DualPipe 2 ranks x dp 2, EP 2, 1 shared GPU, fp32" deepseek-v3 dualpipe \
    "$reason" "tiny DeepSeek-V3 MoE, DualPipe"
  reason=$(row_or_skip tiny)
  tiny_row "tiny Llama 3 8B dense, DualPipeV 2 ranks, 1 shared GPU, fp32" llama3-8b dualpipev "$reason"
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
      if (w1 > 80) w1 = 80
      if (w3 > 48) w3 = 48
      printf "%-" w1 "s  %-8s  %-" w3 "s  %s\n", "check", "result", "threshold", "measured"
      for (i = 1; i <= NR; i++)
        printf "%-" w1 "s  %-8s  %-" w3 "s  %s\n", check[i], result[i], threshold[i], value[i]
      printf "\n%d passed, %d failed, %d skipped, %d reported\n", count["PASS"], count["FAIL"], count["SKIPPED"], count["INFO"]
    }' <(sort -s -n -k1,1 "$rows")
}

if ! setup_deps; then
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
rows_reference
rows_gemm
rows_overlap
rows_correctness
rows_makespan
rows_tiny

mode="GPU check"
[ "$dry_run" -eq 1 ] && mode="GPU check, dry run"
print_table "$mode: $gpu_count GPU(s) ($gpu_names), CUDA $("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p'), $(elapsed) s of a $budget s budget"

if [ "$dry_run" -eq 1 ]; then
  # Every row must be there and skipped: 18 kernel rows, 2 model-vs-CPU rows, 2 GEMM rows, 1 overlap row,
  # 8 run correctness rows, 3 makespan rows (preset, calibrated, the run's overlap), 5 tiny transformer rows
  # (3 correctness, 2 a2a hidden).
  total=$(wc -l <"$rows")
  skipped=$(awk -F'\t' '$4 == "SKIPPED"' "$rows" | wc -l)
  if [ "$total" -ne 39 ] || [ "$skipped" -ne 39 ]; then
    log "dry run: expected 39 rows, all SKIPPED; got $total rows, $skipped skipped"
    exit 1
  fi
  exit 0
fi
awk -F'\t' '$4 == "FAIL" { failed = 1 } END { exit failed }' "$rows"
