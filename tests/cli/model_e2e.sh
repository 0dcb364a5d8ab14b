#!/bin/sh
# End-to-end checks of the model library's command line: dpstudio presets, init --model/--device,
# model-info, simulate on a transformer project (the model line, parameter_bytes), and bad input.
# Usage: model_e2e.sh /path/to/dpstudio   (exits non-zero when a check failed; needs python3 for JSON)
set -u
DPS="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$0")/lib.sh"
# The tiny runs below are predicted from a probe of this machine: into a private cache, never the user's.
export XDG_CACHE_HOME="$WORK/cache"

# edit IN OUT PYTHON: writes OUT as the JSON of IN after the Python statements (on the object p) ran.
edit() {
    python3 -c "import json, sys
p = json.load(open(sys.argv[1]))
$3
json.dump(p, open(sys.argv[2], 'w'), indent=2)" "$1" "$2" || fail "editing $1 into $2"
}

MODELS="block deepseek-v3 llama3-8b llama3-70b llama3-405b mixtral-8x7b"
DEVICES="a100-80g b200 cpu h100-sxm h200 h800 mi300x"

# --- presets ----------------------------------------------------------------------------------------
expect 0 "presets" -- "$DPS" presets
for id in $MODELS $DEVICES; do
    grep -qE "^$id " "$WORK/out" || fail "presets: no row for $id"
done
contains "$WORK/out" "dpstudio init --model ID" "presets text names init's flag"
expect 0 "presets --json" -- "$DPS" presets --json
cp "$WORK/out" "$WORK/presets.json"
# Published totals: DeepSeek-V3 671B total (2 %), 37B activated (5 %); Llama 3 8.03B, 70.55B,
# 405.8B; Mixtral 46.7B total, 12.9B active (1 %). H800 dense BF16 peak 989.4 TFLOP/s (its preset's source).
check_py "presets --json: ids, published totals, sources" "
import json, sys
d = json.load(open(sys.argv[1]))
models = {m['id']: m for m in d['models']}
devices = {x['id']: x for x in d['devices']}
assert sorted(models) == sorted(sys.argv[2].split()), sorted(models)
assert sorted(devices) == sorted(sys.argv[3].split()), sorted(devices)
def near(id, key, want, tol):
    got = models[id][key]
    assert abs(got - want) <= tol * want, (id, key, got, want)
near('deepseek-v3', 'parameters_total', 671e9, 0.02)
near('deepseek-v3', 'parameters_active', 37e9, 0.05)
near('llama3-8b', 'parameters_total', 8.03e9, 0.01)
near('llama3-70b', 'parameters_total', 70.55e9, 0.01)
near('llama3-405b', 'parameters_total', 405.8e9, 0.01)
near('mixtral-8x7b', 'parameters_total', 46.7e9, 0.01)
near('mixtral-8x7b', 'parameters_active', 12.9e9, 0.01)
assert models['llama3-8b']['parameters_active'] == models['llama3-8b']['parameters_total']
assert models['block']['parameters_total'] is None, models['block']
assert devices['h800']['device_flops'] == 989.4e12, devices['h800']
assert devices['h800']['gpus_per_node'] == 8, devices['h800']
assert devices['h800']['memory_per_device_bytes'] == 80e9, devices['h800']
for entry in list(models.values()) + list(devices.values()):
    assert entry['title'] and entry['sources'] and all(entry['sources']), entry['id']
" "$WORK/presets.json" "$MODELS" "$DEVICES"

# --- init --model: DeepSeek-V3 on 16 H800 ranks, 8 per node ------------------------------------------
expect 0 "init deepseek-v3 dualpipe" -- "$DPS" init --model deepseek-v3 --device h800 --gpus-per-node 8 \
    --schedule dualpipe --ranks 16 --microbatches 32 -o "$WORK/ds.dpstudio.json"
