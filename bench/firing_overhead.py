#!/usr/bin/python3
"""What the per-layer firing rates cost a training step: `snn-run train` with them (the
default: step and epoch events carry `firing_rates`, written to the log and as TensorBoard
scalars) against `--no-firing-rates` (no counts collected, reduced or written), on the same
model, weights, data and thread count.

For every model: make_case exports it (seeded weights; bench_models.py's sizes), snn-compile
builds the artifact, a synthetic .npy dataset of STEPS batches is written, then both variants
train STEPS Adam steps with --log and --tensorboard, REPEAT times each, interleaved (the order
alternates). A variant's step time is the median `seconds` of its log's steps after WARMUP,
best of the repeats; the overhead is with / without - 1. The neuron kernels count their spikes
in the loop that writes them in both variants (an integer sum that costs no pass of its own);
--baseline-bin DIR adds a third variant, another build's snn-run (one without the counting),
to measure that part too.

Not a test: run it on an otherwise idle machine.
  bench/firing_overhead.py --bin build/bin [--models csnn,vgg_dvs] [--T 4] [--threads 2]
                           [--batch 16] [--steps 20] [--warmup 5] [--repeat 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import model_named, synthetic_input  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"


def sh(cmd):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} failed: {proc.stderr.strip()}")
    return proc


def prepare(args, name, work):
    """The model's artifact and dataset argument."""
    model = model_named(name)
    case, art = os.path.join(work, f"case_{name}"), os.path.join(work, f"art_{name}")
    env_path = os.path.join(ROOT, "python_export")
    os.environ["PYTHONPATH"] = env_path
    sh([PYTHON, "-m", "snnexport.make_case", "--model", name, *model.flags, "--T", args.T,
        "--N", args.batch, "--attempts", 1, "--out", case, "--quiet"])
    sh([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art])
    samples = args.batch * args.steps
    rng = np.random.default_rng(0)
    x, y = os.path.join(work, f"{name}_x.npy"), os.path.join(work, f"{name}_y.npy")
    np.save(x, synthetic_input(model, args.T, samples, rng))
    np.save(y, rng.integers(0, 10, samples).astype(np.int64))
    return art, f"{x},{y}", model.static


def step_seconds(log, warmup):
    with open(log) as f:
        steps = [json.loads(line) for line in f if '"event":"step"' in line]
    return statistics.median(s["seconds"] for s in steps[warmup:])


def train(args, binary, art, data, static, flags, work, tag):
    log = os.path.join(work, f"{tag}.jsonl")
    tb = os.path.join(work, f"tb_{tag}")
    cmd = [os.path.join(binary, "snn-run"), "train", art, "--data-npy", data,
           "--steps", args.steps, "--batch-size", args.batch, "--lr", "1e-3",
           "--optimizer", "adam", "--loss", "ce", "--threads", args.threads,
           "--progress", "none", "--log", log, "--tensorboard", tb, *flags]
    if static:
        cmd += ["--repeat-time", args.T]
    sh(cmd)
    return step_seconds(log, args.warmup)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True, help="the build's bin directory")
    p.add_argument("--baseline-bin", help="another build's bin directory (no counting)")
    p.add_argument("--models", default="csnn,vgg_dvs")
    p.add_argument("--T", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", default="/tmp/bench-firing")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    variants = [("without", args.bin, ["--no-firing-rates"]), ("with", args.bin, [])]
    if args.baseline_bin:
        variants.insert(0, ("baseline", args.baseline_bin, ["--no-firing-rates"]))
    rows = []
    for name in args.models.split(","):
        art, data, static = prepare(args, name, args.work)
        best = {tag: float("inf") for tag, _, _ in variants}
        for r in range(args.repeat):
            order = variants if r % 2 == 0 else variants[::-1]
            for tag, binary, flags in order:
                seconds = train(args, binary, art, data, static, flags, args.work,
                                f"{name}_{tag}_{r}")
                best[tag] = min(best[tag], seconds)
        rows.append((name, best))
    head = "| model | T | threads | batch |"
    head += "".join(f" {tag} ms/step |" for tag, _, _ in variants) + " overhead |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, best in rows:
        base = best["baseline"] if args.baseline_bin else best["without"]
        cells = "".join(f" {best[tag] * 1e3:.2f} |" for tag, _, _ in variants)
        print(f"| {name} | {args.T} | {args.threads} | {args.batch} |{cells} "
              f"{(best['with'] / base - 1) * 100:+.2f} % |")


if __name__ == "__main__":
    main()
