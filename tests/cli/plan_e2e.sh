#!/bin/sh
# End-to-end checks of dpstudio plan: the search's JSON, memory-limit forms, nothing fits, --add-variants and the
# step time of an added variant under `dpstudio simulate` (exactly the candidate's).
# Usage: plan_e2e.sh /path/to/dpstudio   (exits non-zero on the first failed check)
set -u
DPS="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$0")/lib.sh"

# value FILE KEY: the first "KEY": value of a JSON file as written (one key per line, as dpstudio prints it).
value() {
    grep -m1 "\"$2\":" "$1" | sed 's/.*": *//; s/,$//'
}

# --- the default project (block model) ----------------------------------------------------------------
expect 0 "init default" -- "$DPS" init -o "$WORK/p.dpstudio.json"
expect 0 "plan default as json" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 --global-batch 40 \
    --memory-limit 8e9 --json
for key in '"candidates": [' '"pareto_front": [' '"simulated":' '"pruned":' '"search_ms":' '"layer_partition":' \
    '"peak_memory_bytes":' '"bubble_rate":' '"tokens_per_s_per_device":' '"recompute": null'; do
    contains "$WORK/out" "$key" "plan --json has $key"
done
# 21 candidates: pp 2, 4, 8 (dp 4, 2, 1; the model's 2 sequences per microbatch: 5, 10, 20 microbatches) over
# the seven kinds and interleaved's 2–4 chunks, less the sizes a kind refuses.
[ "$(value "$WORK/out" enumerated)" = 21 ] || fail "plan default: 21 candidates expected, got $(value "$WORK/out" enumerated)"
# The default DualPipe (8 ranks, 20 microbatches) is one of them, at the default project's makespan.
grep -q '"dualpipe-pp8-dp1-mb20x2"' "$WORK/out" || fail "plan default lists the default DualPipe"
expect 0 "plan default as text" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 --global-batch 40 --top 30
contains "$WORK/out" "dualpipe-pp8-dp1-mb20x2" "text lists the default DualPipe"
contains "$WORK/out" "2.365 s" "the default DualPipe's step is its makespan (dp 1)"
contains "$WORK/out" "best of each kind:" "text has the best of each kind"
contains "$WORK/out" "21 candidates:" "text counts the candidates"

for limit in 8e9 8GB 7.45GiB 8000000000; do
    expect 0 "memory limit $limit" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 --global-batch 40 --memory-limit "$limit" --json
done
expect 2 "memory limit with a bad unit" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 --global-batch 40 --memory-limit 8XB
contains "$WORK/err" "--memory-limit: '8XB' is not a memory size" "bad limit named"
expect 2 "unknown kind" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 --global-batch 40 --kinds dualpipe,nope
contains "$WORK/err" "--kinds: unknown schedule 'nope'" "bad kind named"
expect 2 "missing --devices" -- "$DPS" plan "$WORK/p.dpstudio.json" --global-batch 40
expect 2 "missing project" -- "$DPS" plan "$WORK/missing.dpstudio.json" --devices 8 --global-batch 40

expect 1 "nothing fits" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 --global-batch 40 --memory-limit 1MiB
contains "$WORK/err" "nothing fits 1 MiB per device: the smallest peak memory found is" "nothing fits: smallest peak"

expect 0 "only dualpipe and dualpipev" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 --global-batch 40 \
    --kinds dualpipe,dualpipev --json
if grep '"kind":' "$WORK/out" | grep -vqE '"(dualpipe|dualpipev)"'; then
    fail "--kinds dualpipe,dualpipev gave another kind"
fi

# --- a transformer (Llama 3 8B on H100s): the data-parallel all-reduce, --add-variants, simulate ----------
expect 0 "init llama3-8b" -- "$DPS" init -o "$WORK/l.dpstudio.json" --model llama3-8b --device h100-sxm
expect 0 "plan llama3-8b" -- "$DPS" plan "$WORK/l.dpstudio.json" --devices 16 --global-batch 64 \
    --memory-limit 80GB --top 3 --add-variants --json
contains "$WORK/err" "added 3 variants" "--add-variants says what it added"
cp "$WORK/out" "$WORK/plan.json"
best="$(value "$WORK/plan.json" name | tr -d '"')"
step="$(value "$WORK/plan.json" step_us)"
[ -n "$best" ] || fail "plan llama3-8b: no candidate"
contains "$WORK/l.dpstudio.json" "\"active_variant\": \"$best\"" "the best candidate is the active variant"
expect 0 "validate the added variants" -- "$DPS" validate "$WORK/l.dpstudio.json"
expect 0 "simulate the best" -- "$DPS" simulate "$WORK/l.dpstudio.json" --variant "$best" --json
[ "$(value "$WORK/out" step_us)" = "$step" ] \
    || fail "simulate step_us $(value "$WORK/out" step_us) differs from the plan's $step"