contains "$WORK/out" "dualpipe (16 ranks, 16 stages, 32 microbatches) active" "init deepseek-v3 summary"
check_py "init deepseek-v3 file" "
import json, sys
p = json.load(open(sys.argv[1]))
assert p['format_version'] == 2, p['format_version']
assert p['model']['kind'] == 'transformer', p['model']
assert p['model']['layers'] == 61, p['model']['layers']
assert p['model']['moe']['experts'] == 256 and p['model']['moe']['top_k'] == 8, p['model']['moe']
assert p['cluster']['gpus_per_node'] == 8, p['cluster']
assert p['cluster']['device_flops'] == 989.4e12, p['cluster']
v = p['variants']
assert len(v) == 1 and v[0]['kind'] == 'dualpipe' and v[0]['ranks'] == 16 and v[0]['microbatches'] == 32, v
assert sum(v[0]['layer_partition']) == 61 and len(v[0]['layer_partition']) == 16, v[0]
" "$WORK/ds.dpstudio.json"
# The same with 1F1B, and DualPipeV on the same 16 devices, for the relations below.
expect 0 "init deepseek-v3 1f1b" -- "$DPS" init --model deepseek-v3 --device h800 --gpus-per-node 8 \
    --schedule 1f1b --ranks 16 --microbatches 32 -o "$WORK/ds-1f1b.dpstudio.json"

expect 0 "simulate deepseek-v3 dualpipe" -- "$DPS" simulate "$WORK/ds.dpstudio.json"
contains "$WORK/out" "model:        deepseek-v3 on h800: dp 1 × pp 16 = 16 devices" "simulate's model line"
# ep 64 with dp 1: the placement rule lays out 64 replicas per rank (an EP group on 8 nodes of 8), so every
# pipeline hop crosses nodes and 56 of a device's 63 EP peers sit on other nodes.
contains "$WORK/out" "all-to-all over ep 64: 7 peers intra-node, 56 inter-node (8 nodes); pipeline hops: 15 of 15 inter-node" \
    "simulate names where the all-to-all goes"
contains "$WORK/out" "(8 per node; ep 64 lays out 64 replicas per rank: 1024 devices on 128 nodes)" "the EP layout's size"
# Without data parallelism nothing shards the optimizer state: the ranks holding the embedding or the head and
# the ranks of 8 layers (3-12) exceed an 80 GB H800 (docs/model-library.md).
contains "$WORK/out" "warning: does not fit: 12 of 16 ranks (0, 3, 4, 5, 6, 7, 8, 9, …)" "simulate warns when the peak exceeds the device"
expect 0 "simulate deepseek-v3 dualpipe --json" -- "$DPS" simulate "$WORK/ds.dpstudio.json" --json
cp "$WORK/out" "$WORK/ds-sim.json"
expect 0 "simulate deepseek-v3 1f1b --json" -- "$DPS" simulate "$WORK/ds-1f1b.dpstudio.json" --json
cp "$WORK/out" "$WORK/ds-1f1b-sim.json"
# The same two without expert parallelism (ep 1: no all-to-all).
edit "$WORK/ds.dpstudio.json" "$WORK/ds-ep1.dpstudio.json" "p['model']['moe']['ep'] = 1"
edit "$WORK/ds-1f1b.dpstudio.json" "$WORK/ds-1f1b-ep1.dpstudio.json" "p['model']['moe']['ep'] = 1"
expect 0 "simulate deepseek-v3 dualpipe ep 1" -- "$DPS" simulate "$WORK/ds-ep1.dpstudio.json" --json
cp "$WORK/out" "$WORK/ds-ep1-sim.json"
expect 0 "simulate deepseek-v3 1f1b ep 1" -- "$DPS" simulate "$WORK/ds-1f1b-ep1.dpstudio.json" --json
cp "$WORK/out" "$WORK/ds-1f1b-ep1-sim.json"
# DualPipe hides the expert all-to-all of one microbatch under another's compute: its step is shorter than
# 1F1B's on the same ranks and microbatches, by more with ep 64 than with ep 1.
check_py "deepseek-v3: DualPipe shorter than 1F1B, more so with the all-to-all; parameter_bytes per rank" "
import json, sys
dp, ob, dp1, ob1 = (json.load(open(f)) for f in sys.argv[1:5])
assert 0 < dp['makespan_us'] < ob['makespan_us'], (dp['makespan_us'], ob['makespan_us'])
assert 0 < dp1['makespan_us'] < ob1['makespan_us'], (dp1['makespan_us'], ob1['makespan_us'])
gain, gain1 = ob['makespan_us'] - dp['makespan_us'], ob1['makespan_us'] - dp1['makespan_us']
assert gain > gain1, (gain, gain1)
assert len(dp['ranks']) == 16 and len(ob['ranks']) == 16
assert all(r['parameter_bytes'] > 0 for r in dp['ranks'] + ob['ranks'])
# A DualPipe rank holds two stages (its own and the mirrored one), a 1F1B rank one.
assert dp['ranks'][8]['parameter_bytes'] > ob['ranks'][8]['parameter_bytes']
" "$WORK/ds-sim.json" "$WORK/ds-1f1b-sim.json" "$WORK/ds-ep1-sim.json" "$WORK/ds-1f1b-ep1-sim.json"

