#!/bin/bash
# dpstudio lower, validate of compute_comms CSVs, export --format torchtitan|megatron|torch-comms-csv and
# partition: exit codes, cells and characters named, nothing written on error, the DualPipeV CSV read back
# and simulated.
DPS="$1"
DATA="$2"
. "$(dirname "$0")/lib.sh"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PT="$DATA/pytorch"

# Lowering a compute-only CSV gives the hand-worked compute_comms file byte for byte.
expect 0 lower -- "$DPS" lower "$PT/1f1b_pp2_mb2_compute_only.csv" -o "$WORK/lowered.csv"
check "lowered 1F1B is PyTorch's" "cmp -s '$WORK/lowered.csv' '$PT/1f1b_pp2_mb2_compute_comms.csv'"
expect 0 "validate comms" -- "$DPS" validate "$PT/1f1b_pp2_mb2_compute_comms.csv"
contains "$WORK/out" "valid (compute_comms)" "validate comms"

# Bad inputs: exit 1, the cell named, nothing written.
expect 1 "unknown action" -- "$DPS" lower "$PT/bad_unknown_action.csv" -o "$WORK/bad1.csv"
contains "$WORK/err" "row 2, column 8: '1SEND_X1' is not an action" "unknown action"
check "nothing written (unknown action)" "[ ! -e '$WORK/bad1.csv' ]"
expect 1 "send without recv" -- "$DPS" lower "$PT/bad_send_without_recv.csv" -o "$WORK/bad2.csv"
contains "$WORK/err" "rank 0, position 3 (0SEND_F1): 0SEND_F1 has no matching 1RECV_F1 on rank 1" "send without recv"
check "nothing written (send without recv)" "[ ! -e '$WORK/bad2.csv' ]"
expect 1 "overlap ranks" -- "$DPS" validate "$PT/bad_overlap_ranks.csv"
contains "$WORK/out" "the halves of (0F2;1B0)OVERLAP_F_B are on different ranks" "overlap ranks"
expect 1 "comm deadlock" -- "$DPS" validate "$PT/deadlock_recv_order.csv"
contains "$WORK/out" "wait-for cycle: rank 0 -> rank 1 -> rank 0" "comm deadlock"

# Sends and receives timed where they sit (docs/comms.md), latency 1 µs: the well-placed 4-rank program takes 22 µs
# (compute only 21: rank 2's one communicator serves 2SEND_B0 and 2RECV_B1 in turn); 2RECV_F1 moved after 2F0 adds
# its 1 µs transfer: 23 µs, and it is named.
expect 0 "simulate placed comms" -- "$DPS" simulate --csv "$PT/placed_pp4_mb2_compute_comms.csv" --latency 1
contains "$WORK/out" "makespan:     22 µs" "placed comms makespan"
contains "$WORK/out" "compute only 21 µs (+1 µs from the comms)" "placed comms compute only"
expect 0 "simulate late recv" -- "$DPS" simulate --csv "$PT/late_recv_pp4_mb2_compute_comms.csv" --latency 1
contains "$WORK/out" "makespan:     23 µs" "late recv makespan"
contains "$WORK/out" "rank 2, position 2 (2RECV_F1): 2F1 waited 1 µs for it; it came 1 µs after its send was ready (posted only after 2F0 (position 1) ended)" "late recv named"
expect 0 "simulate late recv json" -- "$DPS" simulate --csv "$PT/late_recv_pp4_mb2_compute_comms.csv" --latency 1 --json
check_py "late recv json" "
import json, sys
j = json.load(open(sys.argv[1]))
assert j['makespan_us'] == 23 and j['comms']['compute_only_makespan_us'] == 21, j
s = j['comms']['stalled_receives'][0]
assert (s['rank'], s['position'], s['action'], s['stall_us']) == (2, 2, '2RECV_F1', 1), s
" "$WORK/out"
expect 1 "simulate comm deadlock" -- "$DPS" simulate --csv "$PT/deadlock_recv_order.csv"
contains "$WORK/err" "wait-for cycle: rank 0 -> rank 1 -> rank 0" "simulate comm deadlock"
expect 0 "simulate --comms" -- "$DPS" simulate --schedule 1f1b --ranks 2 --microbatches 2 --comms --latency 1
contains "$WORK/out" "sends and receives timed where they sit" "simulate --comms"
printf '0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n' > "$WORK/deadlock.csv"
expect 1 "--comms of a deadlocking order" -- "$DPS" simulate --csv "$WORK/deadlock.csv" --comms
contains "$WORK/err" "rank 1, position 0 (1F1): rank 1 is stuck at 1F1" "--comms of a deadlocking order"
expect 2 "--comms with a project" -- "$DPS" simulate "$PT/../projects/none.json" --comms
contains "$WORK/err" "--comms goes with --schedule or --csv" "--comms with a project"

