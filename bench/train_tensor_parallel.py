#!/usr/bin/python3
"""Tensor parallelism: `snn-run --nproc N train` on tp and fsdp_tp artifacts against none, dp and
the PyTorch eager reference trainer, on the same model, weights, data, global batch and T,
measured in one run: steady-state samples/s, peak RSS and parameter bytes per rank, and the
share of the step spent in tensor-parallel collectives.

For every model: make_case exports it (seeded weights), snn-compile builds one artifact per mode
(`none`; `dp`: --topology dp=N; `tp`: tp=N; `fsdp_tp`: dp=2,tp=N/2, so N >= 4), and a synthetic
.npy dataset of STEPS global batches is written. Every trainer runs STEPS Adam steps (lr 1e-4,
MSE, seed 0), REPEAT times, interleaved with alternating order:

  PyTorch      python3 -m snnexport.train --init-from-case (eager, one process, N x THREADS
               threads)
  none         snn-run train, one process, N x THREADS threads
  dp, tp,      snn-run --nproc N train on those artifacts, THREADS threads per rank
  fsdp_tp

Throughput is B / the median step time of rank 0's log after WARMUP steps, best of the repeats;
RSS and parameter bytes come from the per-rank logs' end events, the communication share from
the step events' `comm` entries (seconds in collectives / step seconds), when the build
logs them.

Not a test: run it on an otherwise idle machine with at least N x THREADS cores.
  bench/train_tensor_parallel.py [--models deep_mlp,csnn,spikformer] [--ranks 2] [--threads 1]
                                 [--batch 32] [--steps 12] [--modes none,dp,tp]
"""
import argparse
import json
import os
import shutil

import numpy as np

import train_distributed as td

MODES = ("none", "dp", "tp", "fsdp_tp")
MiB = td.MiB


def topology(mode, ranks):
    return {"dp": f"dp={ranks}", "tp": f"tp={ranks}", "fsdp_tp": f"dp=2,tp={ranks // 2}"}[mode]


def prepare(model, args, env, d):
    """make_case, dataset, artifacts. Returns (case, x, y, T or None, size, arts, skipped)."""
    case = os.path.join(d, "case")
    B, T, S = args.batch, args.T, args.batch * args.steps
    make = [td.PYTHON, "-m", "snnexport.make_case", "--model", model, "--out", case, "--T", T,
            "--N", B, "--attempts", 1, "--quiet"]
    g = np.random.default_rng(0)
    if model == "deep_mlp":
        make += ["--width", args.mlp_width, "--layers", args.mlp_layers]
        x, repeat_time = g.random((S, T, 64), dtype=np.float32), None
        size = f"{args.mlp_layers} x {args.mlp_width} features"
    elif model == "spikformer":
        s = args.spikformer_image
        make += ["--width", args.spikformer_width, "--image", s, "--blocks",
                 args.spikformer_blocks]
        x, repeat_time = g.random((S, 3, s, s), dtype=np.float32), T
        size = (f"{args.spikformer_blocks} blocks of {args.spikformer_width} channels, 4 heads, "
                f"{s // 16} x {s // 16} tokens")
    else:
        make += ["--width", args.csnn_width]
        x, repeat_time = g.random((S, 1, 28, 28), dtype=np.float32), T
        size = f"width {args.csnn_width}"
    td.sh(make, env, os.path.join(d, "make_case.out"))
    xp, yp = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(xp, x)
    np.save(yp, g.integers(0, 8, S).astype(np.int64))
    arts, skipped = {}, {}
    for mode in args.modes:
        if mode == "fsdp_tp" and (args.ranks < 4 or args.ranks % 2):
            skipped[mode] = "fsdp_tp needs an even --ranks >= 4 (dp=2 x tp=N/2)"
            continue
        art = os.path.join(d, f"artifact_{mode}")
        cmd = [os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art]
        if mode != "none":
            cmd += ["--mode", mode, "--topology", topology(mode, args.ranks), "--batch-size", B]
        if mode in ("tp", "fsdp_tp") and model != "deep_mlp" and args.conv_tp:
            cmd.append("--experimental-conv-tp")
        try:
            td.sh(cmd, env, os.path.join(d, f"compile_{mode}.out"), may_be_unsupported=True)
            arts[mode] = art
        except td.Unsupported as e:
            skipped[mode] = f"snn-compile: {e}"
    return case, xp, yp, repeat_time, size, arts, skipped


def comm_share(log, ranks, warmup, batch):
    """Median over rank 0's steady steps of (seconds in collectives / step seconds), or None.
    A step lasts batch / samples_per_s."""
    stem = log[:-len(".jsonl")]
    path = f"{stem}.rank0.jsonl" if ranks > 1 else log
    shares = []
    with open(path) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("event") != "step" or "comm" not in ev:
                continue
            seconds = [c.get("seconds") for c in ev["comm"]]
            if None in seconds or not ev.get("samples_per_s"):
                return None
            shares.append(sum(seconds) * ev["samples_per_s"] / batch)
    return float(np.median(shares[warmup:])) if len(shares) > warmup else None