expect 0 "model-info deepseek-v3" -- "$DPS" model-info "$WORK/ds.dpstudio.json"
contains "$WORK/out" "parameters:" "model-info text totals"
contains "$WORK/out" "all-to-all" "model-info text stage table"
contains "$WORK/out" "parameter bytes" "model-info text rank table"
expect 0 "model-info deepseek-v3 --json" -- "$DPS" model-info "$WORK/ds.dpstudio.json" --json
check_py "model-info deepseek-v3 --json: keys and values" "
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d) == ['parameters_total', 'parameters_active', 'flops_per_token_training', 'tp', 'cp',
                   'sequence_parallel', 'zero', 'stages', 'ranks'], list(d)
assert abs(d['parameters_total'] - 671e9) <= 0.02 * 671e9, d['parameters_total']
assert abs(d['parameters_active'] - 37e9) <= 0.05 * 37e9, d['parameters_active']
# 3 × forward: 2 FLOPs per active GEMM weight (the activated parameters less the embedding, 129280 × 7168, and
# the RMSNorm weights, 61 × (2·7168 + q 1536 + kv 512) + final 7168), plus MLA's attention core, causal half:
# s·n_h·(d_k + d_v) = 4096 · 128 · (192 + 128) per layer.
norms = 61 * (2 * 7168 + 1536 + 512) + 7168
want = 3 * (2 * (d['parameters_active'] - 129280 * 7168 - norms) + 61 * 4096 * 128 * (192 + 128))
assert d['flops_per_token_training'] == want, (d['flops_per_token_training'], want)
stage_keys = ['stage', 'layers', 'parameters', 'f_us', 'i_us', 'w_us', 'b_us', 'fb_us', 'fb_compute_us', 'fb_comm_us',
              'activation_bytes', 'a2a_bytes']
assert len(d['stages']) == 16 and all(list(s) == stage_keys for s in d['stages']), d['stages'][0]
assert [s['stage'] for s in d['stages']] == list(range(16))
assert sum(s['layers'] for s in d['stages']) == 61
# Every stage holds MoE layers (the first 3 dense layers sit on stage 0 beside MoE ones): all-to-all bytes.
assert all(s['a2a_bytes'] > 0 for s in d['stages']), [s['a2a_bytes'] for s in d['stages']]
assert all(s['b_us'] > 0 and s['f_us'] > 0 and s['activation_bytes'] > 0 for s in d['stages'])
assert len(d['ranks']) == 16 and all(list(r) == ['rank', 'parameters', 'parameter_bytes'] for r in d['ranks'])
sim = json.load(open(sys.argv[2]))
assert [r['parameter_bytes'] for r in d['ranks']] == [r['parameter_bytes'] for r in sim['ranks']]
" "$WORK/out" "$WORK/ds-sim.json"

# --- Llama 3 8B: a dense model, exact per-rank relations ---------------------------------------------
expect 0 "init llama3-8b 1f1b" -- "$DPS" init --model llama3-8b --device h100-sxm --schedule 1f1b --ranks 4 \
    --microbatches 8 -o "$WORK/l8.dpstudio.json"
