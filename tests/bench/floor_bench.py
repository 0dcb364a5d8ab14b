#!/usr/bin/env python3
"""Our side of the side-by-side benchmark against its floor: ours/floor on configs a-c.

The side-by-side (../shared/bench/README.md) times DeepSeek's DualPipe(V) reference and `dpstudio run --backend
cpu` on the same model. This script runs our side of it (the same projects, flags and environment) and, in the
same rounds, the floor of such a step on this machine (docs/performance.md, "the floor"):

  floor  the work of the busiest core (the busiest rank; with more ranks than cores, the busiest ranks one core
         runs) done serially: a 1-rank 1F1B project of two blocks per microbatch with as many microbatches as
         that core has stage-microbatches / 2, with DPSTUDIO_WORKER_FIRST_STAGE_INPUT_GRAD=1 when none of them
         is stage 0 (so its first block computes an input gradient as the busy ranks' stages do), started on
         every core at once (one copy per core the pipeline uses, each bound to its own core), so the other
         cores are busy with the same work and share the memory bandwidth as the pipeline's ranks do. A copy's
         value is its median step; the floor of a round is the slowest copy's.

What ours/floor - 1 leaves is the pipeline's own cost: the bubble, the waits for messages, the executor and the
colder caches of a pipelined order. Each round runs ours, then the floor; the table gives the medians over rounds
and the per-round ratios, with the load average (/proc/loadavg) before and after every run: other work on the
machine slows both, so record it beside the numbers.

  tests/bench/floor_bench.py --dpstudio build/bin/dpstudio [--configs a,b,c] [--rounds 3] [--steps 10]
                             [--warmup 2] [--chunks 20] [--out DIR]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# The side-by-side's configs (../shared/bench/reference/side_by_side.py): name, schedule, ranks, hidden, seq,
# microbatch rows; one block per stage, FFN 4 x hidden, fp32.
CONFIGS = [
    ("a", "dualpipev", 2, 1024, 32, 1),
    ("b", "dualpipev", 2, 256, 128, 2),
    ("c", "dualpipe", 4, 256, 128, 2),
]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def bench_env():
    """The side-by-side's environment for our engine: one BLAS thread, glibc keeping its large buffers."""
    env = dict(os.environ)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.setdefault("GLIBC_TUNABLES",
                   "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296")
    return env


def check_call(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    if rc != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {rc}); see {log}")


def init_project(dpstudio, path, schedule, ranks, microbatches, layers, hidden, seq, mb, log):
    check_call([dpstudio, "init", "-o", path, "--force", "--schedule", schedule, "--ranks", str(ranks),
                "--microbatches", str(microbatches), "--layers", str(layers), "--hidden", str(hidden),
                "--ffn", str(4 * hidden), "--seq-len", str(seq), "--microbatch-size", str(mb), "--dtype", "fp32"], log)


