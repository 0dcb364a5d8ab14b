#!/usr/bin/python3
"""Writes the hand-made traces of tests/data/traces (README.md): Kineto-layout traces with GPU-side spans,
a legacy-layout trace with unescaped names, and broken traces for the error paths. Every time is a round
number chosen by hand so that tests/trace/test_kineto.cpp can assert exact values. Run from this folder:
  /usr/bin/python3 make_handmade.py
"""

import json
import os


def write(path, value, raw=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(raw if raw is not None else json.dumps(value, indent=1) + "\n")


def cpu(name, ts, dur, ext=None):
    e = {"ph": "X", "cat": "user_annotation", "name": name, "pid": 100, "tid": 100, "ts": ts, "dur": dur,
         "args": {}}
    if ext is not None:
        e["args"]["External id"] = ext
    return e


def gpu(name, ts, dur, ext):
    return {"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"External id": ext}}


def memory(ts, total, device_type=1):
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 100, "ts": ts,
            "args": {"Total Reserved": 4 * total, "Total Allocated": total, "Bytes": 256, "Addr": 1234,
                     "Device Type": device_type, "Device Id": 0}}


def kineto(rank, world, events, base_ns=None, device="NVIDIA H100 80GB HBM3"):
    trace = {"schemaVersion": 1,
             "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
             "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85029158912}],
             "traceEvents": events}
    if base_ns is not None:
        trace["baseTimeNanoseconds"] = base_ns
    return trace


# --- kineto-gpu: 1F1B, 2 ranks, 2 microbatches (torch-block.dpstudio.json, variant 1f1b-2mb), one step.
# The CPU-side user annotations only launch (10 µs each); the GPU-side spans carry the time. The files have
# a common base (rank 1's starts 50 µs after rank 0's) and no rank in their names.
steps = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 100, "tid": 100, "ts": 100,
          "dur": 1000, "args": {}}]
rank0 = steps + [
    cpu("PP:0F0", 110, 10, 1), gpu("PP:0F0", 120, 100, 1),
    cpu("PP:0SEND_F0", 125, 5, 2), gpu("PP:0SEND_F0", 220, 10, 2),
    cpu("PP:0F1", 130, 10, 3), gpu("PP:0F1", 230, 100, 3),
    cpu("PP:0SEND_F1", 145, 5, 4), gpu("PP:0SEND_F1", 330, 10, 4),
    cpu("PP:0RECV_B0", 150, 5, 5), gpu("PP:0RECV_B0", 340, 250, 5),
    cpu("PP:0B0", 160, 10, 6), gpu("PP:0B0", 590, 200, 6),
    cpu("PP:0RECV_B1", 175, 5, 7), gpu("PP:0RECV_B1", 790, 170, 7),
    cpu("PP:0B1", 185, 10, 8), gpu("PP:0B1", 960, 200, 8),
    memory(115, 1000), memory(250, 2000), memory(600, 1500), memory(1000, 500), memory(116, 99999, 0),
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", "pid": 0, "tid": 8, "ts": 221, "dur": 8,
     "args": {"External id": 2}},
]
steps1 = [dict(steps[0], ts=60)]
rank1 = steps1 + [
    cpu("PP:1RECV_F0", 70, 5, 11), gpu("PP:1RECV_F0", 70, 110, 11),
    cpu("PP:1F0", 80, 10, 12), gpu("PP:1F0", 180, 150, 12),
    cpu("PP:1B0", 95, 10, 13), gpu("PP:1B0", 330, 200, 13),
    cpu("PP:1SEND_B0", 110, 5, 14), gpu("PP:1SEND_B0", 530, 10, 14),
    cpu("PP:1RECV_F1", 115, 5, 15), gpu("PP:1RECV_F1", 540, 5, 15),
    cpu("PP:1F1", 120, 10, 16), gpu("PP:1F1", 545, 150, 16),
    cpu("PP:1B1", 135, 10, 17), gpu("PP:1B1", 695, 200, 17),
    cpu("PP:1SEND_B1", 150, 5, 18), gpu("PP:1SEND_B1", 895, 10, 18),
]
write("kineto-gpu/worker-a.pt.trace.json", kineto(0, 2, rank0, base_ns=1_700_000_000_000_000_000))
write("kineto-gpu/worker-b.pt.trace.json", kineto(1, 2, rank1, base_ns=1_700_000_000_000_050_000))


