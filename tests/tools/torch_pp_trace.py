#!/usr/bin/python3
"""Runs a pipeline schedule CSV on 2-4 gloo ranks with a real torch model and exports each rank's
torch.profiler trace: the test data of `dpstudio import-trace` (docs/profile-import.md).

Each CSV row is one rank's compute order in PyTorch's notation (`2F0`, `3I1`, `0W3`, `1B5`,
`(0F7;7B3)OVERLAP_F_B`); `dpstudio generate --format csv` writes such files. Every action runs inside
`record_function("PP:<action>")`, as PyTorch's `_PipelineScheduleRuntime` names them; the transfers between
ranks run inside `PP:<stage>RECV_F<mb>` (before the action that needs the data: the span covers the wait),
`PP:<stage>SEND_F<mb>`, `PP:<stage>RECV_B<mb>` and `PP:<stage>SEND_B<mb>` (after the action that made it: the
span covers posting the non-blocking send). Neighbouring stages on one rank hand over without a transfer.

The model is DualPipe Studio's block model (docs/project-format.md, "The block model"): per stage
`--layers-per-stage` blocks Linear(hidden->ffn)-GELU(erf)-Linear(ffn->hidden) without biases, MSE loss
on the last stage, so a project with the same sizes predicts the run. `I` is the backward for the
stage's input alone (torch.autograd.grad), `W` the one for its weights, `B` both; an overlapped slot runs
its forward half, then its backward half, in one span.

The steps come from the profiler's own `ProfilerStep#N` spans (torch.profiler.schedule: `--warmup`
steps, then `--steps` recorded ones); every step ends with an SGD update and a barrier, so each step's
span starts on every rank as they leave the same barrier (a barrier also precedes the first step).

Usage (the committed traces: tests/data/traces/README.md):
  dpstudio generate --schedule dualpipev --ranks 2 --microbatches 4 -o dv.csv
  /usr/bin/python3 tests/tools/torch_pp_trace.py --csv dv.csv --out DIR [--steps 2] [--warmup 1] [--gzip]
Writes DIR/rank<N>.json (or .json.gz) and prints the torch version.
"""

import argparse
import gzip
import os
import re
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.profiler import ProfilerActivity, profile, record_function, schedule

COMPUTE = re.compile(r"^(\d+)([FIWB])(\d+)$")
OVERLAP = re.compile(r"^\((\d+)F(\d+);(\d+)B(\d+)\)OVERLAP_F_B$")


def parse_csv(path):
    """Each row: a list of (text, [(stage, kind, mb), ...]) in order; empty cells are idle."""
    rows = []
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            row = []
            for cell in line.split(","):
                cell = cell.strip()
                if not cell:
                    continue
                m = COMPUTE.match(cell)
                o = OVERLAP.match(cell)
                if m:
                    row.append((cell, [(int(m.group(1)), m.group(2), int(m.group(3)))]))
                elif o:
                    row.append((cell, [(int(o.group(1)), "F", int(o.group(2))), (int(o.group(3)), "B", int(o.group(4)))]))
                else:
                    sys.exit(f"{path}:{line_no}: '{cell}' is not a compute action")
            rows.append(row)
    return rows


