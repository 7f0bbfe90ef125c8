#!/usr/bin/python3
"""Checkpoint stall: what saving a checkpoint costs the training steps, saved in the background
(the default), with `--checkpoint-sync`, and not at all.

For every model (the sizes of bench_models.py), make_case exports it with seeded weights,
snn-compile builds the artifact and a synthetic .npy dataset of --steps batches is written. Then
`snn-run train` runs --steps Adam steps three ways, --repeat times each, interleaved: without
checkpoints ("none"), with `--checkpoint DIR --checkpoint-every K` ("background") and the same
with `--checkpoint-sync` ("sync"). A step's time is read from the log: B / samples_per_s (zero_grad
to the optimizer update) plus checkpoint_seconds (the training thread's time on checkpoints after
it: taking the state, waiting for the previous save; with --checkpoint-sync the whole save).
After --warmup steps, pooled over the repeats, per mode:
  step     the median step time without checkpoints (the unit of the stall);
  blocked  the training thread's median time on a save (checkpoint_seconds of the steps that
           saved), as a share of a step;
  stall    what a save adds to the steps, as a share of a step: blocked, plus, for every step
           that began while the background writer ran (checkpoint_writing), the median of those
           steps less the median step without checkpoints (the writer competes for cores and
           memory bandwidth), counted as many times per save as such steps occurred. Medians,
           so that a step slowed by another process on the machine moves the figure little.
Goal: a background save stalls training by less than 10 % of a step.

Not a test: run it on an otherwise idle machine.
  bench/checkpoint_stall.py --bin build/bin [--models vgg_dvs,csnn] [--steps 32] [--every 8]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import model_named, synthetic_input  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"
MODES = ("none", "background", "sync")


def sh(cmd, env=None):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} failed:\n{proc.stderr.strip()}")
    return proc


def prepare(model, args, env):
    """make_case, snn-compile and the dataset; returns (dir, artifact, data flags)."""
    m = model_named(model)
    d = os.path.join(args.work, model)
    case, art = os.path.join(d, "case"), os.path.join(d, "artifact")
    sh([PYTHON, "-m", "snnexport.make_case", "--model", model, "--out", case, "--T", args.T,
        "--N", args.batch, "--attempts", 1, "--quiet", *m.flags], env)
    sh([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art], env)
    S = args.batch * args.steps
    g = np.random.default_rng(0)
    x, y = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(x, synthetic_input(m, args.T, S, g))
    np.save(y, g.integers(0, 10, S).astype(np.int64))
    data = ["--data-npy", f"{x},{y}"] + (["--repeat-time", args.T] if m.static else [])
    return d, art, data


def step_times(log, batch):
    """Per step: (training seconds, checkpoint seconds, begun while a save was written)."""
    rows = []
    with open(log) as f:
        for line in f:
            e = json.loads(line)
            if e.get("event") == "step":
                rows.append((batch / e["samples_per_s"], e.get("checkpoint_seconds", 0.0),
                             e.get("checkpoint_writing", False)))
    return rows


def run_mode(mode, d, art, data, args, rep):
    ck, log = os.path.join(d, f"ck_{mode}"), os.path.join(d, f"{mode}.{rep}.jsonl")
    shutil.rmtree(ck, ignore_errors=True)
    cmd = [os.path.join(args.bin, "snn-run"), "train", art, *data, "--steps", args.steps,
           "--batch-size", args.batch, "--lr", "0.0001", "--optimizer", "adam", "--seed", 0,
           "--threads", args.threads, "--progress", "none", "--log", log]
    if mode != "none":
        cmd += ["--checkpoint", ck, "--checkpoint-every", args.every]
    if mode == "sync":
        cmd.append("--checkpoint-sync")
    sh(cmd)
    size = 0
    if mode != "none":
        with open(os.path.join(ck, "latest")) as f:
            size = os.path.getsize(os.path.join(ck, f.read().strip(), "tensors.bin"))
    return step_times(log, args.batch)[args.warmup:], size


def summarize(runs, base, every, warmup):
    """blocked and stall (seconds per save) over the runs of one mode."""
    saves, writing = [], []
    for rows in runs:
        for i, (t, c, w) in enumerate(rows):
            if (warmup + i + 1) % every == 0:
                saves.append(c)
            elif w:
                writing.append(t + c)
    blocked = float(np.median(saves)) if saves else 0.0
    per_save = len(writing) / max(1, len(saves))
    slowed = (float(np.median(writing)) - base) * per_save if writing else 0.0
    return {"blocked_s": blocked, "stall_s": blocked + slowed, "saves": len(saves),
            "writing_steps_per_save": per_save}


def measure(model, args, env):
    d, art, data = prepare(model, args, env)
    print(f"== {model} ({model_named(model).size}), T={args.T}, B={args.batch}, "
          f"{args.threads} threads, {args.steps} steps, a save every {args.every}", flush=True)
    runs = {mode: [] for mode in MODES}
    size = 0
    for rep in range(args.repeat):
        for mode in (MODES if rep % 2 == 0 else MODES[::-1]):
            rows, bytes_ = run_mode(mode, d, art, data, args, rep)
            size = max(size, bytes_)
            runs[mode].append(rows)
    base = float(np.median([t for rows in runs["none"] for t, _, _ in rows]))
    result = {"model": model, "checkpoint_bytes": size, "step_s": base}
    print(f"   none       step {base * 1e3:8.2f} ms (median)", flush=True)
    for mode in ("background", "sync"):
        r = result[mode] = summarize(runs[mode], base, args.every, args.warmup)
        print(f"   {mode:10s} blocked {r['blocked_s'] * 1e3:8.2f} ms ({r['blocked_s'] / base:6.1%}),"
              f" stall {r['stall_s'] * 1e3:8.2f} ms ({r['stall_s'] / base:6.1%}) per save",
              flush=True)
    return result


def print_table(results):
    print()
    print(f"{'model':8s} {'ckpt MB':>7s} {'step s':>7s} | {'background: blocked':>19s} "
          f"{'stall':>7s} | {'sync: blocked':>13s} {'stall':>7s}")
    for r in results:
        s = r["step_s"]
        bg, sy = r["background"], r["sync"]
        print(f"{r['model']:8s} {r['checkpoint_bytes'] / 1e6:7.2f} {s:7.3f} | "
              f"{bg['blocked_s'] / s:19.1%} {bg['stall_s'] / s:7.1%} | "
              f"{sy['blocked_s'] / s:13.1%} {sy['stall_s'] / s:7.1%}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                   help="directory with snn-compile and snn-run (default build/bin)")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-checkpoint"))
    p.add_argument("--models", default="vgg_dvs,csnn",
                   help="comma-separated (bench_models.py; default vgg_dvs,csnn)")
    p.add_argument("--T", type=int, default=4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="intra-op threads (default: the CPUs available)")
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--every", type=int, default=8, help="--checkpoint-every (default 8)")
    p.add_argument("--warmup", type=int, default=3, help="steps left out (default 3)")
    p.add_argument("--repeat", type=int, default=1, help="runs of each mode (default 1)")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    for tool in ("snn-run", "snn-compile"):
        if not os.access(os.path.join(args.bin, tool), os.X_OK):
            sys.exit(f"error: {tool} not found in {args.bin} (build first, or pass --bin)")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python_export"),
               OMP_NUM_THREADS=str(args.threads))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    results = [measure(model, args, env) for model in args.models.split(",")]
    print_table(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