# --- kineto-split-overlap: DualPipeV, 2 ranks, 4 microbatches (variant dualpipev), CPU only, no common
# base, ranks from the file names. Every action takes 100 µs, an overlapped slot 200 µs, one after the other
# from the step's start; rank 0's first overlapped slot (0F3;3B1) is written as its two halves, 0F3 then 3B1.
rows = [
    "0F0,0F1,0F2,3F0,3I0,3W0,3F1,(0F3;3B1)OVERLAP_F_B,(3F2;0B0)OVERLAP_F_B,3B2,(3F3;0B1)OVERLAP_F_B,3B3,0I2,0W2,0I3,0W3",
    "1F0,2F0,1F1,2F1,1F2,2B0,(2F2;1B0)OVERLAP_F_B,(1F3;2B1)OVERLAP_F_B,(2F3;1B1)OVERLAP_F_B,2B2,1B2,2I3,1I3,2W3,1W3",
]
for r, row in enumerate(rows):
    start = 1000 * (r + 1)  # each rank's own clock: the step starts at 1000 µs (rank 0), 2000 µs (rank 1)
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": start,
               "dur": 5000, "args": {}}]
    t = start
    for action in row.split(","):
        if action == "(0F3;3B1)OVERLAP_F_B":
            events += [cpu("PP:0F3", t, 100), cpu("PP:3B1", t + 100, 100)]
            t += 200
        else:
            dur = 200 if "OVERLAP" in action else 100
            events.append(cpu("PP:" + action, t, dur))
            t += dur
    write(f"kineto-split-overlap/rank{r}.json", {"traceEvents": events})


# --- legacy-unescaped: the layout torch 1.13 without Kineto writes (a bare array, no cat, no rank, µs from
# each rank's start, names not JSON-escaped), 1F1B on 2 ranks, 2 microbatches (variant 1f1b-2mb), 2 steps.
# A gloo:send span crosses the following actions on the same thread, as real ones do.
def legacy(name, ts, dur, tid=1):
    return '{"name": "%s", "ph": "X", "ts": %d, "dur": %d, "tid": %d, "pid": "CPU functions", "args": {}}' % (
        name, ts, dur, tid)


legacy_rows = [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
for r, row in enumerate(legacy_rows):
    records = [legacy('aten::weird"name\\with\\backslashes', 5, 1)]
    for step in range(2):
        s0 = 10 + 1000 * step + 7 * r  # rank 1's clock started 7 µs earlier
        records.append(legacy("ProfilerStep#%d" % (step + 3), s0, 900))
        t = s0 + 10
        for action in row:
            records.append(legacy("PP:" + action, t, 100))
            if action == "0F0":
                records.append(legacy("PP:0SEND_F0", t + 100, 10))
                records.append(legacy("gloo:send", t + 105, 400))  # crosses 0F1 and 0B0
                t += 10
            t += 100 + 50
    write(f"legacy-unescaped/rank{r}.json", None, raw="[" + ", ".join(records) + "]")


# --- broken traces, each with the one thing wrong its folder names.
ok = lambda r, names: {"distributedInfo": {"rank": r, "world_size": 2}, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}] + [
    cpu("PP:" + n, 10 + 100 * i, 50) for i, n in enumerate(names)]}
good = [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
text = json.dumps(ok(0, good[0]), indent=1)
write("broken/truncated/rank0.json", None, raw=text[: len(text) * 2 // 3])
write("broken/truncated/rank1.json", ok(1, good[1]))
write("broken/missing-rank/rank0.json", ok(0, good[0]))
write("broken/duplicate/rank0.json", ok(0, ["0F0", "0F1", "0F1", "0B0", "0B1"]))
write("broken/duplicate/rank1.json", ok(1, good[1]))
write("broken/mismatch/rank0.json", ok(0, ["0F0", "0F1", "0B0", "0B1", "0F5"]))
write("broken/mismatch/rank1.json", ok(1, good[1]))
no_rank = ok(0, good[0])
del no_rank["distributedInfo"]
write("broken/no-rank/trace.json", no_rank)
