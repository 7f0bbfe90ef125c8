#!/usr/bin/python3
"""Pipeline parallelism: `snn-run --nproc S train` on pp artifacts with each schedule against
`none` and the PyTorch eager reference trainer, on the same VGG-style model, weights, data,
global batch and T, measured in one run: steady-state samples/s, per-rank peak RSS, per-rank
peak tensor memory, the measured and the theoretical bubble, and what recomputing a stage
saves and costs.

For the model: make_case exports it (seeded weights), snn-compile builds `none` and one pp
artifact per schedule (--topology pp=S, vpp=2 for the interleaved and zero-bubble schedules),
plus 1f1b with every stage recomputed (--pp-memopt-stages 0,..,S-1), all with M microbatches, and a
synthetic event-sequence dataset of STEPS global batches is written. Every trainer runs STEPS
SGD steps (lr 1e-3, MSE, seed 0), REPEAT times, in alternating order:

  PyTorch      python3 -m snnexport.train --init-from-case --microbatches M (eager, one
               process, S x THREADS threads: the accumulation the pipeline computes)
  none         snn-run train, one process, S x THREADS threads (the whole batch at once)
  <schedule>   snn-run --nproc S train on that pp artifact, THREADS threads per rank

Throughput is B / the median step time of rank 0's log after WARMUP steps, best of the repeats.
From the rank logs' end events: peak RSS, `tensor_bytes` (CPU tensor bytes alive when the steps
began, and at most during them: TensorMemory.h) and the bubble (idle share of the step, measured,
and the schedule's theoretical one). "activations" is what the tensors grew by during the steps
less the gradients and the optimizer state (allocated by the first step): the activations kept
for backward and the temporaries at the peak, on the worst rank; its ratio to `none`'s is what
1F1B must keep at most 1/S (plus 10%).

Not a test: run it on an otherwise idle machine with at least S x THREADS cores.
  bench/train_pipeline.py [--stages 2] [--threads 1] [--batch 32] [--microbatches 8]
                          [--steps 10] [--schedules gpipe,1f1b,interleaved_1f1b,zero_bubble]
"""
import argparse
import json
import os
import shutil

import numpy as np

import train_distributed as td

MiB = td.MiB
SCHEDULES = ("gpipe", "1f1b", "interleaved_1f1b", "zero_bubble")
INTERLEAVED = ("interleaved_1f1b", "zero_bubble")