contains "$WORK/out" '"exposed_allreduce_us":' "simulate --json has the exposed all-reduce"
contains "$WORK/out" '"tokens_per_s":' "simulate --json has the throughput"

# --- presets instead of a project: the question in one command --------------------------------------------
expect 0 "plan from presets" -- "$DPS" plan --model llama3-8b --device h100-sxm --devices 16 --global-batch 64 \
    --memory-limit 80GB --json
[ "$(value "$WORK/out" step_us)" = "$step" ] || fail "plan --model/--device: the same best step as the project's"
contains "$WORK/out" '"source": "llama3-8b on h100-sxm"' "the source names the presets"
expect 2 "--model without --device" -- "$DPS" plan --model llama3-8b --devices 16 --global-batch 64
expect 2 "a project and --model" -- "$DPS" plan "$WORK/l.dpstudio.json" --model llama3-8b --device h800 \
    --devices 16 --global-batch 64
expect 2 "--add-variants without a project" -- "$DPS" plan --model llama3-8b --device h800 --devices 16 \
    --global-batch 64 --add-variants
expect 1 "unknown model preset" -- "$DPS" plan --model nope --device h800 --devices 16 --global-batch 64
contains "$WORK/err" '--model: unknown preset "nope"' "unknown preset named"

# --- tensor, context and data-parallel sharding: the columns, the flags and their bad values ------------
expect 0 "plan llama3-8b over tp 1,2 and ZeRO 1,3" -- "$DPS" plan --model llama3-8b --device h100-sxm --devices 16 \
    --global-batch 64 --tp 1,2 --zero 1,3 --json
for key in '"tp":' '"cp":' '"zero":' '"sequence_parallel":' '"mfu":'; do
    contains "$WORK/out" "$key" "plan --json has $key"
done
if grep '"tp":' "$WORK/out" | grep -vqE '"tp": (1|2),'; then fail "--tp 1,2 gave another tp"; fi
if grep '"zero":' "$WORK/out" | grep -vqE '"zero": (1|3),'; then fail "--zero 1,3 gave another stage"; fi
expect 0 "plan text has the new columns" -- "$DPS" plan --model llama3-8b --device h100-sxm --devices 16 \
    --global-batch 64 --tp 2 --top 3
head -3 "$WORK/out" | grep -qE ' tp +cp +pp +dp +zero ' || fail "plan text: tp, cp, pp, dp, zero columns"
contains "$WORK/out" "MFU" "plan text has the MFU column"
contains "$WORK/out" "-tp2-" "a tp 2 candidate is named -tp2-"
for bad in "--tp 3|--tp: 3 does not divide model.heads 32" "--tp 0|--tp: must be at least 1, got 0" \
    "--tp 2,x|--tp: must be an integer, got 'x'" "--cp 3|--cp: 3 does not divide model.seq_len 8192" \
    "--zero 4|--zero: 4 is not a ZeRO stage (0, 1, 2 or 3)"; do
    flags="${bad%%|*}"
    # shellcheck disable=SC2086 # the flag and its value are two words
    expect 2 "plan $flags" -- "$DPS" plan --model llama3-8b --device h100-sxm --devices 16 --global-batch 64 $flags
    contains "$WORK/err" "${bad#*|}" "plan $flags names the flag"
done
expect 2 "plan --tp on the block model" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 --global-batch 40 --tp 2
contains "$WORK/err" "--tp: 2 needs a transformer model" "--tp on the block model named"
expect 2 "plan --zero without a training object" -- "$DPS" plan "$WORK/p.dpstudio.json" --devices 8 \
    --global-batch 40 --zero 1
contains "$WORK/err" "--zero: 1 needs a project with a training object" "--zero without training named"

# --- compare: throughput and the same-devices mode ----------------------------------------------------------
expect 0 "compare same devices" -- "$DPS" compare --same-devices --json
contains "$WORK/out" '"same_devices": true' "compare says same devices"
[ "$(grep -c '"devices": 8' "$WORK/out")" = 2 ] || fail "compare --same-devices: both kinds on 8 devices"
[ "$(grep -c '"tokens_per_step": 5120' "$WORK/out")" = 2 ] || fail "compare --same-devices: the same global batch"
expect 0 "compare text" -- "$DPS" compare --same-devices
contains "$WORK/out" "8 (4 × dp 2)" "DualPipeV on 4 ranks × dp 2"
contains "$WORK/out" "tokens/s/device" "throughput per device column"

finish "plan e2e: all checks passed"
