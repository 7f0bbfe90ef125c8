#!/usr/bin/python3
"""Ported SpikingJelly networks at their real input sizes: snn-run against eager PyTorch.

The networks are SpikingJelly's own code with only the import changed (test/e2e/sj_zoo.py, and
snnexport.models' Spikformer, SpikingJelly's model code):
  sew_resnet18      cnf ADD, IF neurons (ATan), 3 x 224 x 224 images, direct encoding over T
  sew_resnet18_64   the same on 3 x 64 x 64 images
  spikformer_ti     Spikformer, the ti preset (256 wide, 8 heads, 4 blocks), 3 x 224 x 224
  spikformer_ti_32  the same on 3 x 32 x 32 (CIFAR) images
  spiking_vgg11_bn  spiking VGG-11 with BatchNorm, IF neurons (ATan), 3 x 224 x 224
  dvsgesture_net    DVSGestureNet(channels=128), ParametricLIF (ATan, detach_reset), 2 x 128 x 128
                    event frames, 11 classes (the parametric_lif_net paper's setting), T = 16
For each network and each T of --T (default: the network's own), it exports and compiles the
model, sets BatchNorm's statistics and gains from the data (snnexport.reference.calibrate, as the
zoo tests do: every layer fires, as in a trained network), then
  inference  seconds per batch, warm: `snn-run infer -v`'s run time of 1 + k batches less that
             of 1 (a process's first batch makes oneDNN's kernels), over k (at least 4, about
             a second of PyTorch's work), best of --repeat,
             against the PyTorch eval forward of the same module in this process (best of
             --repeat after one warm-up), no_grad, the two interleaved;
  training   `snn-run train` and the reference trainer (snnexport.train in this process: the
             SpikingJelly-style module, SGD momentum, MSE on the firing rate) for --steps steps
             on the same synthetic batches, --train-repeat times each, interleaved; steady
             samples/s = B / the median step time of each one's --log after the first
             --warmup steps, best of the repeats; snn-run's peak RSS (its end event's).
GFLOP/s: the dense-equivalent FLOPs (bench_models.layer_stats: every Conv2d/Linear multiply-add,
spikes or not) per second, against this machine's rates at --threads: a 1024^3 GEMM (OpenBLAS,
one thread, as both sides run BLAS) and a large 3x3 conv2d (oneDNN, channels-last). Under each row:
every neuron layer's firing rate (inference, the calibrated model) and which conv2d/Linear
shapes took the event-driven kernels in training (snn-run's automatic choice: each shape's
crossover density on this machine, the mean density of its inputs, the calls each kernel took);
--dense-kernels keeps every layer on the dense kernels instead.
Both with --threads intra-op threads and one OpenBLAS thread. --reference tuned runs this process
(so the PyTorch side) with snn-run's allocator settings too (bench_models.TUNED_ENV).

Not a test: run it on an otherwise idle machine.
  bench/sj_port.py --bin build/bin [--models sew_resnet18,dvsgesture_net] [--T 4,8]
                   [--threads N] [--batch 4] [--steps 6] [--warmup 2] [--repeat 3]
                   [--dense-kernels]
                   [--reference default|tuned] [--json F]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import TUNED_ENV  # noqa: E402


def reexec_tuned():
    """--reference tuned: this process again, before torch loads, with snn-run's settings."""
    argv = sys.argv[1:]
    tuned = any(a == "--reference=tuned" for a in argv) or any(
        a == "--reference" and i + 1 < len(argv) and argv[i + 1] == "tuned"
        for i, a in enumerate(argv))
    if tuned and any(os.environ.get(k) != v for k, v in TUNED_ENV.items()):
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, **TUNED_ENV))


reexec_tuned()
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before torch: BLAS as snn-run runs it

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "python_export"), os.path.join(ROOT, "test", "e2e")]

import sj_zoo as zoo  # noqa: E402
from bench_models import gemm_peak_gflops, layer_stats  # noqa: E402
from snnexport import export_onnx, functional, models, neuron, reference, surrogate  # noqa: E402
from snnexport import train as tr  # noqa: E402


def sew(T):
    return zoo.sew_resnet18(cnf="ADD", num_classes=10, spiking_neuron=neuron.IFNode,
                            surrogate_function=surrogate.ATan(), detach_reset=True)


def vgg11_bn(T):
    return zoo.spiking_vgg11_bn(num_classes=10, spiking_neuron=neuron.IFNode,
                                surrogate_function=surrogate.ATan(), detach_reset=True)