def prepare(args, env, d):
    """make_case, dataset, artifacts. Returns (case, x, y, arts)."""
    case = os.path.join(d, "case")
    B, T, S = args.batch, args.T, args.batch * args.steps
    td.sh([td.PYTHON, "-m", "snnexport.make_case", "--model", "vgg_dvs", "--out", case,
           "--T", T, "--N", B, "--width", args.width, "--image", args.image, "--blocks",
           args.blocks, "--attempts", 1, "--quiet"], env, os.path.join(d, "make_case.out"))
    g = np.random.default_rng(0)
    xp, yp = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(xp, (g.random((S, T, 2, args.image, args.image)) < 0.3).astype(np.float32))
    np.save(yp, g.integers(0, 10, S).astype(np.int64))
    compile_ = [os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx")]
    arts = {"none": os.path.join(d, "artifact_none")}
    td.sh(compile_ + ["-o", arts["none"]], env, os.path.join(d, "compile_none.out"))
    variants = [(s, s, []) for s in args.schedules]
    if args.memopt:
        every = ",".join(str(k) for k in range(args.stages))
        variants.append(("1f1b+recompute", "1f1b", ["--pp-memopt-stages", every]))
    for name, schedule, extra in variants:
        art = os.path.join(d, f"artifact_{name}")
        topology = f"pp={args.stages}" + (",vpp=2" if schedule in INTERLEAVED else "")
        td.sh(compile_ + ["--mode", "pp", "--topology", topology, "--batch-size", B,
                          "--pp-schedule", schedule, "--pp-microbatches", args.microbatches,
                          *extra, "-o", art], env, os.path.join(d, f"compile_{name}.out"))
        arts[name] = art
    return case, xp, yp, arts


def trainers(args, case, xp, yp, arts):
    common = ["--data-npy", f"{xp},{yp}", "--steps", args.steps, "--batch-size", args.batch,
              "--lr", "0.001", "--momentum", "0.9", "--loss", "mse", "--seed", 0]
    threads = args.stages * args.threads
    out = [("PyTorch", 1, [td.PYTHON, "-m", "snnexport.train", "--init-from-case", case,
                           *common, "--microbatches", args.microbatches, "--threads", threads])]
    snn_run = os.path.join(args.bin, "snn-run")
    for name, art in arts.items():
        if name == "none":
            out.append((name, 1, [snn_run, "train", art, *common, "--threads", threads,
                                  "--progress", "none"]))
        else:
            out.append((name, args.stages, [snn_run, "--nproc", args.stages, "train", art,
                                            *common, "--threads", args.threads, "--progress",
                                            "none", "--dist-timeout", 300]))
    return out


def activation_bytes(end):
    """What a rank's tensors grew by during the steps, less the gradients and the optimizer
    state the first step allocates: the activations (and temporaries) at their peak."""
    grown = end["tensor_bytes"]["peak"] - end["tensor_bytes"]["before_steps"]
    return grown - end["grad_bytes"] - end["optimizer_state_bytes"]


def measure(name, ranks, cmd, env, d, rep, args):
    log = os.path.join(d, f"{name}.{rep}.jsonl")
    info, ends = td.measure_trainer(cmd, env, log, os.path.join(d, f"{name}.{rep}.out"), ranks,
                                    args.warmup, args.timeout)
    if ends:
        if all("tensor_bytes" in e for e in ends):
            info["tensor_mib"] = max(e["tensor_bytes"]["peak"] for e in ends) / MiB
            info["activation_mib"] = max(activation_bytes(e) for e in ends) / MiB
        bubbles = [e["bubble"] for e in ends if "bubble" in e]
        if bubbles:
            info["bubble"] = float(np.mean([b["measured"] for b in bubbles]))
            info["bubble_theory"] = float(np.mean([b["theoretical"] for b in bubbles]))
    return info


def run_all(args, env):
    d = os.path.join(args.work, "vgg_dvs")
    os.makedirs(d)
    case, xp, yp, arts = prepare(args, env, d)
    print(f"== vgg_dvs width {args.width}, {args.image}x{args.image}, {args.blocks} blocks, "
          f"T={args.T}, B={args.batch}, {args.microbatches} microbatches, {args.stages} stages "
          f"x {args.threads} threads, {args.steps} steps", flush=True)
    plan = trainers(args, case, xp, yp, arts)
    runs = {}
    os.sync()
    for rep in range(args.repeat):
        for name, ranks, cmd in (plan if rep % 2 == 0 else plan[::-1]):
            tenv = dict(env, OMP_NUM_THREADS=str(args.stages * args.threads if ranks == 1
                                                 else args.threads))
            info = measure(name, ranks, cmd, tenv, d, rep, args)
            best = runs.setdefault(name, {"ranks": ranks, "samples_per_s": 0.0})
            if info["samples_per_s"] > best["samples_per_s"]:
                best.update(info)
            print(f"   {name:16s} {info['samples_per_s']:8.1f} samples/s", flush=True)
    return runs


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def report(runs, args):
    base = runs["PyTorch"]["samples_per_s"]
    none_act = runs.get("none", {}).get("activation_mib")
    print()
    print("| trainer | ranks | samples/s | vs PyTorch | peak RSS MiB/rank | tensor MiB/rank | "
          "activations MiB/rank | vs none | bubble measured | bubble theory |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, v in runs.items():
        act = v.get("activation_mib")
        share = act / none_act if act is not None and none_act else None
        print(f"| {name} | {v['ranks']} | {v['samples_per_s']:.1f} | "
              f"{v['samples_per_s'] / base:.2f}x | {v['peak_rss_mib']:.0f} | "
              f"{fmt(v.get('tensor_mib'), '.1f')} | {fmt(act, '.1f')} | "
              f"{fmt(share, '.2f')} | {fmt(v.get('bubble'), '.2f')} | "
              f"{fmt(v.get('bubble_theory'), '.2f')} |")
    one, rec = runs.get("1f1b"), runs.get("1f1b+recompute")
    if one and rec and one.get("activation_mib") and rec.get("activation_mib"):
        print(f"recomputing every stage: activations {one['activation_mib']:.1f} -> "
              f"{rec['activation_mib']:.1f} MiB on the worst rank, throughput "
              f"{rec['samples_per_s'] / one['samples_per_s']:.2f}x of 1f1b")
    losses = {n: v["first_loss"] for n, v in runs.items()}
    spread = (max(losses.values()) - min(losses.values())) / max(abs(min(losses.values())), 1e-12)
    print(f"first-step losses agree to {spread:.1e} relative (none takes the whole batch at once, "
          "so it differs by the BatchNorm statistics)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--bin", default=os.path.join(td.ROOT, "build", "bin"))
    p.add_argument("--work", default=os.path.join(td.ROOT, "build", "bench-train-pp"))
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="threads per rank")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--microbatches", type=int, default=8)
    p.add_argument("--T", type=int, default=4)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--image", type=int, default=32)
    p.add_argument("--blocks", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--schedules", default=",".join(SCHEDULES))
    p.add_argument("--memopt", action=argparse.BooleanOptionalAction, default=True,
                   help="also run 1f1b with every stage recomputed")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    args.schedules = [s for s in args.schedules.split(",") if s]
    bad = [s for s in args.schedules if s not in SCHEDULES]
    if bad or args.batch % args.microbatches:
        td.fail(f"bad --schedules {bad}" if bad else "--microbatches must divide --batch")
    env = dict(os.environ, PYTHONPATH=os.path.join(td.ROOT, "python_export"))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    runs = run_all(args, env)
    report(runs, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=2)


if __name__ == "__main__":
    main()
