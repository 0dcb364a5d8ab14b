#!/usr/bin/env python3
"""Predictions of dpstudio against published training runs: docs/validation.md.

Each row builds the published configuration with `dpstudio init` (the model and device presets, the run's
parallel sizes), predicts it with `simulate --json` or `model-info --json`, and compares one figure with the
published one. Nothing here is fitted: the published figure is only compared against.

  validate-published.py DPSTUDIO             print the table
  validate-published.py DPSTUDIO --write F   write the document F (docs/validation.md)
  validate-published.py DPSTUDIO --check F   exit 1 when F differs from what the model gives now
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# 180K H800 GPU-hours per trillion tokens (DeepSeek-V3 Technical Report, §1 and Table 1):
# 1e12 tokens / (180e3 GPU-hours × 3600 s) per GPU.
DEEPSEEK_TOKENS_PER_GPU_SECOND = 1e12 / (180e3 * 3600)


def run(binary, *args):
    out = subprocess.run([binary, *args], check=True, capture_output=True, text=True)
    return out.stdout


def project(binary, folder, name, init_args, variant=None, training=None, moe=None):
    """Writes a project with `init`, then sets variant, training and model.moe fields the flags do not reach."""
    path = os.path.join(folder, name + ".dpstudio.json")
    run(binary, "init", "-o", path, "--force", *init_args)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    doc["variants"][0].update(variant or {})
    doc.setdefault("training", {}).update(training or {})
    if moe:
        doc["model"]["moe"].update(moe)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    return path


def simulate(binary, path):
    return json.loads(run(binary, "simulate", path, "--json"))


def tokens_per_device_second(sim):
    return sim["tokens_per_s_per_device"]


def peak_and_limit(sim):
    ranks = sim["ranks"]
    peak = max(r["peak_memory_bytes"] for r in ranks)
    return peak, sim["memory_per_device_bytes"]


def rows(binary, folder):
    out = []
    # 1. DeepSeek-V3 on its own cluster (report §3.1-3.3): 2048 H800, DualPipe over 16 ranks, EP 64, ZeRO-1 over
    # 128 replicas; global batch 15360 sequences of 4096 tokens = 120 sequences per replica per step.
    ds = project(binary, folder, "deepseek-v3-h800", ["--model", "deepseek-v3", "--device", "h800", "--nodes", "256",
                 "--gpus-per-node", "8", "--schedule", "dualpipe", "--ranks", "16", "--dp", "128",
                 "--microbatches", "120"])
    sim = simulate(binary, ds)
    peak, limit = peak_and_limit(sim)
    out.append({
        "run": "DeepSeek-V3, 2048 H800, DualPipe PP 16, EP 64, ZeRO-1, GBS 15360 × 4096 (report §3.1–3.3)",
        "figure": "peak memory per device",
        "published": "fits 80 GB", "predicted": "%.1f GiB of %.1f GiB" % (peak / 2**30, limit / 2**30),
        "error": "—", "target": "fits", "meets": peak <= limit})
    tps = tokens_per_device_second(sim)
    out.append(row_within("DeepSeek-V3, 2048 H800 (as above)",
                          "tokens/s per GPU (180K GPU-hours per 10¹² tokens)", DEEPSEEK_TOKENS_PER_GPU_SECOND, tps,
                          0.15, "%.0f"))
    # 2. NVIDIA Megatron-Bridge performance table: DeepSeek-V3 on 1024 H100, TP 2 (sequence parallel), PP 8,
    # VP 4, EP 64, MBS 1, GBS 8192 = 128 microbatches per replica of dp 64; BF16: nothing is quantized, so the
    # tokens are dispatched in BF16 too (the preset's FP8 dispatch is DeepSeek's FP8 recipe, report §3.3.3).
    h100 = {"tp": 2, "sequence_parallel": True}
    init = ["--model", "deepseek-v3", "--device", "h100-sxm", "--nodes", "128", "--gpus-per-node", "8",
            "--schedule", "interleaved-1f1b", "--ranks", "8", "--stages-per-rank", "4", "--dp", "64",
            "--microbatches", "128"]
    bf16 = project(binary, folder, "deepseek-v3-h100-bf16", init, h100,
                   {"gemm_dtype": "bf16", "activation_cache_dtype": "bf16"}, {"dispatch_dtype": "bf16"})
    out.append(row_within("DeepSeek-V3, 1024 H100, TP 2, PP 8, VP 4, EP 64, GBS 8192, BF16 (Megatron-Bridge)",
                          "tokens/s per GPU", 1297.0, tokens_per_device_second(simulate(binary, bf16)), 0.15, "%.0f"))
    fp8 = project(binary, folder, "deepseek-v3-h100-fp8", init, h100)
    fp8_tps = tokens_per_device_second(simulate(binary, fp8))
    out.append(row_within("the same with FP8 GEMMs (the preset's precision), for reference",
                          "tokens/s per GPU", 1297.0, fp8_tps, None, "%.0f"))
    # 3. deepseek-ai/profile-data train.json: one overlapped F&B pair of DualPipe, each chunk 4 MoE layers,
    # EP 64, TP 1, 4096 tokens, H800, PP communication left out: a middle stage of row 1's pipeline.
    info = json.loads(run(binary, "model-info", ds, "--json"))
    stage = next(s for s in info["stages"] if s["layers"] == 4 and s["stage"] > 0)
    out.append(row_within("DeepSeek's F&B profile (profile-data train.json): 4 MoE layers, EP 64, seq 4096, H800",
                          "overlapped F&B slot, ms", 129.0, stage["fb_us"] / 1e3, 0.15, "%.1f"))
    out.append(row_within("(the same slot)", "compute stream busy, ms", 118.0, stage["fb_compute_us"] / 1e3, 0.20,
                          "%.1f"))
    out.append(row_within("(the same slot)", "all-to-all stream busy, ms", 114.5, stage["fb_comm_us"] / 1e3, 0.20,
                          "%.1f"))
    return out


def row_within(run_name, figure, published, predicted, tolerance, fmt):
    error = predicted / published - 1.0
    return {"run": run_name, "figure": figure, "published": fmt % published, "predicted": fmt % predicted,
            "error": "%+.1f %%" % (100.0 * error),
            "target": "within %d %%" % round(100 * tolerance) if tolerance is not None else "—",
            "meets": abs(error) <= tolerance if tolerance is not None else None}


def table(rows_):
    lines = ["| run | figure | published | predicted | error | target | meets |",
             "|---|---|---|---|---|---|---|"]
    for r in rows_:
        meets = "—" if r["meets"] is None else ("yes" if r["meets"] else "**no**")
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (r["run"], r["figure"], r["published"],
                                                               r["predicted"], r["error"], r["target"], meets))
    return "\n".join(lines) + "\n"


BEGIN = "<!-- generated by scripts/validate-published.py: begin -->\n"
END = "<!-- generated by scripts/validate-published.py: end -->\n"


def document(template, generated):
    head, _, rest = template.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + BEGIN + generated + END + tail


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dpstudio")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="DOC")
    group.add_argument("--check", metavar="DOC")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        generated = table(rows(args.dpstudio, folder))
    if not args.write and not args.check:
        sys.stdout.write(generated)
        return 0
    path = args.write or args.check
    with open(path, encoding="utf-8") as f:
        current = f.read()
    if BEGIN not in current or END not in current:
        print("%s: no generated block (%s…%s)" % (path, BEGIN.strip(), END.strip()), file=sys.stderr)
        return 1
    wanted = document(current, generated)
    if args.write:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(wanted)
        os.replace(path + ".tmp", path)
        return 0
    if wanted != current:
        print("%s is out of date with the model; the table the model gives now:\n%s" % (path, generated),
              file=sys.stderr)
        print("regenerate it: scripts/validate-published.py %s --write %s" % (args.dpstudio, path), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