def dvsgesture(T):
    return zoo.DVSGestureNet(128, spiking_neuron=neuron.ParametricLIFNode,
                             surrogate_function=surrogate.ATan(), detach_reset=True)


def spikformer(size):
    return lambda T: models.spikformer(img_size=size, preset="ti", num_classes=10, T=T)


# name -> (builder(T), default T, per-sample shape, static images?, classes)
MODELS = {
    "sew_resnet18": (sew, 4, [3, 224, 224], True, 10),
    "sew_resnet18_64": (sew, 4, [3, 64, 64], True, 10),
    "spikformer_ti": (spikformer(224), 4, [3, 224, 224], True, 10),
    "spikformer_ti_32": (spikformer(32), 4, [3, 32, 32], True, 10),
    "spiking_vgg11_bn": (vgg11_bn, 4, [3, 224, 224], True, 10),
    "dvsgesture_net": (dvsgesture, 16, [2, 128, 128], False, 11),
}
DENSE_FLAGS = ["--spike-conv-density", "0", "--spike-linear-density", "0"]


def conv_peak_gflops():
    """A 3x3 conv2d, 256 -> 256 channels on 16 x 28 x 28 channels-last (oneDNN, as both sides run
    the networks' convolutions), best of 5: the rate their dense work can approach."""
    x = torch.rand(16, 256, 28, 28).contiguous(memory_format=torch.channels_last)
    w = torch.rand(256, 256, 3, 3).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        torch.nn.functional.conv2d(x, w, padding=1)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            torch.nn.functional.conv2d(x, w, padding=1)
            best = min(best, time.perf_counter() - t0)
    return 2 * 16 * 28 * 28 * 256 * 256 * 9 / best / 1e9


def sh(cmd):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} failed:\n{proc.stderr.strip()}")
    return proc


def batch(T, shape, static, n, g):
    if static:
        return torch.from_numpy(g.random([n] + shape, dtype=np.float32))
    return torch.from_numpy((g.random([n, T] + shape) < 0.3).astype(np.float32))


def time_major(x, T, static):
    return x.unsqueeze(0).repeat(T, *([1] * x.dim())) if static else x.transpose(0, 1)


def build(name, T, x_tm):
    """The network in multi-step mode, its BatchNorms and Linears set from x_tm (every layer
    fires, as in a trained network)."""
    make = MODELS[name][0]
    torch.manual_seed(0)
    net = make(T)
    functional.set_step_mode(net, "m")
    reference.calibrate(net, x_tm, torch.Generator().manual_seed(0))
    functional.reset_net(net)
    return net


def snn_run_infer_seconds(args, art, x, T, static, d, batches):
    """`snn-run infer -v`'s run time of `batches` copies of the batch x, --batch-size B."""
    given, out = os.path.join(d, f"x{batches}.npy"), os.path.join(d, "out.npy")
    xs = torch.cat([x] * batches)
    np.save(given, (xs if static else time_major(xs, T, static).contiguous()).numpy())
    cmd = [os.path.join(args.bin, "snn-run"), "infer", art, "--input", given, "--output", out,
           "--threads", args.threads, "--batch-size", x.shape[0], "-v"]
    cmd += (["--repeat-time", T] if static else []) + (DENSE_FLAGS if args.dense_kernels else [])
    lines = sh(cmd).stderr.strip().splitlines()  # the summary, then the firing rates
    line = next((l for l in lines if "samples/s" in l), lines[-1] if lines else "")
    return float(re.search(r"run ([0-9.]+) ms", line).group(1)) / 1000.0


def bench_infer(args, net, art, x, T, static, d):
    """Seconds per batch, warm: snn-run's from a run of 1 + k batches less a run of 1, over k
    (a process's first batch makes oneDNN's kernels and times the event-driven ones),
    PyTorch's eval forward after a warm-up. None where the difference is lost in the noise."""
    net.eval()
    xt = time_major(x, T, static).contiguous()

    def eager_forward():
        with torch.no_grad():
            functional.reset_net(net)
            t0 = time.perf_counter()
            net(xt)
            return time.perf_counter() - t0

    # Extra batches: at least 4, and about a second of PyTorch's work, so that a process's
    # own noise stays small against their time.
    extra = min(64, max(4, int(math.ceil(1.0 / eager_forward()))))  # also the warm-up
    runs, eager = [], []
    for _ in range(args.repeat):  # interleaved: a load change hits both alike
        one = snn_run_infer_seconds(args, art, x, T, static, d, 1)
        more = snn_run_infer_seconds(args, art, x, T, static, d, 1 + extra)
        if more > one:
            runs.append((more - one) / extra)
        eager.append(eager_forward())
    functional.reset_net(net)
    return (min(runs) if runs else None), min(eager)


