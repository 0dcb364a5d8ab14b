#!/bin/sh
# End-to-end checks of dpstudio simulate, compare, export and init.
# Usage: predict_e2e.sh /path/to/dpstudio   (exits non-zero on the first failed check)
set -u
DPS="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
DATA="$HERE/../data"
GOLDEN="$DATA/golden/dualpipe_pp8_mb20.csv"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$0")/lib.sh"

# --- simulate ---------------------------------------------------------------------------------------
expect 0 "simulate golden csv" -- "$DPS" simulate --csv "$GOLDEN" --json
grep -qE '"makespan_us": 66(\.0)?,' "$WORK/out" || fail "golden DualPipe 8x20: makespan 66 expected"
contains "$WORK/out" '"idle_us": 6.0' "golden DualPipe 8x20 idle"
contains "$WORK/out" '"peak_inflight_microbatches": 9' "golden DualPipe 8x20 in-flight"

expect 0 "simulate golden csv, F&B 2.5" -- "$DPS" simulate --csv "$GOLDEN" --cost-fb 2.5 --json
grep -qE '"makespan_us": 59(\.0)?,' "$WORK/out" || fail "golden DualPipe 8x20 with --cost-fb 2.5: makespan 59 expected"

expect 0 "simulate human table" -- "$DPS" simulate --csv "$GOLDEN"
contains "$WORK/out" "makespan:     66 µs" "human simulate"
contains "$WORK/out" "Σ idle ÷ (ranks × makespan)" "bubble rate definition"
contains "$WORK/out" "valid for B ≤ F&B ≤ F+B" "closed form range"

expect 0 "simulate generated kind" -- "$DPS" simulate --schedule 1f1b --ranks 4 --microbatches 8 --json
grep -qE '"makespan_us": 33(\.0)?,' "$WORK/out" || fail "1F1B 4x8 unit costs: makespan (m+p-1)(F+B) = 33 expected"

expect 0 "simulate with trace" -- "$DPS" simulate --schedule dualpipev --ranks 2 --microbatches 4 --trace "$WORK/t.json"
contains "$WORK/t.json" '"PP:0F0"' "trace slices"
contains "$WORK/t.json" '"ph":"C"' "trace memory counters"
contains "$WORK/t.json" '"ph":"s"' "trace flows"
if command -v python3 >/dev/null 2>&1; then
    python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$WORK/t.json" || fail "trace is not valid JSON"
fi

expect 1 "simulate deadlocked csv" -- "$DPS" simulate --csv "$DATA/cases/deadlock_three_ranks.csv"
contains "$WORK/err" "deadlock" "deadlock diagnostics"
expect 2 "simulate missing csv" -- "$DPS" simulate --csv "$WORK/none.csv"
contains "$WORK/err" "none.csv" "missing file named"
expect 2 "simulate without a source" -- "$DPS" simulate
expect 2 "simulate unknown kind" -- "$DPS" simulate --schedule zigzag --ranks 2 --microbatches 4
# Cost flags: a finite number in range, else exit 2 naming the flag (nan once gave a bogus deadlock).
expect 2 "simulate --cost-f nan" -- "$DPS" simulate --schedule 1f1b --ranks 2 --microbatches 2 --cost-f nan
contains "$WORK/err" "--cost-f: must be a number, got 'nan'" "nan cost refused by name"
expect 2 "simulate --cost-fb -1" -- "$DPS" simulate --schedule 1f1b --ranks 2 --microbatches 2 --cost-fb -1
contains "$WORK/err" "--cost-fb: must be 0 or more, got -1" "negative cost refused by name"
expect 2 "simulate --overlap-factor 0" -- "$DPS" simulate --schedule 1f1b --ranks 2 --microbatches 2 --overlap-factor 0
# An empty CSV is not a schedule of zero ranks.
: >"$WORK/empty.csv"
expect 1 "simulate empty csv" -- "$DPS" simulate --csv "$WORK/empty.csv"
contains "$WORK/err" "empty.csv: empty" "empty csv named"

# --- init -------------------------------------------------------------------------------------------
expect 0 "init default" -- "$DPS" init -o "$WORK/p.dpstudio.json"
contains "$WORK/p.dpstudio.json" '"active_variant": "dualpipe"' "init default active variant"
# Each rank's parameter bytes: a DualPipe rank of the default project holds 2 stages × 2 blocks × 2·512·2048
# fp32 parameters = 33554432 bytes.
expect 0 "simulate default project" -- "$DPS" simulate "$WORK/p.dpstudio.json" --json
[ "$(grep -cE '"parameter_bytes": 33554432(\.0)?$' "$WORK/out")" -eq 8 ] || fail "parameter_bytes 33554432 on each of 8 ranks"
expect 2 "init refuses to overwrite" -- "$DPS" init -o "$WORK/p.dpstudio.json"
contains "$WORK/err" "--force" "init overwrite hint"
expect 0 "init --force, one variant" -- "$DPS" init -o "$WORK/v.dpstudio.json" --schedule zb-h1 --ranks 4 \
    --microbatches 8 --layers 8 --hidden 64 --seq-len 16 --microbatch-size 1
