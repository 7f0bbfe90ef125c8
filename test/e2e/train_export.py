"""Export round trip: `snn-run train --export-onnx` -> snnexport.load_onnx_weights into the
PyTorch model -> its eval forward equals `snn-run infer` on the same input.

For csnn (BatchNorm: running statistics are part of the export) and a ParametricLIF MLP (the
0-d `w` of every PLIF layer is trained and exported; soft and hard reset, detach_reset):
  1. snn-run train a few Adam steps with --export-onnx and --save-params.
  2. load_onnx_weights(fresh PyTorch model, trained.onnx): every parameter and buffer must equal
     the --save-params files bit for bit and differ from the initial weights.
  3. The trained program itself is an artifact program: a copy of the artifact with
     program_0.onnx replaced by trained.onnx runs with `snn-run infer`.
  4. The PyTorch model is exported again with snnexport, compiled and run with `snn-run infer`.
  Both outputs must equal the PyTorch eval-mode forward of the loaded model (rates within
  1e-5 relative, as in infer_case.py).
  5. The PLIF model's training also follows the reference trainer (1e-4 relative), which covers
     the gradient of `w`.
  6. `snn-run eval --params` (the saved weights) gives the reference's eval loss and accuracy
     (read from its --log line).

Usage: train_export.py --bin BUILD/bin --work DIR [--threads N]
"""
import argparse
import json
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads before torch loads
import numpy as np  # noqa: I100
import torch
from torch import nn

from snnexport import export_onnx, functional, layer, load_onnx_weights, models, neuron, \
    surrogate
from snnexport import train as tr
from snnexport.reference import calibrate

T, B = 4, 8


class PlifMLP(nn.Module):
    """Flatten-Linear-PLIF(hard reset, detach_reset, sigmoid)-Linear-PLIF(soft reset, atan,
    decay_input=False) -> firing rate."""

    def __init__(self, features=48, hidden=32, classes=10):
        super().__init__()
        self.net = nn.Sequential(
            layer.Flatten(), layer.Linear(features, hidden),
            neuron.ParametricLIFNode(init_tau=2.0, detach_reset=True),
            layer.Linear(hidden, classes),
            neuron.ParametricLIFNode(init_tau=3.0, decay_input=False, v_reset=None,
                                     surrogate_function=surrogate.ATan()))
        functional.set_step_mode(self, "m")  # SpikingJelly's default is single-step

    def forward(self, x):
        return self.net(x).mean(0)


def eval_forward(model, x):
    model.eval()
    functional.reset_net(model)
    with torch.no_grad():
        y = model(x).numpy()
    functional.reset_net(model)
    model.train()
    return y


def compare_output(got, want, what):
    if got.shape != want.shape:
        raise tc.Failure(f"{what}: output shape {got.shape} != PyTorch {want.shape}")
    e = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-6)))
    if not e <= 1e-5:
        raise tc.Failure(f"{what}: max relative error {e:.3g} > 1e-5 against PyTorch")
    if not 0.0 < float(want.mean()) < 1.0:
        raise tc.Failure(f"{what}: the output has no spiking activity; the check is void")
    print(f"{what}: equals the PyTorch eval forward (max rel err {e:.2g}; mean rate "
          f"{float(want.mean()):.3f}, {int(np.count_nonzero(want))} of {want.size} nonzero)")


def snn_eval_metrics(path):
    """The object `snn-run eval --log FILE` wrote (the last JSON line)."""
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    if not lines:
        raise tc.Failure(f"snn-run eval --log {path} is empty")
    ev = json.loads(lines[-1])
    if "loss" not in ev or "accuracy" not in ev:
        raise tc.Failure(f"snn-run eval --log {path}: no loss/accuracy in {ev}")
    return ev