def steady(log, warmup):
    """B / the median step time after the first `warmup` steps (oneDNN's kernels made, the
    allocator grown: snn-run's first two steps, PyTorch's first)."""
    steps = [e for e in map(json.loads, open(log)) if e.get("event") == "step"]
    if len(steps) <= warmup:
        sys.exit(f"error: {log}: {len(steps)} steps logged, --warmup {warmup} leaves none")
    return float(np.median([s["samples_per_s"] for s in steps[warmup:]]))


def peak_rss_mib(log):
    """snn-run's own peak RSS from its end event (its address space's high-water mark: a
    parent's wait4 would count this process's, which subprocess's vfork lends the child)."""
    end = next((e for e in map(json.loads, open(log)) if e.get("event") == "end"), {})
    return end.get("peak_rss_bytes", 0) / 2 ** 20


def event_choices(log):
    """The end event's automatic kernel choices: 'shape: mean input density D, event-driven
    up to X: E calls event-driven, N dense'."""
    end = next((e for e in map(json.loads, open(log)) if e.get("event") == "end"), {})
    return [f"{k['layer']}: mean input density {k['mean_density']:.3f}, event-driven up to "
            f"{k['threshold']:.3f}: {k['event_calls']} calls event-driven, "
            f"{k['dense_calls']} dense" for k in end.get("event_kernels", [])]


def bench_train(args, net, art, T, shape, static, classes, d, g):
    S = args.batch * args.steps
    x_path, y_path = os.path.join(d, "tx.npy"), os.path.join(d, "ty.npy")
    np.save(x_path, batch(T, shape, static, S, g).numpy())
    np.save(y_path, g.integers(0, classes, S).astype(np.int64))
    cfg = tr.TrainConfig(batch_size=args.batch, steps=args.steps, lr=0.01, optimizer="sgd",
                         momentum=0.9, loss="mse", repeat_time=T if static else None)
    data = tr.load_npy(x_path, y_path, static=static)
    start = {k: v.clone() for k, v in net.state_dict().items()}
    ours, theirs, rss = [], [], 0.0
    for rep in range(args.train_repeat):  # interleaved, alternating which goes first
        log, ref_log = (os.path.join(d, f"{who}.{rep}.jsonl") for who in ("snn-run", "pytorch"))
        cmd = [os.path.join(args.bin, "snn-run"), "train", art, "--data-npy",
               f"{x_path},{y_path}", "--steps", args.steps, "--batch-size", args.batch,
               "--lr", 0.01, "--optimizer", "sgd", "--momentum", 0.9, "--loss", "mse",
               "--threads", args.threads, "--log", log, "--progress", "none"]
        cmd += (["--repeat-time", T] if static else []) + (
            DENSE_FLAGS if args.dense_kernels else [])
        for who in ((0, 1) if rep % 2 == 0 else (1, 0)):
            net.load_state_dict(start)
            if who == 0:
                sh(cmd)
                rss = max(rss, peak_rss_mib(log))
            else:
                tr.train(net, data, cfg, log_path=ref_log)
        ours.append(steady(log, args.warmup))
        theirs.append(steady(ref_log, args.warmup))
    net.load_state_dict(start)
    return max(ours), max(theirs), rss, event_choices(log)