contains "$WORK/v.dpstudio.json" '"kind": "zb-h1"' "init variant kind"
contains "$WORK/v.dpstudio.json" '"layer_partition": [2, 2, 2, 2]' "init partition"
expect 0 "simulate a project" -- "$DPS" simulate "$WORK/v.dpstudio.json" --json
contains "$WORK/out" '"kind": "zb-h1"' "simulate project kind"

# --- compare ----------------------------------------------------------------------------------------
expect 0 "compare default project" -- "$DPS" compare
contains "$WORK/out" "dualpipe " "compare lists dualpipe"
contains "$WORK/out" "dualpipev " "compare lists dualpipev"
contains "$WORK/out" "Σ idle ÷ (ranks × makespan)" "compare bubble definition"
expect 0 "compare kinds as json" -- "$DPS" compare "$WORK/p.dpstudio.json" --schedules dualpipe,zb-v,1f1b --json
contains "$WORK/out" '"variant": "zb-v"' "compare --schedules zb-v"
contains "$WORK/out" '"devices": 4' "compare zb-v on stages/2 ranks"

# --- export -----------------------------------------------------------------------------------------
expect 0 "export torch-csv" -- "$DPS" export "$WORK/p.dpstudio.json" --format torch-csv -o "$WORK/exported.csv"
contains "$WORK/err" "PyTorch" "DualPipe CSV extension warning"
"$DPS" generate --schedule dualpipe --ranks 8 --microbatches 20 >"$WORK/generated.csv" 2>/dev/null
cmp -s "$WORK/exported.csv" "$WORK/generated.csv" || fail "export torch-csv differs from generate's csv"
expect 0 "export chrome-trace per rank" -- "$DPS" export "$WORK/p.dpstudio.json" --variant dualpipev \
    --format chrome-trace --per-rank "$WORK/ranks"
for r in 0 1 2 3; do
    contains "$WORK/ranks/rank$r.trace.json" "\"distributedInfo\":{\"backend\":\"simulated\",\"pp_size\":4,\"rank\":$r" \
        "per-rank trace $r"
done
expect 0 "export json" -- "$DPS" export "$WORK/p.dpstudio.json" --variant dualpipev --format json
contains "$WORK/out" '"active_variant": "dualpipev"' "export json active variant"
expect 0 "export validated-config" -- "$DPS" export "$WORK/p.dpstudio.json" --format validated-config -o "$WORK/vc.json"
contains "$WORK/vc.json" '"validated": true' "validated config"
cat >"$WORK/measured.json" <<'JSON'
{"format_version": 1, "command": "dpstudio run", "host": "box", "cpu": "cpu", "mpi_version": "4.1.4",
 "backend": "cpu", "comm": "mpi", "variant": "dualpipe",
 "correctness": {"passed": false, "max_loss_error": 0.5, "max_grad_error": 0.5, "message": "stage 3, w1"},
 "steps": [{"step": 0, "makespan_us": 12.5}], "median_step": 0, "ranks": []}
JSON
expect 1 "export validated-config of a failed run" -- "$DPS" export "$WORK/p.dpstudio.json" \
    --format validated-config --measured "$WORK/measured.json" -o "$WORK/vc2.json"
contains "$WORK/vc2.json" '"validated": false' "failed run not validated"
contains "$WORK/vc2.json" '"median_step_makespan_us": 12.5' "measured summary"