expect 0 "model-info llama3-8b --json" -- "$DPS" model-info "$WORK/l8.dpstudio.json" --json
# 32 layers over 4 stages of 8; rank 0 also holds the embedding (vocab 128256 × hidden 4096 = 525336576
# elements), rank 3 the LM head (the same) and the final RMSNorm (4096); bf16: 2 bytes per parameter.
# Training FLOPs per token: per layer 2 × (W_q 4096·4096 + W_k, W_v 2 · 4096·1024 + W_o 4096·4096 + SwiGLU
# 3 · 4096·14336 = 218103808 weights) + the causal attention core s·n_h·(d_k + d_v) = 8192 · 32 · 256, times
# 32 layers, plus the LM head 2 · 128256 · 4096; × 3 = 51470401536.
check_py "model-info llama3-8b --json" "
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d['parameters_total'] - 8.03e9) <= 0.01 * 8.03e9, d['parameters_total']
assert d['flops_per_token_training'] == 3 * (32 * (2 * 218103808 + 8192 * 32 * 256) + 2 * 128256 * 4096) == 51470401536, d['flops_per_token_training']
assert d['parameters_active'] == d['parameters_total']
assert [s['layers'] for s in d['stages']] == [8, 8, 8, 8]
assert all(s['a2a_bytes'] == 0 for s in d['stages']), 'a dense model exchanges no tokens'
r = d['ranks']
assert sum(x['parameters'] for x in r) == d['parameters_total'], (sum(x['parameters'] for x in r), d['parameters_total'])
assert r[1]['parameters'] == r[2]['parameters']
assert r[0]['parameters'] - r[1]['parameters'] == 128256 * 4096, r[0]['parameters'] - r[1]['parameters']
assert r[3]['parameters'] - r[1]['parameters'] == 128256 * 4096 + 4096, r[3]['parameters'] - r[1]['parameters']
assert all(x['parameter_bytes'] == 2 * x['parameters'] for x in r)
" "$WORK/out"
# The job's shape besides the pipeline: the variant's tp, cp and sequence parallelism and training.zero, as init
# wrote them (cp 1 and no sequence parallelism: init's defaults).
expect 0 "init llama3-70b tp 8 zero 1" -- "$DPS" init --model llama3-70b --device h100-sxm --tp 8 --zero 1 \
    -o "$WORK/l70.dpstudio.json"
expect 0 "model-info llama3-70b tp 8" -- "$DPS" model-info "$WORK/l70.dpstudio.json"
contains "$WORK/out" "job:         tp 8, cp 1, sequence parallel off, ZeRO 1" "model-info text: the job line"
expect 0 "model-info llama3-70b tp 8 --json" -- "$DPS" model-info "$WORK/l70.dpstudio.json" --json
check_py "model-info llama3-70b tp 8 --json: tp, cp, sequence_parallel, zero" "
import json, sys
d = json.load(open(sys.argv[1]))
got = {k: d[k] for k in ('tp', 'cp', 'sequence_parallel', 'zero')}
assert got == {'tp': 8, 'cp': 1, 'sequence_parallel': False, 'zero': 1}, got
assert type(d['sequence_parallel']) is bool and type(d['tp']) is int and type(d['zero']) is int, d
" "$WORK/out"
# For the same device count a middle DualPipe rank holds two stages of twice the layers of DualPipeV's two:
# twice the parameter bytes (8 ranks: DualPipe 8 stages of 4 layers, DualPipeV 16 stages of 2).
expect 0 "init llama3-8b dualpipe" -- "$DPS" init --model llama3-8b --device h100-sxm --schedule dualpipe \
    --ranks 8 --microbatches 16 -o "$WORK/l8-dp.dpstudio.json"
expect 0 "init llama3-8b dualpipev" -- "$DPS" init --model llama3-8b --device h100-sxm --schedule dualpipev \
    --ranks 8 --microbatches 16 -o "$WORK/l8-dpv.dpstudio.json"
