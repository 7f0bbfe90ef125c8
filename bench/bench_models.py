#!/usr/bin/python3
"""The benchmark models and what the throughput benchmarks measure about them.

Shared by train_throughput.py and infer_throughput.py: the models (make_case flags, input kind
and shape), their synthetic inputs, and a stats worker run as its own process (so the parent
never imports torch): each neuron layer's firing rate on the first batch, the dense
multiply-accumulates per sample (inference) and the dense-equivalent FLOPs of a training step
per sample, and this machine's dense GEMM rate at N threads.

  bench/bench_models.py --case DIR --input X.npy --T T --threads N --batch B [--static] [--train]
prints one JSON object on stdout.
"""
import argparse
import json
import os
import sys
import time
from collections import namedtuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What snn-run does inside its process (lib/Runtime/Commands/CommandSupport.cpp), given to a
# PyTorch reference as environment: one OpenBLAS thread under ATen's OpenMP team (Debian's
# pthread OpenBLAS otherwise spins its own workers against it) and activations kept on the heap
# (glibc would mmap/unmap them every step and page-fault the working set again). The trim
# threshold is "never" (snn-run: mallopt -1; 2^62 here, as the variable is unsigned).
TUNED_ENV = {"OPENBLAS_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": str(1 << 30),
             "MALLOC_TRIM_THRESHOLD_": str(1 << 62)}

# flags: make_case's size flags; static: one image per sample that both sides repeat over T
# (direct encoding), otherwise event sequences [T, ...] per sample; shape(T): one sample's shape.
Model = namedtuple("Model", "flags static shape size")
MODELS = {
    "csnn": Model(["--width", "32"], True, lambda T: [1, 28, 28], "width 32"),
    "vgg_dvs": Model(["--width", "64", "--image", "48", "--blocks", "3"], False,
                     lambda T: [T, 2, 48, 48], "width 64, 48 px, 3 blocks"),
    "sew_resnet": Model(["--width", "32", "--blocks", "2"], True, lambda T: [1, 28, 28],
                        "width 32, 2 blocks"),
    "spiking_mlp": Model(["--width", "256"], True, lambda T: [784], "width 256"),
}


def model_named(name):
    if name not in MODELS:
        sys.exit(f"error: --models: unknown model {name!r} ({', '.join(MODELS)})")
    return MODELS[name]


def synthetic_input(model, T, samples, rng):
    """Sample-major input: uniform images (static models), 30 % dense binary events otherwise."""
    x = rng.random([samples] + model.shape(T), dtype=np.float32)
    return x if model.static else (x < 0.3).astype(np.float32)


def stats_command(python, case, given, T, threads, batch, static, train):
    return ([python, os.path.abspath(__file__), "--case", case, "--input", given, "--T", T,
             "--threads", threads, "--batch", batch] + (["--static"] if static else []) +
            (["--train"] if train else []))


def time_major(xb, T, static):
    """A batch of samples as the model's [T, N, ...] input."""
    return xb.unsqueeze(0).repeat(T, *([1] * xb.dim())) if static else \
        xb.transpose(0, 1).contiguous()


def layer_stats(model, xb, train):
    """One forward pass over xb with hooks: firing rate per neuron layer, MACs, training FLOPs.

    A training step is counted dense: per Conv2d/Linear, 2 FLOPs per MAC for the forward and for
    the weight gradient, and for the input gradient where the layer's input needs one (not the
    first layer, whose input is data)."""
    import torch
    from snnexport import functional
    from snnexport.neuron import BaseNode

    spikes, counts, macs, train_macs = {}, {}, [0], [0]

    def count_fire(name):
        def hook(_, __, out):
            spikes[name] = spikes.get(name, 0.0) + float(out.sum())
            counts[name] = counts.get(name, 0) + out.numel()
        return hook

    def count_macs(module, inputs, out):
        if isinstance(module, torch.nn.Conv2d):
            k = module.in_channels // module.groups * module.kernel_size[0] * module.kernel_size[1]
        else:
            k = module.in_features
        n = out.numel() * k
        macs[0] += n
        train_macs[0] += n * (3 if inputs[0].requires_grad else 2)

    handles = []
    for name, m in model.named_modules():
        if isinstance(m, BaseNode):
            handles.append(m.register_forward_hook(count_fire(name)))
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            handles.append(m.register_forward_hook(count_macs))
    model.train(train)
    functional.reset_net(model)
    with torch.set_grad_enabled(train):
        model(xb)
    for h in handles:
        h.remove()
    functional.reset_net(model)
    n = xb.shape[1]
    return {"firing": {k: spikes[k] / counts[k] for k in spikes},
            "macs_per_sample": macs[0] / n, "train_flops_per_sample": 2 * train_macs[0] / n}


def gemm_peak_gflops():
    """A 1024^3 float32 matmul at the current thread count, best of 5."""
    import torch
    a, b = torch.rand(1024, 1024), torch.rand(1024, 1024)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * 1024 ** 3 / best / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", required=True)
    p.add_argument("--input", required=True, help="sample-major .npy")
    p.add_argument("--T", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--static", action="store_true")
    p.add_argument("--train", action="store_true", help="count in training mode")
    args = p.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "python_export"))
    import torch
    from snnexport.training.cli import model_from_case

    torch.set_num_threads(args.threads)
    model, _ = model_from_case(args.case)
    x = torch.from_numpy(np.load(args.input, mmap_mode="r")[:args.batch].copy())
    stats = layer_stats(model, time_major(x, args.T, args.static), args.train)
    stats["gemm_peak_gflops"] = gemm_peak_gflops()
    json.dump(stats, sys.stdout)


if __name__ == "__main__":
    main()