# A project with the default model, variants DualPipeV (4 ranks) and DualPipe.
expect 0 init -- "$DPS" init -o "$WORK/p.dpstudio.json"
check_py "add variants" "
import json, sys
p = json.load(open(sys.argv[1]))
v = dict(p['variants'][1]); v['name'] = 'i1f1b'; v['kind'] = 'interleaved-1f1b'; v['stages_per_rank'] = 2; v.pop('layer_partition', None)
p['variants'].append(v)
json.dump(p, open(sys.argv[1], 'w'), indent=2)
" "$WORK/p.dpstudio.json"
VARIANTS=$(python3 -c "import json,sys; print(' '.join(v['name']+':'+v['kind'] for v in json.load(open(sys.argv[1]))['variants']))" "$WORK/p.dpstudio.json")
for pair in $VARIANTS; do
    name=${pair%%:*}
    kind=${pair#*:}
    if [ "$kind" = dualpipev ]; then VNAME=$name; fi
    if [ "$kind" = dualpipe ]; then DNAME=$name; fi
done

# torchtitan: the TOML and the CSV beside it; the CSV validates, reads back and simulates.
expect 0 "torchtitan" -- "$DPS" export "$WORK/p.dpstudio.json" --variant "$VNAME" --format torchtitan -o "$WORK/job.toml"
contains "$WORK/job.toml" 'pipeline_parallel_schedule = "DualPipeV"' "torchtitan name"
contains "$WORK/job.toml" "pipeline_parallel_schedule_csv = \"$WORK/job.csv\"" "torchtitan csv path"
expect 0 "export torch-csv" -- "$DPS" export "$WORK/p.dpstudio.json" --variant "$VNAME" --format torch-csv -o "$WORK/same.csv"
check "the torchtitan CSV is the variant's" "cmp -s '$WORK/job.csv' '$WORK/same.csv'"
expect 0 "simulate the CSV" -- "$DPS" simulate --csv "$WORK/job.csv"
# DualPipe: refused by both, nothing written.
expect 1 "torchtitan dualpipe" -- "$DPS" export "$WORK/p.dpstudio.json" --variant "$DNAME" --format torchtitan -o "$WORK/d.toml"
contains "$WORK/err" "torchtitan cannot run this schedule" "torchtitan dualpipe"
check "nothing written (torchtitan dualpipe)" "[ ! -e '$WORK/d.toml' ] && [ ! -e '$WORK/d.csv' ]"
expect 1 "megatron dualpipe" -- "$DPS" export "$WORK/p.dpstudio.json" --variant "$DNAME" --format megatron -o "$WORK/m.txt"
contains "$WORK/err" "Megatron-Core has no DualPipe schedule" "megatron dualpipe"
check "nothing written (megatron dualpipe)" "[ ! -e '$WORK/m.txt' ]"
expect 0 "megatron interleaved" -- "$DPS" export "$WORK/p.dpstudio.json" --variant i1f1b --format megatron
contains "$WORK/out" "--num-layers-per-virtual-pipeline-stage 2" "megatron interleaved"
# The comms CSV of a variant validates and its compute part simulates.
expect 0 "torch-comms-csv" -- "$DPS" export "$WORK/p.dpstudio.json" --variant "$VNAME" --format torch-comms-csv -o "$WORK/comms.csv"
expect 0 "validate exported comms" -- "$DPS" validate "$WORK/comms.csv"
expect 0 "simulate exported comms" -- "$DPS" simulate --csv "$WORK/comms.csv"

# partition: a Megatron layout into the interleaved variant (8 stages); a wrong layer count names the character.
cp "$WORK/p.dpstudio.json" "$WORK/before.json"
expect 1 "bad layout" -- "$DPS" partition "$WORK/p.dpstudio.json" --variant i1f1b --megatron-layout 'Et*2|t*2|t*2|t*2|t*2|t*2|t*2|tL'
contains "$WORK/err" "the layout has 15 decoder layers (t), the model 16" "bad layout"
check "project untouched" "cmp -s '$WORK/p.dpstudio.json' '$WORK/before.json'"
expect 0 "layout" -- "$DPS" partition "$WORK/p.dpstudio.json" --variant i1f1b --megatron-layout 'Et*3|t*2|t*2|t*2|t*2|t*2|t*2|t*1L' -o "$WORK/q.dpstudio.json"
expect 0 "megatron layout back" -- "$DPS" export "$WORK/q.dpstudio.json" --variant i1f1b --format megatron
contains "$WORK/out" "--pipeline-model-parallel-layout 'Et*3|t*2|t*2|t*2|t*2|t*2|t*2|tL'" "layout round trip"

finish "frameworks e2e: ok"
