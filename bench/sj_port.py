#!/usr/bin/python3
"""Ported SpikingJelly networks at their real input sizes: snn-run against eager PyTorch.

The networks are test/e2e/sj_zoo.py's (SpikingJelly's zoo code with only the import changed):
  sew_resnet18    cnf ADD, IF neurons (ATan), 3 x 224 x 224 images, direct encoding over T
  dvsgesture_net  DVSGestureNet(channels=128), ParametricLIF (ATan, detach_reset), 2 x 128 x 128
                  event frames, 11 classes (the parametric_lif_net paper's setting)
For each: export_onnx + snn-compile, then
  inference  `snn-run infer -v` ("run" time of one batch, best of --repeat processes) against
             the PyTorch eval forward of the same module in this process (best of --repeat
             after one warm-up), no_grad, the two interleaved;
  training   `snn-run train` and the reference trainer (snnexport.train in this process: the
             SpikingJelly-style module, SGD momentum, MSE on the firing rate) for --steps steps
             on the same synthetic batches, --train-repeat times each, interleaved; steady
             samples/s = B / the median step time of each one's --log after the first step,
             best of the repeats.
Both use --threads intra-op threads (and one OpenBLAS thread, as snn-run runs BLAS).

Not a test: run it on an otherwise idle machine.
  bench/sj_port.py --bin build/bin [--models sew_resnet18,dvsgesture_net] [--threads N]
                   [--batch 4] [--steps 4] [--repeat 3] [--json F]
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before torch: BLAS as snn-run runs it

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "python_export"), os.path.join(ROOT, "test", "e2e")]

import sj_zoo as zoo  # noqa: E402
from snnexport import export_onnx, functional, neuron, surrogate  # noqa: E402
from snnexport import train as tr  # noqa: E402

# name -> (builder, T, per-sample shape, static images?, classes)
MODELS = {
    "sew_resnet18": (lambda: zoo.sew_resnet18(
        cnf="ADD", num_classes=10, spiking_neuron=neuron.IFNode,
        surrogate_function=surrogate.ATan(), detach_reset=True), 4, [3, 224, 224], True, 10),
    "dvsgesture_net": (lambda: zoo.DVSGestureNet(
        128, spiking_neuron=neuron.ParametricLIFNode, surrogate_function=surrogate.ATan(),
        detach_reset=True), 16, [2, 128, 128], False, 11),
}


def sh(cmd):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} failed:\n{proc.stderr.strip()}")
    return proc


def build(name):
    make, T, shape, static, classes = MODELS[name]
    torch.manual_seed(0)
    net = make()
    functional.set_step_mode(net, "m")
    return net, T, shape, static, classes


def batch(T, shape, static, n, g):
    if static:
        return torch.from_numpy(g.random([n] + shape, dtype=np.float32))
    return torch.from_numpy((g.random([n, T] + shape) < 0.3).astype(np.float32))


def time_major(x, T, static):
    return x.unsqueeze(0).repeat(T, *([1] * x.dim())) if static else x.transpose(0, 1)


def bench_infer(args, net, art, x, T, static, d):
    given, out = os.path.join(d, "x.npy"), os.path.join(d, "out.npy")
    np.save(given, (x if static else time_major(x, T, static).contiguous()).numpy())
    cmd = [os.path.join(args.bin, "snn-run"), "infer", art, "--input", given, "--output", out,
           "--threads", args.threads, "-v"] + (["--repeat-time", T] if static else [])
    net.eval()
    xt = time_major(x, T, static).contiguous()

    def eager_forward():
        with torch.no_grad():
            functional.reset_net(net)
            t0 = time.perf_counter()
            net(xt)
            return time.perf_counter() - t0

    eager_forward()  # warm-up (allocator, oneDNN primitives)
    runs, eager = [], []
    for _ in range(args.repeat):  # interleaved: a load change hits both alike
        lines = sh(cmd).stderr.strip().splitlines()  # the summary, then the firing rates
        line = next((l for l in lines if "samples/s" in l), lines[-1] if lines else "")
        runs.append(float(re.search(r"run ([0-9.]+) ms", line).group(1)) / 1000.0)
        eager.append(eager_forward())
    functional.reset_net(net)
    return min(runs), min(eager)


def steady(log):
    steps = [e for e in map(json.loads, open(log)) if e.get("event") == "step"]
    return float(np.median([s["samples_per_s"] for s in steps[1:]]))


def bench_train(args, net, art, T, shape, static, classes, d, g):
    S = args.batch * args.steps
    x_path, y_path = os.path.join(d, "tx.npy"), os.path.join(d, "ty.npy")
    np.save(x_path, batch(T, shape, static, S, g).numpy())
    np.save(y_path, g.integers(0, classes, S).astype(np.int64))
    cfg = tr.TrainConfig(batch_size=args.batch, steps=args.steps, lr=0.01, optimizer="sgd",
                         momentum=0.9, loss="mse", repeat_time=T if static else None)
    data = tr.load_npy(x_path, y_path, static=static)
    start = {k: v.clone() for k, v in net.state_dict().items()}
    ours, theirs = [], []
    for rep in range(args.train_repeat):  # interleaved, alternating which goes first
        log, ref_log = (os.path.join(d, f"{who}.{rep}.jsonl") for who in ("snn-run", "pytorch"))
        run_ours = lambda: sh([  # noqa: E731
            os.path.join(args.bin, "snn-run"), "train", art, "--data-npy", f"{x_path},{y_path}",
            "--steps", args.steps, "--batch-size", args.batch, "--lr", 0.01, "--optimizer",
            "sgd", "--momentum", 0.9, "--loss", "mse", "--threads", args.threads, "--log", log,
            "--progress", "none"] + (["--repeat-time", T] if static else []))
        run_theirs = lambda: tr.train(net, data, cfg, log_path=ref_log)  # noqa: E731
        for run in ((run_ours, run_theirs) if rep % 2 == 0 else (run_theirs, run_ours)):
            net.load_state_dict(start)
            run()
        ours.append(steady(log))
        theirs.append(steady(ref_log))
    return max(ours), max(theirs)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-sj-port"))
    p.add_argument("--models", default="sew_resnet18,dvsgesture_net")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3, help="inference runs of each (best)")
    p.add_argument("--train-repeat", type=int, default=2,
                   help="training runs of each, interleaved (best steady rate)")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for name in args.models.split(","):
        if name not in MODELS:
            sys.exit(f"error: --models: unknown network {name!r} ({', '.join(MODELS)})")
        d = os.path.join(args.work, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        net, T, shape, static, classes = build(name)
        g = np.random.default_rng(0)
        x = batch(T, shape, static, args.batch, g)
        onnx_path, art = os.path.join(d, "model.onnx"), os.path.join(d, "art")
        export_onnx(net, time_major(x, T, static).contiguous(), onnx_path)
        sh([os.path.join(args.bin, "snn-compile"), onnx_path, "-o", art])
        inf_run, inf_eager = bench_infer(args, net, art, x, T, static, d)
        train_run, train_eager = bench_train(args, net, art, T, shape, static, classes, d, g)
        row = {"model": name, "T": T, "batch": args.batch, "threads": args.threads,
               "infer_snn_run_s": inf_run, "infer_pytorch_s": inf_eager,
               "train_snn_run_samples_per_s": train_run, "train_pytorch_samples_per_s":
               train_eager}
        rows.append(row)
        print(f"{name:15s} T={T} B={args.batch} {args.threads} threads | infer: snn-run "
              f"{inf_run:.3f} s, PyTorch {inf_eager:.3f} s ({inf_eager / inf_run:.2f}x) | "
              f"train: snn-run {train_run:.2f} samples/s, PyTorch {train_eager:.2f} samples/s "
              f"({train_run / train_eager:.2f}x)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