def measure(args, name, T, peak):
    _, _, shape, static, classes = MODELS[name]
    d = os.path.join(args.work, f"{name}.T{T}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    g = np.random.default_rng(0)
    x = batch(T, shape, static, args.batch, g)
    x_tm = time_major(x, T, static).contiguous()
    net = build(name, T, x_tm)
    stats = layer_stats(net, x_tm, train=False)
    train_flops = layer_stats(net, x_tm, train=True)["train_flops_per_sample"]
    onnx_path, art = os.path.join(d, "model.onnx"), os.path.join(d, "art")
    export_onnx(net, x_tm, onnx_path)
    sh([os.path.join(args.bin, "snn-compile"), onnx_path, "-o", art])
    inf_run, inf_eager = bench_infer(args, net, art, x, T, static, d)
    train_run, train_eager, rss, choices = bench_train(args, net, art, T, shape, static,
                                                       classes, d, g)
    infer_gflop = 2 * stats["macs_per_sample"] * args.batch / 1e9
    rate = (lambda seconds: infer_gflop / seconds if seconds else None)  # noqa: E731
    return {"model": name, "input": "x".join(map(str, shape)), "T": T, "batch": args.batch,
            "threads": args.threads, "reference": args.reference,
            "infer_snn_run_s": inf_run, "infer_pytorch_s": inf_eager,
            "train_snn_run_samples_per_s": train_run, "train_pytorch_samples_per_s": train_eager,
            "train_snn_run_peak_rss_mib": rss,
            "infer_gflops": [rate(inf_run), rate(inf_eager)],
            "train_gflops": [train_run * train_flops / 1e9, train_eager * train_flops / 1e9],
            "peak_gflops": peak, "firing": stats["firing"], "event_kernels": choices}


def fmt(value, spec, suffix=""):
    return "n/a" if value is None else f"{value:{spec}}{suffix}"


def print_row(r):
    run, eager = r["infer_snn_run_s"], r["infer_pytorch_s"]
    train, ref = r["train_snn_run_samples_per_s"], r["train_pytorch_samples_per_s"]
    print(f"| {r['model']} | {r['input']} | {r['T']} | {r['batch']} | {fmt(run, '.3f')} | "
          f"{eager:.3f} | {fmt(run and eager / run, '.2f', 'x')} | {train:.2f} | {ref:.2f} | "
          f"{train / ref:.2f}x | {r['train_snn_run_peak_rss_mib']:.0f} | "
          f"{fmt(r['infer_gflops'][0], '.0f')} / {r['infer_gflops'][1]:.0f} | "
          f"{r['train_gflops'][0]:.0f} / {r['train_gflops'][1]:.0f} |", flush=True)


def print_details(r):
    rates = ", ".join(f"{k} {v:.3f}" for k, v in r["firing"].items())
    print(f"  {r['model']} T={r['T']} firing rates (inference): {rates}")
    for line in r["event_kernels"]:
        print(f"  {r['model']} T={r['T']} {line}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-sj-port"))
    p.add_argument("--models", default="sew_resnet18,dvsgesture_net",
                   help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--T", default="", help="comma-separated time steps (default: each "
                   "network's own: 16 for dvsgesture_net, 4 for the others)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2,
                   help="steps left out of the steady rate (default 2)")
    p.add_argument("--repeat", type=int, default=3, help="inference runs of each (best)")
    p.add_argument("--train-repeat", type=int, default=2,
                   help="training runs of each, interleaved (best steady rate)")
    p.add_argument("--dense-kernels", action="store_true",
                   help="snn-run with --spike-conv-density 0 --spike-linear-density 0 (every "
                        "layer dense) instead of its automatic choice")
    p.add_argument("--reference", choices=("default", "tuned"), default="default",
                   help="PyTorch as shipped, or with snn-run's allocator settings")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    for name in args.models.split(","):
        if name not in MODELS:
            p.error(f"--models: unknown network {name!r} ({', '.join(MODELS)})")
    try:
        args.T = [int(t) for t in args.T.split(",")] if args.T else []
    except ValueError:
        p.error(f"--T: expected comma-separated integers, got {args.T!r}")
    if any(t < 1 for t in args.T):
        p.error("--T: time steps must be at least 1")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    gemm, conv = gemm_peak_gflops(), conv_peak_gflops()
    print(f"{args.threads} threads, GEMM {gemm:.0f} GFLOP/s (OpenBLAS, one thread as both sides "
          f"run it), conv2d {conv:.0f} GFLOP/s (oneDNN), PyTorch reference: "
          f"{args.reference}, snn-run kernels: "
          f"{'dense' if args.dense_kernels else 'chosen per layer (default)'}")
    print("| network | input | T | B | infer snn-run s | infer PyTorch s | speedup | "
          "train snn-run samples/s | train PyTorch samples/s | speedup | snn-run train RSS MiB "
          "| infer GFLOP/s (snn-run / PyTorch) | train GFLOP/s (snn-run / PyTorch) |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    rows = []
    for name in args.models.split(","):
        for T in args.T or [MODELS[name][1]]:
            rows.append(measure(args, name, T, {"gemm": gemm, "conv2d": conv}))
            print_row(rows[-1])
    for r in rows:
        print_details(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
