#!/usr/bin/python3
"""Inference throughput: `snn-run infer --batch-size B` against eager PyTorch inference of the
same model (eval mode, no_grad, the same weights and batches), measured in one run.

For every model and T: make_case exports the model (seeded weights), snn-compile builds the
artifact and a synthetic input of --samples samples is written (csnn, sew_resnet, spiking_mlp:
static images that both sides repeat over T, direct encoding; vgg_dvs: binary event
sequences). Then, interleaved, --repeat times each:
  snn-run   `snn-run infer ART --input x.npy --batch-size B --threads N -v`: its samples/s
            (reading, running and writing the whole file in batches of B);
  PyTorch   this script again as a worker process (`--eager-worker`): the make_case model with
            its exported weights, eval(), torch.no_grad(), torch.set_num_threads(N), one
            OpenBLAS thread as snn-run, the same file in batches of B (reset_net before each);
best of the repeats. The worker also reports each neuron layer's firing rate, and the model's
multiply-accumulates per sample, from which the table gives each side's GFLOP/s against this
machine's dense GEMM peak at N threads (a 1024^3 float32 matmul, measured in the worker).
snn-run's `-v` line says which layers ran on which kernel; it is printed under the row.

Not a test: run it on an otherwise idle machine.
  bench/infer_throughput.py --bin build/bin [--models csnn,vgg_dvs,sew_resnet,spiking_mlp]
                            [--T 4,8] [--threads 1,2] [--batch 32] [--samples 256] [--json F]
"""
import argparse
import json
import os
import re
import shutil
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import (gemm_peak_gflops, layer_stats, model_named,  # noqa: E402
                          synthetic_input, time_major)
from train_throughput import PYTHON, sh  # noqa: E402