def run_case(args, work, name, make_model, sample_shape, train_flags, ref_cfg):
    snn_run = os.path.join(args.bin, "snn-run")
    d = tc.fresh_dir(os.path.join(work, name))
    w = lambda *n: os.path.join(d, *n)  # noqa: E731
    model0 = make_model()
    g = np.random.default_rng(4)
    S = 4 * B
    xs = g.random((S, *sample_shape), dtype=np.float32)
    np.save(w("x.npy"), xs)
    np.save(w("y.npy"), g.integers(0, 10, S).astype(np.int64))
    x_seq = torch.from_numpy(xs[:B]).unsqueeze(0).repeat(T, *([1] * (1 + len(sample_shape))))
    export_onnx(model0, x_seq, w("model.onnx"))
    tc.run([os.path.join(args.bin, "snn-compile"), w("model.onnx"), "-o", w("art")])
    data = f"{w('x.npy')},{w('y.npy')}"
    tc.run([snn_run, "train", w("art"), "--data-npy", data, "--repeat-time", T,
            "--batch-size", B, *train_flags, "--threads", args.threads,
            "--export-onnx", w("trained.onnx"), "--save-params", w("params")])
    if not os.path.isfile(w("trained.onnx")):
        raise tc.Failure(f"{name}: --export-onnx wrote no {w('trained.onnx')}")

    # 2. load the trained weights into a fresh PyTorch model
    trained = make_model()
    load_onnx_weights(trained, w("trained.onnx"))
    loaded = tr.state_arrays(trained)
    tc.compare_params(tc.load_params(w("params")), loaded,
                      f"{name}: --save-params vs --export-onnx", exact=True)
    initial = tr.state_arrays(model0)
    changed = [k for k in initial if not np.array_equal(initial[k], loaded[k])]
    trainable = [k for k, _ in model0.named_parameters()]
    if sorted(set(trainable) - set(changed)):
        raise tc.Failure(f"{name}: training left {sorted(set(trainable) - set(changed))} "
                         "unchanged in the exported file")
    print(f"{name}: exported weights loaded; {len(changed)} of {len(initial)} tensors changed "
          "by training")

    # 3. the trained program runs as an artifact program
    x_path = w("x_infer.npy")
    x_infer = torch.from_numpy(xs[B:2 * B + 3]).unsqueeze(0).repeat(
        T, *([1] * (1 + len(sample_shape))))
    np.save(x_path, x_infer.numpy())
    want = eval_forward(trained, x_infer)
    shutil.copytree(w("art"), w("art_trained"))
    shutil.copyfile(w("trained.onnx"), w("art_trained", "program_0.onnx"))
    tc.run([snn_run, "infer", w("art_trained"), "--input", x_path, "--output", w("y1.npy")])
    compare_output(np.load(w("y1.npy")), want, f"{name}: snn-run infer on the trained program")

    # 4. PyTorch -> snnexport -> snn-compile -> snn-run infer
    export_onnx(trained, x_infer, w("reexported.onnx"))
    tc.run([os.path.join(args.bin, "snn-compile"), w("reexported.onnx"), "-o", w("art2")])
    tc.run([snn_run, "infer", w("art2"), "--input", x_path, "--output", w("y2.npy")])
    compare_output(np.load(w("y2.npy")), want, f"{name}: re-exported and compiled")

    # 5. trajectory against the reference trainer
    if ref_cfg is not None:
        ref = make_model()
        res = tr.train(ref, tr.load_npy(w("x.npy"), w("y.npy"), static=True), ref_cfg)
        worst = tc.compare_params(loaded, tr.state_arrays(ref),
                                  f"{name}: snn-run vs reference trainer")
        print(f"{name}: trained weights within {worst:.2g} of the reference trainer "
              f"(losses {[round(v, 5) for v in res.losses]})")

    # 6. snn-run eval with the saved parameters
    tc.run([snn_run, "eval", w("art"), "--data-npy", data, "--repeat-time", T,
            "--batch-size", B, "--loss", "mse", "--params", w("params"),
            "--threads", args.threads, "--log", w("eval.jsonl")])
    got = snn_eval_metrics(w("eval.jsonl"))
    ev = tr.evaluate(trained, tr.load_npy(w("x.npy"), w("y.npy"), static=True),
                     tr.TrainConfig(batch_size=B, lr=0.0, steps=1, loss="mse", repeat_time=T))
    if abs(got["loss"] - ev[0]) > 1e-5 * max(abs(ev[0]), 1e-6) or \
            abs(got["accuracy"] - ev[1]) > 1e-9:
        raise tc.Failure(f"{name}: snn-run eval gives loss {got['loss']!r} accuracy "
                         f"{got['accuracy']!r}, the reference {ev[0]!r} {ev[1]!r}")
    print(f"{name}: snn-run eval --params equals the reference evaluation "
          f"(loss {ev[0]:.6f}, accuracy {ev[1]:.3f})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    work = tc.fresh_dir(args.work)

    def csnn():
        torch.manual_seed(0)
        m = models.csnn(channels=8)
        calibrate(m, torch.rand(T, B, 1, 28, 28, generator=torch.Generator().manual_seed(1)),
                  torch.Generator().manual_seed(2))
        return m

    def plif():
        torch.manual_seed(0)
        m = PlifMLP()
        gen = torch.Generator().manual_seed(3)
        calibrate(m, torch.rand(T, B, 48, generator=gen), gen)
        with torch.no_grad():  # PLIF w away from its init, so export of trained w shows
            m.net[2].w.add_(0.3)
        return m

    run_case(args, work, "csnn", csnn, [1, 28, 28],
             ["--steps", "3", "--optimizer", "adam", "--lr", "0.0005", "--seed", "1"], None)
    run_case(args, work, "plif_mlp", plif, [48],
             ["--steps", "4", "--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.05",
              "--loss", "mse", "--seed", "2"],
             tr.TrainConfig(batch_size=B, lr=0.05, steps=4, optimizer="sgd", momentum=0.9,
                            loss="mse", seed=2, repeat_time=T))
    print("PASS: trained weights round-trip from snn-run to PyTorch and back")


if __name__ == "__main__":
    tc.main_wrapper(main)