class Stage(torch.nn.Module):
    """`blocks` blocks of the block model: Linear(h->f), GELU(erf), Linear(f->h), no biases."""

    def __init__(self, blocks, hidden, ffn):
        super().__init__()
        layers = []
        for _ in range(blocks):
            layers += [torch.nn.Linear(hidden, ffn, bias=False), torch.nn.GELU(),
                       torch.nn.Linear(ffn, hidden, bias=False)]
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def run_rank(rank, args, rows, init_file):
    torch.set_num_threads(1)
    ranks = len(rows)
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=ranks)
    stage_rank = {}
    for r, row in enumerate(rows):
        for _, parts in row:
            for s, _, _ in parts:
                stage_rank[s] = r
    stages = max(stage_rank) + 1
    microbatches = 1 + max(mb for row in rows for _, parts in row for _, _, mb in parts)
    shape = (args.tokens, args.hidden)
    torch.manual_seed(args.seed)
    models = {}
    for s in range(stages):  # every rank draws every stage's weights in order: the same model everywhere
        model = Stage(args.layers_per_stage, args.hidden, args.ffn)
        if stage_rank[s] == rank:
            models[s] = model
    inputs = [torch.randn(shape) for _ in range(microbatches)]
    targets = [torch.randn(shape) for _ in range(microbatches)]
    optimizer = torch.optim.SGD([p for m in models.values() for p in m.parameters()], lr=1e-3)

    def tag(kind, s, mb):  # one gloo tag per transfer: direction, receiving stage, microbatch
        return (mb * stages + s) * 2 + (0 if kind == "F" else 1)

    def step():
        saved = {}  # (stage, mb) -> (input, output)
        local = {}  # (kind, stage, mb) -> tensor handed over on this rank
        grads = {}  # (stage, mb) -> gradient of the stage's output
        sends = []
        ready = {}  # (stage, mb) -> a forward's input, fetched before its slot

        def fetch_input(s, mb):
            if s == 0:
                return inputs[mb]
            if stage_rank[s - 1] == rank:
                return local.pop(("F", s, mb))
            buf = torch.empty(shape)
            with record_function(f"PP:{s}RECV_F{mb}"):
                dist.irecv(buf, src=stage_rank[s - 1], tag=tag("F", s, mb)).wait()
            return buf

        def fetch_grad(s, mb):
            if (s, mb) in grads:
                return grads[(s, mb)]
            if s == stages - 1:
                return None
            if stage_rank[s + 1] == rank:
                g = local.pop(("B", s, mb))
            else:
                g = torch.empty(shape)
                with record_function(f"PP:{s}RECV_B{mb}"):
                    dist.irecv(g, src=stage_rank[s + 1], tag=tag("B", s, mb)).wait()
            grads[(s, mb)] = g
            return g

        def hand_over(kind, s, mb, tensor):
            to = s + 1 if kind == "F" else s - 1
            if stage_rank[to] == rank:
                local[(kind, to, mb)] = tensor.detach()
                return
            with record_function(f"PP:{s}SEND_{kind}{mb}"):
                t = tensor.detach().contiguous()
                sends.append((dist.isend(t, dst=stage_rank[to], tag=tag(kind, to, mb)), t))

        def compute(s, kind, mb, after):
            if kind == "F":
                x = ready.pop((s, mb)).detach().requires_grad_(True)
                y = models[s](x)
                if s == stages - 1:
                    y = torch.nn.functional.mse_loss(y, targets[mb])
                saved[(s, mb)] = (x, y)
                if s < stages - 1:
                    after.append(("F", s, mb, y))
                return
            x, y = saved[(s, mb)]
            g = fetch_grad(s, mb)
            params = list(models[s].parameters())
            if kind == "B":
                torch.autograd.backward(y, g)
                del saved[(s, mb)]
                if s > 0:
                    after.append(("B", s, mb, x.grad))
            elif kind == "I":
                (gx,) = torch.autograd.grad(y, [x], g, retain_graph=True)
                if s > 0:
                    after.append(("B", s, mb, gx))
            else:  # W
                gw = torch.autograd.grad(y, params, g)
                for p, gp in zip(params, gw):
                    p.grad = gp if p.grad is None else p.grad + gp
                del saved[(s, mb)]
                grads.pop((s, mb), None)

        for text, parts in rows[rank]:
            # The data each half needs arrives before the slot starts (RECV_* spans); what it made leaves
            # after it (SEND_* spans).
            for s, kind, mb in parts:
                if kind == "F":
                    ready[(s, mb)] = fetch_input(s, mb)
                else:
                    fetch_grad(s, mb)
            after = []
            with record_function(f"PP:{text}"):
                for s, kind, mb in parts:
                    compute(s, kind, mb, after)
            for kind, s, mb, tensor in after:
                hand_over(kind, s, mb, tensor)
        for work, _ in sends:
            work.wait()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        dist.barrier()  # the next ProfilerStep#N span starts on every rank as they leave it

    out_dir = args.out
    suffix = ".json.gz" if args.gzip else ".json"

    def export(prof):
        path = os.path.join(out_dir, f"rank{rank}.json")
        prof.export_chrome_trace(path)
        if args.gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)

    dist.barrier()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 schedule=schedule(wait=0, warmup=args.warmup, active=args.steps), on_trace_ready=export) as prof:
        for _ in range(args.warmup + args.steps):
            step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"torch {torch.__version__}: wrote {ranks} traces rank<N>{suffix} to {out_dir}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", required=True, help="schedule CSV, one row per rank (2 to 4 rows)")
    p.add_argument("--out", required=True, help="folder for rank<N>.json")
    p.add_argument("--steps", type=int, default=2, help="recorded steps (default 2)")
    p.add_argument("--warmup", type=int, default=1, help="steps run before recording (default 1, at least 1)")
    p.add_argument("--layers-per-stage", type=int, default=1)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--tokens", type=int, default=64, help="tokens per microbatch (microbatch size x seq len)")
    p.add_argument("--seed", type=int, default=233)
    p.add_argument("--gzip", action="store_true", help="write rank<N>.json.gz")
    args = p.parse_args()
    rows = parse_csv(args.csv)
    if not 2 <= len(rows) <= 4:
        sys.exit(f"{args.csv}: {len(rows)} rows; this script runs 2 to 4 ranks")
    if args.warmup < 1 or args.steps < 1:
        sys.exit("--warmup and --steps must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "gloo-init")
        mp.spawn(run_rank, args=(args, rows, init_file), nprocs=len(rows), join=True)


if __name__ == "__main__":
    main()
