#!/usr/bin/env bash
# dpstudio generate/validate end to end: golden orders byte for byte, the shared cases' verdicts, constraint
# refusals naming the rule, exit codes for bad flags and unreadable files.
set -u
dp=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE PATTERN -- command...: exit code CODE and (stdout+stderr) matching PATTERN (grep -E), "" = any.
expect() {
  local code=$1 pattern=$2
  shift 3
  "$@" >"$tmp/out" 2>&1
  local got=$?
  if [ "$got" -ne "$code" ]; then
    bad "$* -> exit $got, expected $code"; sed 's/^/    /' "$tmp/out" | head -20; return
  fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/out"; then
    bad "$* -> output does not match /$pattern/"; sed 's/^/    /' "$tmp/out" | head -20; return
  fi
  ok
}

# 1. Golden orders, byte for byte, stdout only (warnings go to stderr).
for golden in "$data"/golden/*.csv; do
  base=$(basename "$golden" .csv)              # e.g. dualpipe_pp8_mb20
  kind=${base%%_*}
  ranks=$(echo "$base" | sed -E 's/.*_pp([0-9]+)_.*/\1/')
  mbs=$(echo "$base" | sed -E 's/.*_mb([0-9]+)$/\1/')
  if "$dp" generate --schedule "$kind" --ranks "$ranks" --microbatches "$mbs" --format csv >"$tmp/gen.csv" 2>"$tmp/gen.err" \
     && cmp -s "$tmp/gen.csv" "$golden"; then ok; else bad "generate $kind $ranks x $mbs differs from $golden"; diff -u "$golden" "$tmp/gen.csv" | head -20; fi
  expect 0 "valid" -- "$dp" validate "$golden"
done
# The DualPipe export warns about the stage-on-two-rows extension on stderr.
"$dp" generate --schedule dualpipe --ranks 4 --microbatches 8 >/dev/null 2>"$tmp/err"
grep -q "PyTorch" "$tmp/err" && ok || bad "dualpipe csv export does not warn about PyTorch's loader"
# -o writes the same bytes.
"$dp" generate --schedule dualpipev --ranks 4 --microbatches 10 -o "$tmp/v.csv" 2>/dev/null
cmp -s "$tmp/v.csv" "$data/golden/dualpipev_pp4_mb10.csv" && ok || bad "generate -o differs from the golden file"

# 2. The shared cases.
expect 1 "deadlock" -- "$dp" validate "$data/cases/deadlock_three_ranks.csv"
expect 1 "rank 0.*0B0" -- "$dp" validate "$data/cases/deadlock_three_ranks.csv"
expect 1 "rank 1.*1F1" -- "$dp" validate "$data/cases/deadlock_three_ranks.csv"
expect 1 "rank 2.*2F1" -- "$dp" validate "$data/cases/deadlock_three_ranks.csv"
expect 1 "0I1" -- "$dp" validate "$data/cases/missing_weight_grad.csv"
expect 0 "valid" -- "$dp" validate "$data/cases/gpipe_with_blank_cells.csv"

# 3. Every kind generates and validates at a few sizes, in every format.
for spec in "gpipe 4 1" "gpipe 4 8" "1f1b 4 4" "1f1b 4 8" "interleaved-1f1b 4 8" "zb-h1 4 8" "zb-v 4 8" \
            "dualpipe 2 4" "dualpipe 8 20" "dualpipev 1 2" "dualpipev 3 7" "dualpipev 5 13"; do
  set -- $spec
  for fmt in csv json text; do
    expect 0 "" -- "$dp" generate --schedule "$1" --ranks "$2" --microbatches "$3" --format $fmt -o "$tmp/s.$fmt"
  done
  expect 0 "valid" -- "$dp" validate "$tmp/s.csv"
done

# 4. Constraints: refused with exit 1 and the rule named.
expect 1 "even" -- "$dp" generate --schedule dualpipe --ranks 3 --microbatches 12
expect 1 "2 ?(x|×|\\*) ?ranks" -- "$dp" generate --schedule dualpipe --ranks 4 --microbatches 6
expect 1 "2 ?(x|×|\\*) ?ranks" -- "$dp" generate --schedule dualpipev --ranks 2 --microbatches 3
expect 1 "stages" -- "$dp" generate --schedule 1f1b --ranks 4 --microbatches 2
expect 1 "microbatch" -- "$dp" generate --schedule gpipe --ranks 4 --microbatches 0
expect 1 "microbatch" -- "$dp" generate --schedule dualpipev --ranks 2 --microbatches 0
expect 1 "2 stages per rank" -- "$dp" generate --schedule zb-v --ranks 2 --microbatches 4 --stages-per-rank 3
# An unknown kind is a bad flag value, like --format xml: exit 2.
expect 2 "unknown schedule" -- "$dp" generate --schedule pipedream --ranks 2 --microbatches 4
# Sizes below 2^31 pairs that would need tens of GB are refused at once, naming the limit.
expect 1 "too large.*2\^26" -- timeout 10 "$dp" generate --schedule dualpipe --ranks 8 --microbatches 100000000
expect 1 "too large" -- timeout 10 "$dp" generate --schedule gpipe --ranks 100000 --microbatches 100000000

