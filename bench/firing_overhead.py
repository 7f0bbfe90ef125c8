#!/usr/bin/python3
"""What the per-layer firing rates cost a training step: `snn-run train` with them (the
default: step and epoch events carry `firing_rates`, written to the log and as TensorBoard
scalars) against `--no-firing-rates` (no counts collected, reduced or written), on the same
model, weights, data and thread count.

For every model: make_case exports it (seeded weights; bench_models.py's sizes), snn-compile
builds the artifact, a synthetic .npy dataset of STEPS batches is written, then each variant
trains with --log and --tensorboard, REPEAT times, interleaved (the order alternates): STEPS
Adam steps and, to take the start-up out, WARMUP steps. A step costs the difference of the two
runs' CPU time (user + system, from wait4) over STEPS - WARMUP: unlike wall time, CPU time
barely moves when other processes share the host (at one thread; more threads add the time
they spin waiting for each other). Per variant the median over the repeats; the overhead is
with / without - 1. The lower quartile of the steps' wall-clock `seconds` (pooled over the
repeats) is printed beside it. The neuron kernels count their spikes in the loop that writes
them in both variants (an integer sum that costs no pass of its own); --baseline-bin DIR adds
a third variant, another build's snn-run (one without the counting), and the overhead is then
with / baseline - 1.

Not a test: run it on an otherwise idle machine if you can.
  bench/firing_overhead.py --bin build/bin [--baseline-bin DIR] [--models csnn,vgg_dvs] [--T 4]
                           [--threads 1] [--batch 16] [--steps 40] [--warmup 5] [--repeat 3]
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
    """The `seconds` of the log's steps after the warm-up."""
    with open(log) as f:
        steps = [json.loads(line) for line in f if '"event":"step"' in line]
    return [s["seconds"] for s in steps[warmup:]]


def train(args, binary, art, data, static, flags, tag, steps):
    """Trains `steps` steps; returns (CPU seconds of the process, the log's step seconds)."""
    log = os.path.join(args.work, f"{tag}.jsonl")
    cmd = [os.path.join(binary, "snn-run"), "train", art, "--data-npy", data,
           "--steps", steps, "--batch-size", args.batch, "--lr", "1e-3",
           "--optimizer", "adam", "--loss", "ce", "--threads", args.threads,
           "--progress", "none", "--log", log,
           "--tensorboard", os.path.join(args.work, f"tb_{tag}"), *flags]
    if static:
        cmd += ["--repeat-time", args.T]
    child = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} failed: {child.stderr.read()}")
    return usage.ru_utime + usage.ru_stime, step_seconds(log, args.warmup)


def measure(args, variants, art, data, static, name):
    """Per variant: CPU seconds per step (median over the repeats), wall seconds per step
    (lower quartile of the pooled steps)."""
    cpu = {tag: [] for tag, _, _ in variants}
    wall = {tag: [] for tag, _, _ in variants}
    for r in range(args.repeat):
        order = variants if r % 2 == 0 else variants[::-1]
        for tag, binary, flags in order:
            full, seconds = train(args, binary, art, data, static, flags,
                                  f"{name}_{tag}_{r}", args.steps)
            short, _ = train(args, binary, art, data, static, flags,
                             f"{name}_{tag}_{r}_short", args.warmup)
            cpu[tag].append((full - short) / (args.steps - args.warmup))
            wall[tag] += seconds
    return ({tag: statistics.median(v) for tag, v in cpu.items()},
            {tag: statistics.quantiles(v, n=4)[0] for tag, v in wall.items()})


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True, help="the build's bin directory")
    p.add_argument("--baseline-bin", help="another build's bin directory (no counting)")
    p.add_argument("--models", default="csnn,vgg_dvs")
    p.add_argument("--T", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", default="/tmp/bench-firing")
    args = p.parse_args()
    if args.steps <= args.warmup:
        sys.exit("error: --steps must exceed --warmup")
    os.makedirs(args.work, exist_ok=True)
    variants = [("without", args.bin, ["--no-firing-rates"]), ("with", args.bin, [])]
    if args.baseline_bin:
        variants.insert(0, ("baseline", args.baseline_bin, ["--no-firing-rates"]))
    tags = [tag for tag, _, _ in variants]
    head = ("| model | T | threads | batch |" + "".join(f" {t} CPU ms/step |" for t in tags) +
            " overhead (CPU) |" + "".join(f" {t} wall ms/step |" for t in tags))
    print(head)
    print("|" + "---|" * (head.count("|") - 1), flush=True)
    for name in args.models.split(","):
        art, data, static = prepare(args, name, args.work)
        cpu, wall = measure(args, variants, art, data, static, name)
        base = cpu[tags[0]]
        print(f"| {name} | {args.T} | {args.threads} | {args.batch} |" +
              "".join(f" {cpu[t] * 1e3:.2f} |" for t in tags) +
              f" {(cpu['with'] / base - 1) * 100:+.2f} % |" +
              "".join(f" {wall[t] * 1e3:.2f} |" for t in tags), flush=True)


if __name__ == "__main__":
    main()
