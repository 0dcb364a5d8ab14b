#!/usr/bin/env bash
# End to end: `dpstudio devices --probe` with a short budget writes a CPU profile (docs/cpu-profile.md) with
# positive numbers at the default project's shapes, caches it under $XDG_CACHE_HOME keyed by the machine,
# reuses it, measures again for other shapes or with --reprobe, and dpstudio-worker's kernel choice follows
# the measured winner in the cache (checked in measured.json's device).
# Usage: probe_e2e.sh DPSTUDIO [TEST_DATA_DIR]. Exits 77 (skipped) when the worker or jq is missing.
set -u
DPSTUDIO=$(realpath "$1")
DATA=${2:-$(dirname "$(realpath "$0")")/../data}
WORKER=$(dirname "$DPSTUDIO")/dpstudio-worker
[ -x "$WORKER" ] || { echo "skipped: no dpstudio-worker next to $DPSTUDIO"; exit 77; }
command -v jq > /dev/null || { echo "skipped: jq not found"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dps-probe-e2e-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export XDG_CACHE_HOME="$WORK/cache" # never the user's cache
unset OPENBLAS_CORETYPE
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() { if eval "$2"; then echo "ok: $1"; else fail "$1"; fi; }
has() { jq -e "$1" "$2" > /dev/null; }

# 1. A first probe measures and caches.
start=$(date +%s%N)
"$DPSTUDIO" devices --probe --budget 1 -o "$WORK/p.json" > "$WORK/table.txt" 2> "$WORK/err.txt"
rc=$?
echo "probe took $((($(date +%s%N) - start) / 1000000)) ms"
check "probe exits 0" '[ $rc -eq 0 ] || { cat "$WORK/err.txt"; false; }'
P="$WORK/p.json"
check "the profile file is a format-1 CPU profile" 'has ".format_version == 1 and .kind == \"dpstudio-cpu-profile\"" "$P"'
check "measured at the default project's shape 256x512x2048" \
    'has "(.shapes | length) == 1 and .shapes[0].tokens == 256 and .shapes[0].hidden == 512 and .shapes[0].ffn == 2048" "$P"'
check "six GEMM calls (F, I, W of one layer), each with a positive time and FLOP/s" \
    'has "[.shapes[0].gemms[] | select(.time_us > 0 and .flops_per_second > 0)] | length == 6" "$P"'
check "the GEMMs come in the order F, F, I, I, W, W" \
    'has "[.shapes[0].gemms[].phase] == [\"F\",\"F\",\"I\",\"I\",\"W\",\"W\"]" "$P"'
check "four memory-bound ops with positive bytes/s" \
    'has "[.shapes[0].elementwise[] | select(.time_us > 0 and .bytes_per_second > 0)] | length == 4" "$P"'
check "every kernel candidate measured, with positive FLOP/s" \
    'has "(.blas_kernel.measured | length) >= 1 and all(.blas_kernel.measured[]; .flops_per_second > 0)" "$P"'
check "the winner is one of the measured kernels" \
    'has ".blas_kernel.winner as \$w | any(.blas_kernel.measured[]; .core == \$w or .loaded == \$w)" "$P"'
if command -v mpirun > /dev/null || [ -n "${DPSTUDIO_MPIRUN:-}" ]; then
    check "p2p fitted from at least 6 sizes: latency ≥ 0, bandwidth > 0" \
        'has ".p2p.latency_us >= 0 and .p2p.bandwidth_bytes_per_us > 0 and (.p2p.samples | length) >= 6 and all(.p2p.samples[]; .time_us > 0)" "$P"'
    check "p2p ran with a run's mpirun options" 'has ".p2p.mpirun_options | index([\"--mca\", \"btl\", \"self,vader\"])" "$P"'
fi
key=$(jq -r .machine.key "$P")
check "cached under \$XDG_CACHE_HOME/dpstudio/cpu-KEY.json" 'cmp -s "$P" "$XDG_CACHE_HOME/dpstudio/cpu-$key.json"'
check "the table names the kernel and the p2p fit" 'grep -q "^kernel: " "$WORK/table.txt" && grep -q "^fit: latency" "$WORK/table.txt"'

# 2. The same shapes again: the cache is reused, nothing is measured.
"$DPSTUDIO" devices --probe --budget 1 --json > "$WORK/again.json" 2> "$WORK/err2.txt"
check "a second probe reuses the cache" 'grep -q "reused" "$WORK/err2.txt" && ! grep -q "timing" "$WORK/err2.txt"'
check "and prints the same profile" 'cmp -s "$P" "$WORK/again.json"'

# 3. Other shapes (another project) are measured, and replace the machine's cache entry.
"$DPSTUDIO" devices --probe --budget 1 --project "$DATA/projects/runtime_small.dpstudio.json" --json \
    > "$WORK/small.json" 2> "$WORK/err3.txt"
check "another project's shapes are measured" 'grep -q "timing" "$WORK/err3.txt"'
check "at that project's shape" 'has "[.shapes[] | \"\(.tokens)x\(.hidden)x\(.ffn)\"] == [\"8x32x128\"]" "$WORK/small.json"'

# 4. --reprobe measures even when cached.
"$DPSTUDIO" devices --probe --budget 1 --project "$DATA/projects/runtime_small.dpstudio.json" --reprobe --json \
    > /dev/null 2> "$WORK/err4.txt"
check "--reprobe measures again" 'grep -q "timing" "$WORK/err4.txt"'

# 5. The worker's kernel choice follows the measured winner in the cache: make another candidate the winner.
CACHE="$XDG_CACHE_HOME/dpstudio/cpu-$key.json"
other=$(jq -r '.blas_kernel as $k | [$k.candidates[] | select(ascii_downcase != ($k.openblas_own | ascii_downcase))][0] // ""' "$CACHE")
if [ -n "$other" ]; then
    jq --arg w "$other" '.blas_kernel.winner = $w' "$CACHE" > "$WORK/edited.json" && cp "$WORK/edited.json" "$CACHE"
    "$WORKER" --probe-info > "$WORK/info.json"
    check "the worker chooses the cached winner $other" 'has ".blas_kernel.chosen == \"$other\"" "$WORK/info.json"'
    if command -v mpirun > /dev/null; then
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe --mca btl self,vader \
            --mca btl_vader_single_copy_mechanism none "$WORKER" --project "$DATA/projects/runtime_small.dpstudio.json" \
            --variant dualpipev-2 --steps 1 --warmup 0 --output "$WORK/measured.json" > /dev/null 2> "$WORK/run.txt"
        check "a run loads the $other kernels (measured.json's device)" \
            'grep -q "\"device\": \"[^\"]*(OpenBLAS $other," "$WORK/measured.json" || { cat "$WORK/run.txt"; false; }'
        OPENBLAS_CORETYPE=Haswell "$WORKER" --probe-info > "$WORK/info-user.json"
        check "a user's OPENBLAS_CORETYPE is left alone (another machine key, nothing chosen)" \
            'has ".machine.blas_core == \"Haswell\" and .blas_kernel.chosen == \"\"" "$WORK/info-user.json" || [ "$other" = Haswell ]'
    fi
else
    echo "no second kernel candidate on this CPU: the worker's choice is not checked"
fi

# 6. Bad flags.
"$DPSTUDIO" devices -o "$WORK/x.json" > /dev/null 2>&1
check "-o without --probe is a usage error (2)" '[ $? -eq 2 ]'
"$WORKER" --probe-compute > /dev/null 2> "$WORK/usage.txt"
check "the worker's compute probe needs --shapes (exit 2)" '[ $? -eq 2 ] && grep -q "needs --shapes" "$WORK/usage.txt"'
"$WORKER" --probe-transformer > /dev/null 2> "$WORK/usage2.txt"
check "the worker's transformer probe needs --project (exit 2)" '[ $? -eq 2 ] && grep -q "needs --project" "$WORK/usage2.txt"'


# 7. A transformer project: `devices --probe --project` times its stages too (tiny DeepSeek-V3, DualPipe on 2 ranks ×
# dp 2, ep 2: stage 0 is the embedding, 3 dense layers and an MoE one, stage 1 four MoE layers and the head), keeps
# them in the machine's profile (format 2) and a run of it is predicted for this machine from them.
"$DPSTUDIO" init -o "$WORK/ds.json" --model deepseek-v3 --scale tiny --schedule dualpipe --ranks 2 --microbatches 4 \
    > /dev/null 2>&1
"$DPSTUDIO" devices --probe --budget 1 --project "$WORK/ds.json" --json > "$WORK/ds-profile.json" 2> "$WORK/err7.txt"
check "the transformer probe exits 0" '[ $? -eq 0 ] || { cat "$WORK/err7.txt"; false; }'
check "it times the project's 2 transformer stages" 'grep -q "timing 2 transformer stages" "$WORK/err7.txt"'
T="$WORK/ds-profile.json"
check "a format-2 profile with the stages EDDDM and MMMMH at T=32, ep 2" \
    'has ".format_version == 2 and ([.transformer_stages[] | \"\(.layers)/\(.tokens)/\(.ep)\"] | sort) == [\"EDDDM/32/2\", \"MMMMH/32/2\"]" "$T"'
check "F and B split into compute chunks by the exchanges (3 in F, 2 in B per MoE layer)" \
    'has "[.transformer_stages[] | [.layers, (.forward_chunks_us | length), (.backward_chunks_us | length)]] | sort == [[\"EDDDM\", 4, 3], [\"MMMMH\", 13, 9]]" "$T"'
check "every stage time is positive and F, B are their chunks' sums" \
    'has "all(.transformer_stages[]; .input_grad_us > 0 and .weight_grad_us > 0 and all(.forward_chunks_us[]; . > 0) and (.forward_us - (.forward_chunks_us | add) | fabs) < 1e-6)" "$T"'
check "the cache keeps them" 'has "(.transformer_stages | length) == 2" "$XDG_CACHE_HOME/dpstudio/cpu-$key.json"'
"$DPSTUDIO" devices --probe --budget 1 --project "$WORK/ds.json" > "$WORK/ds-table.txt" 2> "$WORK/err7b.txt"
check "a second probe of the project reuses them" '! grep -q "transformer stage" "$WORK/err7b.txt"'
check "the table lists them" 'grep -q "^transformer stages" "$WORK/ds-table.txt" && grep -q "^MMMMH" "$WORK/ds-table.txt"'
"$DPSTUDIO" simulate "$WORK/ds.json" --this-machine > "$WORK/ds-sim.txt" 2>&1
check "simulate --this-machine predicts it from the stages" \
    'grep -q "transformer stages timed whole" "$WORK/ds-sim.txt" || { cat "$WORK/ds-sim.txt"; false; }'
if command -v mpirun > /dev/null || [ -n "${DPSTUDIO_MPIRUN:-}" ]; then
    "$DPSTUDIO" run "$WORK/ds.json" -o "$WORK/ds-measured.json" --steps 1 --backend cpu > "$WORK/ds-run.txt" 2>&1
    check "the tiny transformer run passes" '[ $? -eq 0 ] || { tail -20 "$WORK/ds-run.txt"; false; }'
    check "and is predicted for this machine" \
        'grep -q "^prediction: for this machine (probed CPU profile" "$WORK/ds-run.txt" || { tail -20 "$WORK/ds-run.txt"; false; }'
    check "without probing again (unless the check before the run found the profile drifted)" \
        '! grep -q "timing" "$WORK/ds-run.txt" || grep -q "than its profile (probed [^)]*) says, more than 15 %: probing again" "$WORK/ds-run.txt"'
    check "the cached profile is checked against this machine before the run" \
        'grep -q "^dpstudio: checking this machine.s profile" "$WORK/ds-run.txt" && grep -Eq "^prediction: for this machine \(probed CPU profile, [^;]*; (checked now|probed again now): this machine.s GEMMs" "$WORK/ds-run.txt"'

    # 8. A cached profile whose GEMMs are 3 times slower than this machine's is probed again before a run.
    jq '.shapes |= map(.gemms |= map(.time_us *= 3 | .flops_per_second /= 3))' "$CACHE" > "$WORK/slow.json" \
        && cp "$WORK/slow.json" "$CACHE"
    "$DPSTUDIO" run "$WORK/ds.json" -o "$WORK/ds-measured2.json" --steps 1 --backend cpu > "$WORK/ds-run2.txt" 2>&1
    check "a run with a drifted cached profile passes" '[ $? -eq 0 ] || { tail -20 "$WORK/ds-run2.txt"; false; }'
    check "its check says the GEMMs run faster than the profile says, and probes again" \
        'grep -Eq "^dpstudio: this machine.s GEMMs now run [0-9.]+ % faster than its profile \(probed [^)]*\) says, more than 15 %: probing again" "$WORK/ds-run2.txt" || { tail -20 "$WORK/ds-run2.txt"; false; }'
    check "the report says the prediction comes from the profile probed again" \
        'grep -Eq "^prediction: for this machine \(probed CPU profile, [^;]*; probed again now: this machine.s GEMMs ran \+[0-9.]+ % against the cached profile" "$WORK/ds-run2.txt"'
    check "the cache no longer holds the slowed times" \
        'has "all(.shapes[]; all(.gemms[]; .time_us > 0)) and .probed_at != \"\"" "$CACHE" && ! cmp -s "$CACHE" "$WORK/slow.json"'
fi

[ $failures -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all probe checks passed"