expect 0 "simulate llama3-8b dualpipe" -- "$DPS" simulate "$WORK/l8-dp.dpstudio.json" --json
cp "$WORK/out" "$WORK/l8-dp.json"
expect 0 "simulate llama3-8b dualpipev" -- "$DPS" simulate "$WORK/l8-dpv.dpstudio.json" --json
check_py "llama3-8b: a middle DualPipe rank holds twice DualPipeV's parameter bytes" "
import json, sys
a = json.load(open(sys.argv[1]))['ranks'][3]['parameter_bytes']
b = json.load(open(sys.argv[2]))['ranks'][3]['parameter_bytes']
assert b > 0 and a == 2 * b, (a, b)
" "$WORK/l8-dp.json" "$WORK/out"
expect 0 "simulate llama3-8b text" -- "$DPS" simulate "$WORK/l8-dp.dpstudio.json"
contains "$WORK/out" "model:        llama3-8b on h100-sxm: dp 1 × pp 8 = 8 devices (8 per node, 1 node); dense, no expert all-to-all; pipeline hops: 0 of 7 inter-node" \
    "dense model line"

# Overrides: --layers, --seq-len, --microbatch-size, --dp and --recompute go into the file.
expect 0 "init llama3-8b overrides" -- "$DPS" init --model llama3-8b --device h100-sxm --schedule 1f1b --ranks 4 \
    --microbatches 8 --layers 16 --seq-len 4096 --microbatch-size 2 --dp 2 --recompute full --nodes 2 \
    -o "$WORK/l8o.dpstudio.json"
check_py "init overrides in the file" "
import json, sys
p = json.load(open(sys.argv[1]))
m = p['model']
assert (m['layers'], m['seq_len'], m['microbatch_size'], m['recompute']) == (16, 4096, 2, 'full'), m
assert p['variants'][0]['dp'] == 2 and p['cluster']['nodes'] == 2, (p['variants'][0], p['cluster'])
assert p['variants'][0]['layer_partition'] == [4, 4, 4, 4]
" "$WORK/l8o.dpstudio.json"
expect 0 "model-info with overrides" -- "$DPS" model-info "$WORK/l8o.dpstudio.json"

# --- bad flags and unknown presets ---------------------------------------------------------------------
expect 1 "init unknown model preset" -- "$DPS" init --model gpt5 --device h800 -o "$WORK/x.dpstudio.json"
contains "$WORK/err" '--model: unknown model preset "gpt5" (presets: block, deepseek-v3, llama3-405b, llama3-70b, llama3-8b, mixtral-8x7b)' "unknown model preset named"
expect 1 "init unknown device preset" -- "$DPS" init --model llama3-8b --device tpu9 -o "$WORK/x.dpstudio.json"
contains "$WORK/err" '--device: unknown device preset "tpu9" (presets: a100-80g, b200, cpu, h100-sxm, h200, h800, mi300x)' "unknown device preset named"
expect 2 "init --model without --device" -- "$DPS" init --model llama3-8b -o "$WORK/x.dpstudio.json"
contains "$WORK/err" "--model needs --device PRESET" "missing --device named"
expect 2 "init --device without --model" -- "$DPS" init --device h800 -o "$WORK/x.dpstudio.json"
contains "$WORK/err" "go with --model PRESET" "preset flags without --model"
expect 2 "init --hidden with --model" -- "$DPS" init --model llama3-8b --device h800 --hidden 1024 \
    -o "$WORK/x.dpstudio.json"
contains "$WORK/err" "--hidden: cannot be combined with --model" "fixed shape flag refused"
expect 2 "init --dp 0" -- "$DPS" init --model llama3-8b --device h800 --dp 0 -o "$WORK/x.dpstudio.json"
contains "$WORK/err" "--dp: must be at least 1, got 0" "a count flag's range in plain words"
expect 2 "init --layers 1.5" -- "$DPS" init --layers 1.5 -o "$WORK/x.dpstudio.json"
contains "$WORK/err" "--layers: must be an integer, got '1.5'" "a count flag must be an integer"
expect 2 "init bad --recompute" -- "$DPS" init --model llama3-8b --device h800 --recompute some -o "$WORK/x.dpstudio.json"
expect 1 "init more stages than layers" -- "$DPS" init --model llama3-8b --device h800 --schedule 1f1b --ranks 64 \
    --microbatches 64 -o "$WORK/x.dpstudio.json"