# --- errors -----------------------------------------------------------------------------------------
sed 's/"ranks": 4/"ranks": -3/' "$WORK/p.dpstudio.json" >"$WORK/bad.dpstudio.json"
expect 1 "bad project" -- "$DPS" simulate "$WORK/bad.dpstudio.json"
contains "$WORK/err" "variants[1].ranks: must be a positive integer, got -3" "bad project field named"
expect 1 "bad project in compare" -- "$DPS" compare "$WORK/bad.dpstudio.json"
contains "$WORK/err" "variants[1].ranks" "compare names the field"
sed 's/"format_version": 1/"format_version": 7/' "$WORK/p.dpstudio.json" >"$WORK/new.dpstudio.json"
expect 1 "newer project" -- "$DPS" export "$WORK/new.dpstudio.json" --format json
contains "$WORK/err" "format_version 7 is newer than this build reads (2)" "newer version named"
expect 2 "missing project" -- "$DPS" export "$WORK/missing.dpstudio.json" --format json
contains "$WORK/err" "missing.dpstudio.json" "missing file named"
expect 2 "missing project in compare" -- "$DPS" compare "$WORK/missing.dpstudio.json"
# Broken projects are read as projects (not as CSVs), errors name the field, never "internal error".
printf '{"name": "x"}\n' >"$WORK/nover.dpstudio.json"
expect 1 "simulate project without format_version" -- "$DPS" simulate "$WORK/nover.dpstudio.json"
contains "$WORK/err" "nover.dpstudio.json: format_version: missing" "missing format_version named"
printf 'null\n' >"$WORK/null.dpstudio.json"
expect 1 "simulate null project" -- "$DPS" simulate "$WORK/null.dpstudio.json"
contains "$WORK/err" "null.dpstudio.json: must be a JSON object" "null project named"
sed 's/"efficiency": 0.6/"efficiency": 1e400/' "$WORK/p.dpstudio.json" >"$WORK/overflow.dpstudio.json"
expect 1 "simulate number overflow" -- "$DPS" simulate "$WORK/overflow.dpstudio.json"
contains "$WORK/err" "not valid JSON: number overflow" "overflow is a content error"
sed 's/"stages_per_rank": 2/"stages_per_rank": 3/' "$WORK/p.dpstudio.json" >"$WORK/spr.dpstudio.json"
expect 1 "export broken variant" -- "$DPS" export "$WORK/spr.dpstudio.json" --variant dualpipev --format torch-csv
contains "$WORK/err" "spr.dpstudio.json: variants[1].stages_per_rank: DualPipeV needs exactly 2 stages per rank" "broken variant named"
sed 's/"microbatches": 20/"microbatches": 100000000/' "$WORK/p.dpstudio.json" >"$WORK/huge.dpstudio.json"
expect 1 "simulate huge variant" -- timeout 10 "$DPS" simulate "$WORK/huge.dpstudio.json"
contains "$WORK/err" "variants[0].microbatches: DualPipe of 8 stages" "huge variant refused"
# -o onto a directory or into a missing one: exit 2 with the reason, no temporary file left.
mkdir -p "$WORK/adir"
expect 2 "export onto a directory" -- "$DPS" export "$WORK/p.dpstudio.json" --format json -o "$WORK/adir"
contains "$WORK/err" "adir: cannot write: is a directory" "directory target named"
expect 2 "export into a missing folder" -- "$DPS" export "$WORK/p.dpstudio.json" --format json -o "$WORK/nodir/x.json"
contains "$WORK/err" "nodir/x.json: cannot write: No such file or directory" "missing folder named"
if ls -A "$WORK" | grep -q tmp-dpstudio; then fail "a temporary file was left behind"; fi

# Sizes that overflow are bad input (hidden 10^9, sequence 10^8, microbatch 1000): every command exits 1 naming
# the fields, and init's flags are refused the same way before anything is written.
sed -e 's/"hidden": 512/"hidden": 1000000000/' -e 's/"seq_len": 128/"seq_len": 100000000/' \
    -e 's/"microbatch_size": 2/"microbatch_size": 1000/' "$WORK/p.dpstudio.json" >"$WORK/sizes.dpstudio.json"
SIZES="model.hidden: 1000000000 × model.seq_len 100000000 × model.microbatch_size 1000 × 4 (bytes per fp32 element) activation bytes (one T×h tensor: a layer's input, the message between stages) exceed 2^53 (the largest exact count)"
expect 1 "simulate overflowing sizes" -- "$DPS" simulate "$WORK/sizes.dpstudio.json"
contains "$WORK/err" "sizes.dpstudio.json: $SIZES" "simulate names the overflowing sizes"
expect 1 "compare overflowing sizes" -- "$DPS" compare "$WORK/sizes.dpstudio.json"
contains "$WORK/err" "sizes.dpstudio.json: $SIZES" "compare names the overflowing sizes"
expect 1 "export overflowing sizes" -- "$DPS" export "$WORK/sizes.dpstudio.json" --format json -o "$WORK/sizes.json"
contains "$WORK/err" "sizes.dpstudio.json: $SIZES" "export names the overflowing sizes"
if [ -e "$WORK/sizes.json" ]; then fail "export wrote a file for overflowing sizes"; fi
expect 1 "init overflowing sizes" -- "$DPS" init -o "$WORK/sizes-init.dpstudio.json" --hidden 1000000000 --ffn 2048 \
    --seq-len 100000000 --microbatch-size 1000
contains "$WORK/err" "error: $SIZES" "init names the overflowing sizes"
if [ -e "$WORK/sizes-init.dpstudio.json" ]; then fail "init wrote a file for overflowing sizes"; fi
expect 1 "init overflowing default ffn" -- "$DPS" init -o "$WORK/sizes-init.dpstudio.json" --hidden 536870912
contains "$WORK/err" "model.hidden: 536870912 × 4 (model.ffn defaults to 4 × model.hidden) FFN units exceed 2^31 − 1 (the largest int)" "init names the overflowing default ffn"
if [ -e "$WORK/sizes-init.dpstudio.json" ]; then fail "init wrote a file for an overflowing default ffn"; fi

finish "predict_e2e: all checks passed"
