#!/usr/bin/python3
"""Training throughput: `snn-run train` against the PyTorch eager reference trainer
(`python3 -m snnexport.train`) on the same model, weights, data, batch, T and thread count,
measured in one run. Also the peak memory (RSS high-water mark) of each process.

For every model and T: make_case exports the model (seeded weights), snn-compile builds the
artifact, a synthetic .npy dataset of STEPS batches is written (csnn: static images with direct
encoding; vgg_dvs: binary event sequences [S, T, 2, H, W]), then both trainers run STEPS Adam
steps with --log. Throughput is steady-state: samples / sum of the per-step times in the logs
after WARMUP steps (both trainers time a step from assembling its batch to the end of the
optimizer update). Wall-clock samples/s over the whole process (startup and data loading
included) is printed too. Peak RSS comes from wait4() on each child.

Not a test: run it on an otherwise idle machine.
  bench/train_throughput.py --bin build/bin [--threads N] [--batch 32] [--steps 10] [--json F]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"


def sh(cmd, env=None):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} failed:\n{proc.stderr.strip()}")
    return proc


def measured(cmd, env, out_path):
    """Runs cmd with stdout+stderr to out_path; returns (wall seconds, peak RSS in MiB)."""
    t0 = time.perf_counter()
    with open(out_path, "wb") as out:
        p = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT,
                             env=env)
        # wait4: this child's own rusage (RUSAGE_CHILDREN would be the max over all children)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    p.returncode = code
    if code != 0:
        with open(out_path, errors="replace") as f:
            tail = f.read()[-2000:]
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} exited {code}:\n{tail.strip()}")
    return wall, usage.ru_maxrss / 1024.0


def steady_rate(log, warmup):
    steps = []
    with open(log) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("event") == "step":
                steps.append(ev)
    if len(steps) <= warmup:
        sys.exit(f"error: {log}: {len(steps)} steps logged, need more than --warmup {warmup}")
    timed = steps[warmup:]
    # a step of B samples took B / samples_per_s seconds; B is constant (drop-last), so the
    # steady rate is the harmonic mean of the per-step rates
    return len(timed) / sum(1.0 / s["samples_per_s"] for s in timed), steps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                   help="directory with snn-compile and snn-run (default build/bin)")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-train"))
    p.add_argument("--models", default="csnn,vgg_dvs")
    p.add_argument("--T", default="4,8", help="comma-separated time steps (default 4,8)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="intra-op threads for both trainers (default: the CPUs available)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2, help="steps left out of the rate")
    p.add_argument("--csnn-width", type=int, default=32)
    p.add_argument("--vgg-width", type=int, default=64)
    p.add_argument("--vgg-image", type=int, default=48)
    p.add_argument("--vgg-blocks", type=int, default=3)
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()

    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python_export"),
               OMP_NUM_THREADS=str(args.threads))
    snn_run = os.path.join(args.bin, "snn-run")
    for tool in (snn_run, os.path.join(args.bin, "snn-compile")):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found (build first, or pass --bin)")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    B = args.batch
    rows = []
    for model in args.models.split(","):
        for T in (int(t) for t in args.T.split(",")):
            d = os.path.join(args.work, f"{model}_T{T}")
            case = os.path.join(d, "case")
            make = [PYTHON, "-m", "snnexport.make_case", "--model", model, "--out", case,
                    "--T", T, "--N", B, "--attempts", 1, "--quiet"]
            S = B * args.steps
            g = np.random.default_rng(0)
            if model == "csnn":
                make += ["--width", args.csnn_width]
                x = g.random((S, 1, 28, 28), dtype=np.float32)
                size = f"width {args.csnn_width}"
            elif model == "vgg_dvs":
                make += ["--width", args.vgg_width, "--image", args.vgg_image,
                         "--blocks", args.vgg_blocks]
                x = (g.random((S, T, 2, args.vgg_image, args.vgg_image)) < 0.3).astype(
                    np.float32)
                size = f"width {args.vgg_width}, {args.vgg_image}px, {args.vgg_blocks} blocks"
            else:
                sys.exit(f"error: --models: unknown model {model!r} (csnn, vgg_dvs)")
            sh(make, env)
            art = os.path.join(d, "artifact")
            sh([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
                "-o", art], env)
            np.save(os.path.join(d, "x.npy"), x)
            np.save(os.path.join(d, "y.npy"), g.integers(0, 10, S).astype(np.int64))
            data = f"{os.path.join(d, 'x.npy')},{os.path.join(d, 'y.npy')}"
            common = ["--data-npy", data, "--steps", args.steps, "--batch-size", B,
                      "--lr", "0.0001", "--optimizer", "adam", "--loss", "mse", "--seed", 0,
                      "--threads", args.threads]
            if model == "csnn":
                common += ["--repeat-time", T]
            print(f"== {model} ({size}), T={T}, B={B}, {args.threads} threads, "
                  f"{args.steps} steps", flush=True)
            runs = {}
            for name, cmd in (
                    ("snn-run", [snn_run, "train", art, *common, "--log",
                                 os.path.join(d, "snn-run.jsonl")]),
                    ("pytorch", [PYTHON, "-m", "snnexport.train", "--init-from-case", case,
                                 *common, "--quiet", "--log",
                                 os.path.join(d, "pytorch.jsonl")])):
                wall, rss = measured(cmd, env, os.path.join(d, f"{name}.out"))
                rate, steps = steady_rate(os.path.join(d, f"{name}.jsonl"), args.warmup)
                runs[name] = {"samples_per_s": rate, "wall_samples_per_s": S / wall,
                              "wall_s": wall, "peak_rss_mib": rss,
                              "first_loss": steps[0]["loss"]}
                print(f"   {name:8s} {rate:9.1f} samples/s steady, {S / wall:8.1f} "
                      f"samples/s wall ({wall:.1f} s), peak RSS {rss:7.0f} MiB", flush=True)
            a, b = runs["snn-run"]["first_loss"], runs["pytorch"]["first_loss"]
            same = abs(a - b) <= 1e-4 * max(abs(b), 1e-6)
            if not same:
                print(f"   warning: first-step losses differ ({a!r} vs {b!r}): not the same "
                      "computation?", flush=True)
            rows.append({"model": model, "size": size, "T": T, "batch": B,
                         "threads": args.threads, "steps": args.steps, "warmup": args.warmup,
                         "same_first_loss": same, **{k: v for k, v in runs.items()},
                         "speedup": runs["snn-run"]["samples_per_s"]
                         / runs["pytorch"]["samples_per_s"]})

    print()
    print(f"{'model':8s} {'T':>2s} {'B':>4s} {'thr':>3s} | {'snn-run/s':>10s} {'RSS MiB':>8s} | "
          f"{'PyTorch/s':>10s} {'RSS MiB':>8s} | {'speedup':>7s} {'wall spd':>8s}")
    for r in rows:
        s, t = r["snn-run"], r["pytorch"]
        print(f"{r['model']:8s} {r['T']:>2d} {r['batch']:>4d} {r['threads']:>3d} | "
              f"{s['samples_per_s']:>10.1f} {s['peak_rss_mib']:>8.0f} | "
              f"{t['samples_per_s']:>10.1f} {t['peak_rss_mib']:>8.0f} | "
              f"{r['speedup']:>6.2f}x {s['wall_samples_per_s'] / t['wall_samples_per_s']:>7.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": rows}, f, indent=2)


if __name__ == "__main__":
    main()