contains "$WORK/err" "--model llama3-8b (its model.layers): 32 layers cannot fill the 64 stages of 1f1b" "too many stages named"
for bad in "--tp 3|--tp: 3 does not divide model.heads 32" "--tp 16|--tp: 16 does not divide model.kv_heads 8" \
    "--cp 3|--cp: 3 does not divide model.seq_len 8192" "--zero 4|--zero: must be 0, 1, 2 or 3, got 4" \
    "--tp 0|--tp: must be at least 1, got 0" \
    "--sequence-parallel|--sequence-parallel: needs --tp 2 or more"; do
    flags="${bad%%|*}"
    # shellcheck disable=SC2086 # the flag and its value are two words
    expect 2 "init $flags" -- "$DPS" init --model llama3-8b --device h100-sxm $flags -o "$WORK/x.dpstudio.json"
    contains "$WORK/err" "${bad#*|}" "init $flags names the flag"
done
expect 2 "init --tp on the block model" -- "$DPS" init --tp 2 -o "$WORK/x.dpstudio.json"
contains "$WORK/err" '--tp: only for model.kind "transformer"' "--tp on the block model named"
expect 2 "init --zero without --model" -- "$DPS" init --zero 1 -o "$WORK/x.dpstudio.json"
contains "$WORK/err" "--zero goes with --model PRESET" "--zero without --model named"
if [ -e "$WORK/x.dpstudio.json" ]; then fail "init wrote a file for bad input"; fi
expect 0 "init with tp, cp, sequence parallelism and ZeRO-3" -- "$DPS" init --model llama3-8b --device h100-sxm \
    --ranks 4 --dp 2 --tp 2 --cp 2 --sequence-parallel --zero 3 -o "$WORK/tp.dpstudio.json"
contains "$WORK/out" "4 ranks × tp 2 × cp 2 × dp 2" "init says the sizes"
for key in '"tp": 2' '"cp": 2' '"sequence_parallel": true' '"zero": 3'; do
    contains "$WORK/tp.dpstudio.json" "$key" "init wrote $key"
done
expect 0 "simulate shows tp, cp, ZeRO and MFU" -- "$DPS" simulate "$WORK/tp.dpstudio.json"
contains "$WORK/out" "32 devices, tp 2, cp 2, dp 2, ZeRO-3); MFU" "simulate text names the sizes and MFU"
expect 0 "simulate json" -- "$DPS" simulate "$WORK/tp.dpstudio.json" --json
for key in '"tp": 2' '"cp": 2' '"zero": 3' '"mfu":'; do
    contains "$WORK/out" "$key" "simulate --json has $key"
done
expect 0 "compare json" -- "$DPS" compare "$WORK/tp.dpstudio.json" --json
for key in '"tp": 2' '"cp": 2' '"zero": 3' '"mfu":'; do
    contains "$WORK/out" "$key" "compare --json has $key"
done
expect 0 "compare text" -- "$DPS" compare "$WORK/tp.dpstudio.json"
contains "$WORK/out" "32 (4 × tp 2 × cp 2 × dp 2)" "compare text shows the devices' split"

