#!/usr/bin/python3
"""The Python API's training loop against `snn-run train` on the same model, weights, data,
batch, mode and thread count, measured in one run: samples/s, and their ratio.

For csnn and vgg_dvs (train_throughput.py's sizes and synthetic data): one process (`snn-run
train` vs a spikemesh loop, --threads threads each) and data parallel on 2 ranks (`snn-run
--nproc 2 train` of a dp=2 artifact vs the loop under torchrun, one thread per rank). Both
train --steps Adam steps (lr 1e-4, MSE on the firing rate); throughput is steady-state (global
batch / the median step after --warmup), best of --repeat interleaved runs. The Python loop
runs as a user's does: spikemesh.apply gives its process snn-run's tuning (one OpenBLAS
thread, activations kept on the heap).

Not a test: run it on an otherwise idle machine.
  bench/python_api_throughput.py --bin build/bin [--models csnn,vgg_dvs] [--batch 32]
"""
import argparse
import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import model_named  # noqa: E402
from train_throughput import PYTHON, prepare_case, sh, steady_rate  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "bench", "python_api_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def snn_run_rate(args, art, data, T, static, ranks, threads, log, env):
    cmd = [os.path.join(args.bin, "snn-run")] + (["--nproc", ranks] if ranks > 1 else []) + \
        ["train", art, "--data-npy", data, "--steps", args.steps, "--batch-size", args.batch,
         "--lr", "0.0001", "--optimizer", "adam", "--loss", "mse", "--seed", 0,
         "--threads", threads, "--log", log] + (["--repeat-time", T] if static else [])
    sh(cmd, env)
    return steady_rate(log, args.warmup)[0]


def python_rate(args, case, data, T, static, ranks, threads, env):
    worker = [WORKER, "--case", case, "--data", data, "--T", T, "--batch", args.batch,
              "--steps", args.steps, "--warmup", args.warmup, "--threads", threads,
              "--mode", "dp" if ranks > 1 else "none"] + (["--static"] if static else [])
    if ranks == 1:
        out = sh([PYTHON] + worker, env).stdout
    else:
        out = sh(["/usr/bin/torchrun", "--redirects", "1", "--tee", "1", "--nproc_per_node",
                  ranks, "--master_addr", "127.0.0.1", "--master_port", free_port()] + worker,
                 env).stdout
    line = [l for l in out.splitlines() if "samples_per_s" in l][-1]
    return json.loads(line[line.index("{"):])["samples_per_s"]


def measure(model, args, env):
    T, static = 4, model_named(model).static
    d, case, art, data, size = prepare_case(model, T, args, env)
    art_dp = os.path.join(d, "artifact-dp2")
    sh([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art_dp,
        "--mode", "dp", "--topology", "dp=2", "--batch-size", args.batch], env)
    rows = []
    for ranks, artifact, threads in ((1, art, args.threads), (2, art_dp, 1)):
        run_env = dict(env, OMP_NUM_THREADS=str(threads))
        best = {"snn-run": 0.0, "python": 0.0}
        for rep in range(args.repeat):
            log = os.path.join(d, f"snn-run.{ranks}.{rep}.jsonl")
            best["snn-run"] = max(best["snn-run"], snn_run_rate(
                args, artifact, data, T, static, ranks, threads, log, run_env))
            best["python"] = max(best["python"], python_rate(
                args, case, data, T, static, ranks, threads, run_env))
        row = {"model": model, "size": size, "ranks": ranks, "threads": threads, **best}
        print(f"   {model} ranks {ranks}: " + ", ".join(f"{k} {v:.1f}" for k, v in best.items()),
              flush=True)
        rows.append(row)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--models", default="csnn,vgg_dvs")
    p.add_argument("--batch", type=int, default=32, help="global batch")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="threads of the one-process runs (dp runs one per rank)")
    p.add_argument("--work", default="/tmp/spikemesh-python-bench")
    p.add_argument("--csnn-width", type=int, default=None)
    p.add_argument("--vgg-width", type=int, default=None)
    p.add_argument("--vgg-image", type=int, default=None)
    p.add_argument("--vgg-blocks", type=int, default=None)
    p.add_argument("--sew-blocks", type=int, default=None)
    p.add_argument("--json", default=None, help="also write the rows here")
    args = p.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(os.path.dirname(args.bin), "python"), os.path.join(ROOT, "python_export")]))
    rows = []
    for model in args.models.split(","):
        print(f"== {model}, T=4, global batch {args.batch}, {args.steps} steps", flush=True)
        rows += measure(model, args, env)
    print("\n| model | ranks | threads/rank | snn-run train samples/s | Python loop samples/s "
          "| Python / snn-run |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} ({r['size']}) | {r['ranks']} | {r['threads']} | "
              f"{r['snn-run']:.1f} | {r['python']:.1f} | {r['python'] / r['snn-run']:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