# 5. Bad flags and unreadable files: exit 2, one clear line, no crash.
expect 2 "" -- "$dp" generate --schedule dualpipe --ranks four --microbatches 8
expect 2 "" -- "$dp" generate --ranks 4 --microbatches 8
expect 2 "" -- "$dp" frobnicate
expect 2 "cannot read" -- "$dp" validate "$tmp/does-not-exist.csv"
expect 2 "cannot read" -- "$dp" validate "$tmp"
# A malformed cell: exit 1 naming row and column.
printf '0F0,0B0\n1F0,1X0\n' >"$tmp/badcell.csv"
expect 1 "row 2, column 2" -- "$dp" validate "$tmp/badcell.csv"
expect 0 "" -- "$dp" --help

# 6. Files that are not schedules: one line naming the file, exit 1; never "valid".
: >"$tmp/empty.csv"
expect 1 "empty.csv: empty" -- "$dp" validate "$tmp/empty.csv"
printf '\n  \r\n' >"$tmp/blank.csv"
expect 1 "blank.csv: empty" -- "$dp" validate "$tmp/blank.csv"
printf '\177ELF\002\001\000\000rest' >"$tmp/binary.csv"
expect 1 "binary.csv: not a text file" -- "$dp" validate "$tmp/binary.csv"
printf '0F0,0\377\3760\n' >"$tmp/high.csv"
expect 1 "'0.xff.xfe0' is not an action" -- "$dp" validate "$tmp/high.csv"
printf '0F0,0F1,0BW0,0BW1\n1F0,1BW0,1F1,1BW1\n' >"$tmp/bw.csv"
expect 1 "BW is the 2024 dialect's full backward" -- "$dp" validate "$tmp/bw.csv" --dialect current
expect 0 "valid" -- "$dp" validate "$tmp/bw.csv"
# Projects are recognised as JSON even when broken, and errors name the field, not a CSV cell.
printf '{"name": "x", "variants": []}\n' >"$tmp/nover.dpstudio.json"
expect 1 "nover.dpstudio.json: format_version: missing" -- "$dp" validate "$tmp/nover.dpstudio.json"
printf '{"format_version": 1, "model' >"$tmp/cut.dpstudio.json"
expect 1 "cut.dpstudio.json: not valid JSON" -- "$dp" validate "$tmp/cut.dpstudio.json"
: >"$tmp/empty.dpstudio.json"
expect 1 "empty.dpstudio.json: not valid JSON" -- "$dp" validate "$tmp/empty.dpstudio.json"
"$dp" init -o "$tmp/p.dpstudio.json" >/dev/null
sed 's/"efficiency": 0.6/"efficiency": 1e400/' "$tmp/p.dpstudio.json" >"$tmp/overflow.dpstudio.json"
expect 1 "overflow.dpstudio.json: not valid JSON: number overflow" -- "$dp" validate "$tmp/overflow.dpstudio.json"
# A variant breaking a size rule is an invalid variant named by its field; the others are still checked.
sed 's/"stages_per_rank": 2/"stages_per_rank": 3/' "$tmp/p.dpstudio.json" >"$tmp/spr.dpstudio.json"
expect 1 "spr.dpstudio.json \[dualpipev\]: error: variants\[1\].stages_per_rank: DualPipeV needs exactly 2" -- "$dp" validate "$tmp/spr.dpstudio.json"
expect 1 "\[dualpipe\]: valid" -- "$dp" validate "$tmp/spr.dpstudio.json"
sed 's/"microbatches": 20/"microbatches": 100000000/' "$tmp/p.dpstudio.json" >"$tmp/huge.dpstudio.json"
expect 1 "variants\[0\].microbatches: .*too large" -- timeout 10 "$dp" validate "$tmp/huge.dpstudio.json"

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