# --- model-info errors -------------------------------------------------------------------------------
expect 1 "model-info unknown variant" -- "$DPS" model-info "$WORK/ds.dpstudio.json" --variant nope
contains "$WORK/err" "ds.dpstudio.json: --variant: no variant named 'nope' (variants: dualpipe)" "unknown variant named"
expect 2 "model-info missing file" -- "$DPS" model-info "$WORK/missing.dpstudio.json"
contains "$WORK/err" "missing.dpstudio.json" "missing file named"
printf '{"format_version": 2, "model": ' >"$WORK/broken.dpstudio.json"
expect 1 "model-info broken JSON" -- "$DPS" model-info "$WORK/broken.dpstudio.json"
contains "$WORK/err" "broken.dpstudio.json" "broken file named"
# The block model: its totals (16 layers × 2·512·2048 = 33554432 parameters) and a block stage exchanges nothing.
expect 0 "init default" -- "$DPS" init -o "$WORK/block.dpstudio.json"
expect 0 "model-info block --json" -- "$DPS" model-info "$WORK/block.dpstudio.json" --json
check_py "model-info block" "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['parameters_total'] == 33554432 and d['parameters_active'] == 33554432, d
assert [s['layers'] for s in d['stages']] == [2] * 8 and all(s['a2a_bytes'] == 0 for s in d['stages'])
assert all(r['parameters'] == 4 * 2 * 512 * 2048 for r in d['ranks']), d['ranks']
" "$WORK/out"

# --- bad model content: exit 1 naming the field, from every command that reads the project ----------------
expect 0 "init mixtral" -- "$DPS" init --model mixtral-8x7b --device h100-sxm --schedule 1f1b --ranks 4 \
    --microbatches 8 -o "$WORK/mx.dpstudio.json"
edit "$WORK/mx.dpstudio.json" "$WORK/neg-experts.dpstudio.json" "p['model']['moe']['experts'] = -1"
edit "$WORK/mx.dpstudio.json" "$WORK/topk.dpstudio.json" "p['model']['moe']['top_k'] = 9"
edit "$WORK/mx.dpstudio.json" "$WORK/heads.dpstudio.json" "p['model']['heads'] = 7; p['model']['kv_heads'] = 7; p['model'].pop('head_dim', None)"
for cmd in simulate model-info; do
    expect 1 "$cmd: negative experts" -- "$DPS" $cmd "$WORK/neg-experts.dpstudio.json"
    contains "$WORK/err" "neg-experts.dpstudio.json: model.moe.experts: must be a non-negative integer, got -1" \
        "$cmd: negative experts named"
    expect 1 "$cmd: top_k > experts" -- "$DPS" $cmd "$WORK/topk.dpstudio.json"
    contains "$WORK/err" "topk.dpstudio.json: model.moe.top_k: 9 exceeds model.moe.experts 8" "$cmd: top_k named"
    expect 1 "$cmd: heads not dividing hidden" -- "$DPS" $cmd "$WORK/heads.dpstudio.json"
    contains "$WORK/err" "heads.dpstudio.json: model.heads: 7 does not divide model.hidden 4096 (give model.head_dim)" \
        "$cmd: heads named"
done

# --- init --scale tiny: the preset's structure at CPU sizes, on the cpu device by default -------
expect 0 "init --scale tiny" -- "$DPS" init -o "$WORK/tiny.dpstudio.json" --model deepseek-v3 --scale tiny
contains "$WORK/out" "dualpipe (8 ranks × dp 2, 8 stages, 20 microbatches)" "tiny DeepSeek-V3: dp defaults to its ep 2"
check_py "tiny DeepSeek-V3 keeps MLA, 256 experts top-8, 3 dense layers; hidden 64, fp32, cpu" '
import json, sys
p = json.load(open(sys.argv[1]))
m = p["model"]
assert m["preset"] == "deepseek-v3/tiny" and m["attention"] == "mla", m
assert (m["hidden"], m["layers"], m["dtype"], m["seq_len"]) == (64, 8, "fp32", 32), m
moe = m["moe"]
assert (moe["experts"], moe["top_k"], moe["shared_experts"], moe["dense_layers"], moe["ep"]) == (256, 8, 1, 3, 2), moe
assert p["cluster"]["device"] == "cpu", p["cluster"]
' "$WORK/tiny.dpstudio.json"
expect 0 "simulate a tiny project" -- "$DPS" simulate "$WORK/tiny.dpstudio.json"
contains "$WORK/out" "deepseek-v3/tiny on cpu" "the model line names the scaled preset"
# Tiny transformers run for real, correctness against the single-process reference: a dense one (Llama 3 8B,
# DualPipeV on 2 ranks) and DeepSeek-V3 with its expert all-to-all (MLA, 256 experts top-8 split over ep 2:
# DualPipeV on 2 ranks × dp 2 = 4 processes).
expect 0 "init tiny llama3-8b" -- "$DPS" init -o "$WORK/llama.dpstudio.json" --model llama3-8b --scale tiny \
    --schedule dualpipev --ranks 2 --microbatches 6