def eager_worker(args):
    """Runs in its own process: eager PyTorch inference over the file, JSON on stdout."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python_export"))
    from snnexport import functional
    from snnexport.training.cli import model_from_case

    torch.set_num_threads(args.threads)
    model, meta = model_from_case(args.case)
    model.eval()
    x = torch.from_numpy(np.load(args.input))

    def batches():
        for first in range(0, x.shape[0], args.batch):
            yield time_major(x[first:first + args.batch], args.T, args.static)

    with torch.no_grad():
        stats = layer_stats(model, next(batches()), train=False)  # doubles as warm-up
        t0 = time.perf_counter()
        for xb in batches():
            functional.reset_net(model)
            model(xb)
        seconds = time.perf_counter() - t0
    stats.update(samples_per_s=x.shape[0] / seconds, gemm_peak_gflops=gemm_peak_gflops())
    json.dump(stats, sys.stdout)


def snn_run_infer(snn_run, art, given, out, args, T, static, threads, env):
    cmd = [snn_run, "infer", art, "--input", given, "--output", out, "--batch-size",
           args.batch, "--threads", threads, "-v"] + (["--repeat-time", T] if static else [])
    # The summary line; the firing-rate table follows it.
    lines = sh(cmd, env).stderr.strip().splitlines()
    line = next((l for l in lines if "samples/s" in l), lines[-1] if lines else "")
    m = re.search(r"\(([0-9.]+) samples/s", line)
    if not m:
        sys.exit(f"error: snn-run infer printed no samples/s: {line}")
    return float(m.group(1)), line


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                   help="directory with snn-compile and snn-run (default build/bin)")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-infer"))
    p.add_argument("--models", default="csnn,vgg_dvs,sew_resnet,spiking_mlp")
    p.add_argument("--T", default="4,8", help="comma-separated time steps (default 4,8)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--batch", type=int, default=32, help="samples per batch (default 32)")
    p.add_argument("--samples", type=int, default=2048,
                   help="samples in the input (default 2048)")
    p.add_argument("--repeat", type=int, default=2,
                   help="runs of each side, interleaved; the best is reported (default 2)")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--eager-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--case", help=argparse.SUPPRESS)
    p.add_argument("--input", help=argparse.SUPPRESS)
    p.add_argument("--static", action="store_true", help=argparse.SUPPRESS)
    args, _ = p.parse_known_args()
    if args.eager_worker:
        args.T, args.threads = int(args.T), int(args.threads)
        return eager_worker(args)

    snn_run = os.path.join(args.bin, "snn-run")
    for tool in (snn_run, os.path.join(args.bin, "snn-compile")):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found (build first, or pass --bin)")
    base_env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python_export"),
                    OPENBLAS_NUM_THREADS="1")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rows = []
    for model in args.models.split(","):
        flags, static = model_named(model).flags, model_named(model).static
        for T in (int(t) for t in args.T.split(",")):
            d = os.path.join(args.work, f"{model}_T{T}")
            case, art = os.path.join(d, "case"), os.path.join(d, "artifact")
            sh([PYTHON, "-m", "snnexport.make_case", "--model", model, "--out", case, "--T", T,
                "--N", min(args.batch, 8), "--attempts", 1, "--quiet", *flags], base_env)
            sh([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o",
                art], base_env)
            g = np.random.default_rng(0)
            x = synthetic_input(model_named(model), T, args.samples, g)
            given = os.path.join(d, "x.npy")
            # snn-run reads time-major [T, N, ...] unless the input is repeated over time
            np.save(given, x if static else np.ascontiguousarray(x.transpose(1, 0, 2, 3, 4)))
            np.save(os.path.join(d, "x_samples.npy"), x)
            for threads in (int(t) for t in args.threads.split(",")):
                env = dict(base_env, OMP_NUM_THREADS=str(threads))
                worker = [PYTHON, os.path.abspath(__file__), "--eager-worker", "--case", case,
                          "--input", os.path.join(d, "x_samples.npy"), "--T", T, "--threads",
                          threads, "--batch", args.batch] + (["--static"] if static else [])
                ours, eager, line = 0.0, None, ""
                for rep in range(args.repeat):
                    rate, line = snn_run_infer(snn_run, art, given, os.path.join(d, "y.npy"),
                                               args, T, static, threads, env)
                    ours = max(ours, rate)
                    e = json.loads(sh(worker, env).stdout)
                    if eager is None or e["samples_per_s"] > eager["samples_per_s"]:
                        eager = e
                gflop = 2 * eager["macs_per_sample"] / 1e9  # MACs of all T steps
                row = {"model": model, "T": T, "threads": threads, "batch": args.batch,
                       "samples": args.samples, "snn_run_samples_per_s": ours,
                       "pytorch_samples_per_s": eager["samples_per_s"],
                       "speedup": ours / eager["samples_per_s"],
                       "gflop_per_sample": gflop,
                       "snn_run_gflops": ours * gflop,
                       "pytorch_gflops": eager["samples_per_s"] * gflop,
                       "gemm_peak_gflops": eager["gemm_peak_gflops"],
                       "firing": eager["firing"], "snn_run_report": line}
                rows.append(row)
                print(f"== {model} T={T} threads={threads}: snn-run {ours:.1f}/s, PyTorch "
                      f"{eager['samples_per_s']:.1f}/s, {row['speedup']:.2f}x", flush=True)
                print("   firing: " + ", ".join(f"{k} {v:.1%}" for k, v in
                                                eager["firing"].items()), flush=True)
                print(f"   {line}", flush=True)

    print()
    print("| model | T | threads | snn-run samples/s | PyTorch samples/s | speedup | "
          "snn-run GFLOP/s | PyTorch GFLOP/s | 1-core GEMM GFLOP/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['T']} | {r['threads']} | {r['snn_run_samples_per_s']:.1f} | "
              f"{r['pytorch_samples_per_s']:.1f} | **{r['speedup']:.2f}x** | "
              f"{r['snn_run_gflops']:.1f} | {r['pytorch_gflops']:.1f} | "
              f"{r['gemm_peak_gflops']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": rows}, f, indent=2)


if __name__ == "__main__":
    main()