def trainers(args, case, xp, yp, T, arts):
    """(name, ranks, command) for every trainer."""
    common = ["--data-npy", f"{xp},{yp}", "--steps", args.steps, "--batch-size", args.batch,
              "--lr", "0.0001", "--optimizer", "adam", "--loss", "mse", "--seed", 0]
    if T is not None:
        common += ["--repeat-time", T]
    threads = args.ranks * args.threads
    out = [("PyTorch", 1, [td.PYTHON, "-m", "snnexport.train", "--init-from-case", case,
                           *common, "--threads", threads])]
    snn_run = os.path.join(args.bin, "snn-run")
    for mode, art in arts.items():
        if mode == "none":
            cmd = [snn_run, "train", art, *common, "--threads", threads, "--progress", "none"]
            out.append((mode, 1, cmd))
        else:
            cmd = [snn_run, "--nproc", args.ranks, "train", art, *common, "--threads",
                   args.threads, "--progress", "none", "--dist-timeout", 120]
            out.append((mode, args.ranks, cmd))
    return out


def measure(name, ranks, cmd, env, d, rep, args):
    log = os.path.join(d, f"{name}.{rep}.jsonl")
    info, ends = td.measure_trainer(cmd, env, log, os.path.join(d, f"{name}.{rep}.out"), ranks,
                                    args.warmup, args.timeout)
    if ends and all("param_bytes" in e for e in ends):
        info["param_mib"] = max(e["param_bytes"] for e in ends) / MiB
    if name in ("tp", "fsdp_tp"):
        info["comm_share"] = comm_share(log, ranks, args.warmup, args.batch)
    return info


def bench_model(model, args, env):
    d = os.path.join(args.work, model)
    os.makedirs(d)
    case, xp, yp, T, size, arts, skipped = prepare(model, args, env, d)
    print(f"== {model} ({size}), T={args.T}, global B={args.batch}, {args.ranks} ranks x "
          f"{args.threads} threads, {args.steps} steps", flush=True)
    runs = {m: {"status": reason} for m, reason in skipped.items()}
    plan = trainers(args, case, xp, yp, T, arts)
    os.sync()
    for rep in range(args.repeat):
        for name, ranks, cmd in (plan if rep % 2 == 0 else plan[::-1]):
            tenv = dict(env, OMP_NUM_THREADS=str(args.ranks * args.threads if ranks == 1
                                                 else args.threads))
            try:
                info = measure(name, ranks, cmd, tenv, d, rep, args)
            except td.Unsupported as e:
                runs[name] = {"status": f"not supported by this build: {e}"}
                continue
            best = runs.setdefault(name, {"status": "ok", "ranks": ranks, "samples_per_s": 0.0})
            if info["samples_per_s"] > best["samples_per_s"]:
                best.update(info)
            print(f"   {name:8s} {info['samples_per_s']:9.1f} samples/s, peak RSS "
                  f"{info['peak_rss_mib']:6.0f} MiB/rank", flush=True)
    return {"model": model, "size": size, "trainers": runs}


def report(rows, args):
    print()
    print("| model | trainer | ranks | samples/s | vs PyTorch | peak RSS MiB/rank | "
          "param MiB/rank | comm share |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        t = r["trainers"]
        base = t.get("PyTorch", {}).get("samples_per_s")
        for name in ("PyTorch",) + tuple(args.modes):
            v = t.get(name)
            if v is None:
                continue
            if v["status"] != "ok":
                print(f"| {r['model']} | {name} | | {v['status']} | | | | |")
                continue
            ratio = f"{v['samples_per_s'] / base:.2f}x" if base else "n/a"
            share = v.get("comm_share")
            param = v.get("param_mib")
            print(f"| {r['model']} ({r['size']}) | {name} | {v['ranks']} | "
                  f"{v['samples_per_s']:.1f} | {ratio} | {v['peak_rss_mib']:.0f} | "
                  f"{'n/a' if param is None else format(param, '.2f')} | "
                  f"{'' if share is None else format(100 * share, '.1f') + '%'} |")
        losses = {n: v["first_loss"] for n, v in t.items() if v.get("status") == "ok"}
        if losses:
            spread = (max(losses.values()) - min(losses.values())) / max(
                abs(min(losses.values())), 1e-12)
            print(f"{r['model']}: first-step losses agree to {spread:.1e} relative "
                  f"({', '.join(f'{n} {l:.6f}' for n, l in losses.items())})")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--bin", default=os.path.join(td.ROOT, "build", "bin"))
    p.add_argument("--work", default=os.path.join(td.ROOT, "build", "bench-train-tp"))
    p.add_argument("--models", default="deep_mlp,csnn")
    p.add_argument("--modes", default="none,dp,tp", help="from " + ", ".join(MODES))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="threads per rank")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--T", type=int, default=4)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--mlp-width", type=int, default=2048)
    p.add_argument("--mlp-layers", type=int, default=4)
    p.add_argument("--csnn-width", type=int, default=32)
    p.add_argument("--spikformer-width", type=int, default=128, help="embed dims (4 heads)")
    p.add_argument("--spikformer-image", type=int, default=64, help="image side (/16: tokens)")
    p.add_argument("--spikformer-blocks", type=int, default=2)
    p.add_argument("--conv-tp", action=argparse.BooleanOptionalAction, default=True,
                   help="compile csnn's tp modes with --experimental-conv-tp")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in args.modes if m not in MODES]
    if bad or args.ranks < 2 or args.batch % args.ranks:
        td.fail(f"bad --modes {bad}" if bad else "--ranks must be >= 2 and divide --batch")
    env = dict(os.environ, PYTHONPATH=os.path.join(td.ROOT, "python_export"))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rows = [bench_model(m, args, env) for m in args.models.split(",")]
    report(rows, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