expect 0 "init tiny deepseek-v3 dualpipev" -- "$DPS" init -o "$WORK/ds-tiny.dpstudio.json" --model deepseek-v3 \
    --scale tiny --schedule dualpipev --ranks 2 --microbatches 4
contains "$WORK/out" "dualpipev (2 ranks × dp 2, 4 stages, 4 microbatches)" "tiny DeepSeek-V3 on 4 processes"
expect 0 "init tiny deepseek-v3 dualpipe" -- "$DPS" init -o "$WORK/ds-dualpipe.dpstudio.json" --model deepseek-v3 \
    --scale tiny --schedule dualpipe --ranks 2 --microbatches 4
if "$DPS" devices --json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["mpirun"]["path"] and d["worker"]["path"] else 1)'; then
    for tiny in llama ds-tiny ds-dualpipe; do
        expect 0 "run tiny $tiny" -- "$DPS" run "$WORK/$tiny.dpstudio.json" -o "$WORK/$tiny.json" --steps 2 --backend cpu
        check_py "the tiny $tiny run passed correctness" '
import json, sys
m = json.load(open(sys.argv[1]))
assert m["correctness"]["passed"], m["correctness"]
assert m["correctness"]["max_grad_error"] < 1e-10, m["correctness"]
' "$WORK/$tiny.json"
        contains "$WORK/out" "rank 0 peak activations" "the $tiny run report compares activations"
    done
    contains "$WORK/err" "2 ranks × dp 2 = 4 processes" "the EP run starts ranks × dp processes"
    # DualPipe's F&B slots hide one half's expert all-to-all behind the other half's compute: the report prints
    # the measured share per rank beside the prediction's, and the run measured some.
    check_py "the tiny DualPipe MoE run hid all-to-all time, and says so per rank" '
import json, re, sys
m = json.load(open(sys.argv[1]))
acts = [a for r in m["ranks"] for a in r["actions"]]
assert all(0 <= a.get("a2a_hidden_us", 0) <= a.get("a2a_us", 0) for a in acts)
assert sum(a.get("a2a_us", 0) for a in acts) > 0, "no all-to-all measured"
assert sum(a.get("a2a_hidden_us", 0) for a in acts if "OVERLAP" in a["action"]) > 0, "nothing hidden"
assert all(a.get("a2a_hidden_us", 0) == 0 for a in acts if "OVERLAP" not in a["action"])
' "$WORK/ds-dualpipe.json"
    # Its peak is the step's end: every other holder's gradients in the replica sum (the experts' only from the
    # holder of the same experts), which the prediction of an engine run counts (docs/memory.md): within 1 %.
    check_py "the tiny DualPipe MoE run's peak memory is predicted" '
import re, sys
rows = re.findall(r"^rank (\d) peak memory .* ([-+]?[\d.]+) %$", open(sys.argv[1]).read(), re.M)
assert len(rows) == 2, rows
assert all(abs(float(e)) <= 1.0 for _, e in rows), rows
' "$WORK/out"
    for r in 0 1; do
        check "the DualPipe run report's a2a hidden line for rank $r" \
            "grep -qE '^rank $r a2a hidden: [0-9.]+ % of .* \\(predicted [0-9.]+ % of .*\\)\$' '$WORK/out'"
    done
else
    echo "skipped: the tiny transformer runs (no mpirun or worker)"
fi
expect 2 "--scale without --model" -- "$DPS" init -o "$WORK/x.dpstudio.json" --scale tiny
expect 2 "--scale huge" -- "$DPS" init -o "$WORK/x.dpstudio.json" --model llama3-8b --scale huge
expect 2 "full scale still needs --device" -- "$DPS" init -o "$WORK/x.dpstudio.json" --model llama3-8b

finish "model_e2e: all checks passed"