def busiest_core(dpstudio, schedule, ranks, chunks, cores):
    """(stage-microbatches of the busiest core, whether any of them is stage 0), from the schedule's text form:
    a rank's stage-microbatches are its forwards; a core runs ceil(ranks / cores) ranks, the busiest ones."""
    text = subprocess.run([dpstudio, "generate", "--schedule", schedule, "--ranks", str(ranks), "--microbatches",
                           str(chunks), "--format", "text"], capture_output=True, text=True, check=True).stdout
    per_rank = []
    for line in text.splitlines():
        forwards = re.findall(r"\b(\d+)F\d+", line.split(":", 1)[1])
        per_rank.append((len(forwards), sum(1 for s in forwards if s == "0")))
    per_rank.sort(key=lambda r: (r[0], -r[1]), reverse=True)
    share = per_rank[: -(-ranks // cores)]
    return sum(r[0] for r in share), sum(r[1] for r in share) > 0


def median_step(measured):
    with open(measured) as f:
        m = json.load(f)
    if not m["correctness"]["passed"]:
        sys.exit(f"{measured}: the correctness check failed")
    return statistics.median(s["makespan_us"] / 1e6 for s in m["steps"])


def run_ours(args, project, out, log):
    """One pipelined run as the side-by-side starts it (--nominal only skips probing this machine for the
    prediction, which is printed, not timed); returns its median step."""
    cmd = [args.dpstudio, "run", project, "--backend", "cpu", "-o", out, "--steps", str(args.steps), "--warmup",
           str(args.warmup), "--threads", "1", "--nominal"]
    check_call(cmd, log)
    return median_step(out)


def floor_plan(dpstudio, schedule, ranks, chunks, cores):
    """What the floor runs for a pipeline: (copies, microbatches of 2 blocks per copy, first-stage input
    gradient on)."""
    work, has_stage0 = busiest_core(dpstudio, schedule, ranks, chunks, cores)
    return min(ranks, cores), -(-work // 2), not has_stage0


def run_floor(args, project, copies, input_grad, outdir, log, env=None):
    """Starts `copies` serial runs at once (`env`: the environment, default bench_env()), copy i bound to core i
    (mpirun binding none, so it keeps that); returns every copy's median step."""
    env = dict(env or bench_env())
    env["OMPI_MCA_hwloc_base_binding_policy"] = "none"
    if input_grad:
        env["DPSTUDIO_WORKER_FIRST_STAGE_INPUT_GRAD"] = "1"
    procs, outs = [], []
    with open(log, "a") as f:
        for i in range(copies):
            out = os.path.join(outdir, f"floor{i}.json")
            outs.append(out)
            cmd = ["taskset", "-c", str(i), args.dpstudio, "run", project, "--backend", "cpu", "-o", out, "--steps",
                   str(args.steps), "--warmup", str(args.warmup), "--threads", "1", "--nominal"]
            f.write("$ " + " ".join(cmd) + "\n")
            f.flush()
            procs.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env))
        codes = [p.wait() for p in procs]
    if any(codes):
        sys.exit(f"a floor run failed (exit codes {codes}); see {log}")
    return [median_step(o) for o in outs]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dpstudio", required=True, help="the dpstudio binary (dpstudio-worker beside it)")
    p.add_argument("--configs", default="a,b,c")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--chunks", type=int, default=20, help="microbatches of the pipeline")
    p.add_argument("--out", help="folder for projects, traces and commands.log (default: a temporary one)")
    args = p.parse_args()
    args.dpstudio = os.path.abspath(args.dpstudio)
    os.environ.update(bench_env())
    out = args.out or tempfile.mkdtemp(prefix="dps-floor-")
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "commands.log")
    cores = os.cpu_count() or 1
    print(f"dpstudio {args.dpstudio}; {cores} cores; load average {loadavg()}; results in {out}", flush=True)

    rows = []
    for name, schedule, ranks, hidden, seq, mb in [c for c in CONFIGS if c[0] in args.configs.split(",")]:
        stages = 2 * ranks if schedule == "dualpipev" else ranks
        cdir = os.path.join(out, name)
        os.makedirs(cdir, exist_ok=True)
        project = os.path.join(cdir, "ours.dpstudio.json")
        init_project(args.dpstudio, project, schedule, ranks, args.chunks, stages, hidden, seq, mb, log)
        copies, pairs, input_grad = floor_plan(args.dpstudio, schedule, ranks, args.chunks, cores)
        floor_project = os.path.join(cdir, "floor.dpstudio.json")
        init_project(args.dpstudio, floor_project, "1f1b", 1, pairs, 2, hidden, seq, mb, log)
        print(f"\n== {name}) {schedule} {ranks} ranks h{hidden} s{seq} mb{mb}: floor = {copies} copies at once of "
              f"a 1-rank run of {pairs} microbatches x 2 blocks (the busiest core's work"
              f"{', every block with its input gradient' if input_grad else ''})", flush=True)
        ours, floor = [], []
        for rnd in range(1, args.rounds + 1):
            before = loadavg()
            ours.append(run_ours(args, project, os.path.join(cdir, f"ours_r{rnd}.json"), log))
            middle = loadavg()
            copies_s = run_floor(args, floor_project, copies, input_grad, cdir, log)
            floor.append(max(copies_s))
            print(f"  r{rnd}: ours {ours[-1]:.4f} s (load {before}), floor {floor[-1]:.4f} s (copies "
                  f"{', '.join(f'{c:.4f}' for c in copies_s)}; load {middle}, after {loadavg()}): ours/floor "
                  f"{ours[-1] / floor[-1]:.3f}", flush=True)
        rows.append((name, schedule, ranks, hidden, seq, mb, ours, floor))

    print("\n| config | ours s | floor s | ours/floor (per round) |\n|---|---|---|---|")
    for name, schedule, ranks, hidden, seq, mb, ours, floor in rows:
        ratios = ", ".join(f"{o / f:.3f}" for o, f in zip(ours, floor))
        print(f"| {name}) {schedule} {ranks} ranks h{hidden} s{seq} mb{mb} | {statistics.median(ours):.4f} "
              f"| {statistics.median(floor):.4f} | **{statistics.median(ours) / statistics.median(floor):.3f}** "
              f"({ratios}) |")
    print(f"\nload average at the end: {loadavg()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
