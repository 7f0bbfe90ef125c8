"""`snn-run infer` on the PyTorch model's own input when the model repeats it over T.

A SpikingJelly-style CSNN whose forward takes a static batch [N, 1, 16, 16] and repeats it over
T itself (`x.unsqueeze(0).repeat(T, 1, 1, 1, 1)`, direct encoding), ending on a Linear readout
averaged over T. Exported from an [N, ...] example and compiled; required:
  - the manifest's input says `"repeated_over_time": true`;
  - every neuron layer fires at 5-50 % on the case input;
  - `snn-run infer` on the [N, ...] .npy the PyTorch model took, with no --repeat-time, equals
    the eager model within the float32 bound of the readout's reductions: the Linear's K-term
    sums and the mean over T, (K + T) * eps * mean_t(|s_t| |W|^T + |b|) elementwise (the
    spikes before it are identical: the case keeps every potential away from the threshold);
  - the same [N, ...] input streamed one sample at a time (--batch-size 1) too, within the
    bound; with `--repeat-time T`, and repeated to [T, N, ...], the same output bit for bit;
  - `--repeat-time` of another T is one `error:` line naming the flag and the artifact's T;
    a static input of the wrong per-step shape one line naming the file and both shapes;
  - the same artifact without the manifest field (an artifact of an older compiler) still
    refuses the [N, ...] input without --repeat-time, as before.

Usage: infer_static_input.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads before torch loads
import numpy as np  # noqa: I100
import torch
import train_tp as ttp
from torch import nn

from snnexport import export_onnx, functional, layer, neuron, reference, surrogate

T, N, C, SIZE = 4, 4, 4, 16
ATTEMPTS = 32  # input draws tried for one with no potential near a threshold


class StaticCSNN(nn.Module):
    """Conv-BN-IF-pool, then Linear-LIF and a Linear readout averaged over T; takes the images
    [N, 1, SIZE, SIZE] and repeats them over T itself."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            layer.Conv2d(1, C, 3, padding=1, bias=False), layer.BatchNorm2d(C),
            neuron.IFNode(surrogate_function=surrogate.ATan()), layer.MaxPool2d(2))
        self.fc = nn.Sequential(
            layer.Flatten(), layer.Linear(C * (SIZE // 2) ** 2, 32),
            neuron.LIFNode(tau=2.0, surrogate_function=surrogate.ATan()), layer.Linear(32, 10))
        functional.set_step_mode(self, "m")

    def forward(self, x):
        x_seq = x.unsqueeze(0).repeat(T, 1, 1, 1, 1)
        return self.fc(self.conv(x_seq)).mean(0)


def readout_bound(net, x):
    """The float32 bound of the readout: the Linear's K-term sums at every step, then the mean
    of T of them; a different order of either sum stays within (K + T) * eps times the sum of
    magnitudes."""
    seen = []
    readout = net.fc[-1]
    hook = readout.register_forward_hook(lambda m, i, o: seen.append(i[0]))
    try:
        functional.reset_net(net)
        with torch.no_grad():
            net(x)
    finally:
        hook.remove()
        functional.reset_net(net)
    s = seen[-1]  # [T, N, K] spikes
    magnitude = s.abs() @ readout.weight.detach().abs().t() + readout.bias.detach().abs()
    eps = float(np.finfo(np.float32).eps)
    return ((readout.in_features + T) * eps * magnitude.mean(0)).numpy()


def case():
    """The seeded, calibrated model and the input draw with the widest threshold margins."""
    reference.set_seed(0)
    net = StaticCSNN().eval()
    gen = torch.Generator().manual_seed(0)
    reference.calibrate(net, torch.rand(N, 1, SIZE, SIZE, generator=gen), gen)
    best = None
    for _ in range(ATTEMPTS):
        x = torch.rand(N, 1, SIZE, SIZE, generator=gen)
        out, stats = reference.run_reference(net, x)
        near = sum(s["near_count"] for s in stats.values())
        if best is None or near < best[0]:
            best = (near, x, out, stats)
        if near == 0:
            break
    near, x, out, stats = best
    if near:
        raise tc.Failure(f"no input draw keeps every potential {reference.MARGIN} away from "
                         f"its threshold ({near} near it in the best of {ATTEMPTS})")
    ttp.check_rates(stats, "case input")
    return net, x, out


def check_manifest(art):
    with open(os.path.join(art, "manifest.json")) as f:
        given = json.load(f)["input"]
    if given.get("repeated_over_time") is not True or given["shape"][0] != T:
        raise tc.Failure(f"manifest input {given}: expected repeated_over_time true, T = {T}")
    print(f"manifest: input {given['shape']} repeated over time")


def infer(snn_run, art, x_path, out_path, *extra):
    tc.run([snn_run, "infer", art, "--input", x_path, "--output", out_path, *extra])
    return np.load(out_path)


def check_outputs(snn_run, art, work, x, want, bound):
    static, sequence = os.path.join(work, "x.npy"), os.path.join(work, "x_seq.npy")
    np.save(static, x.numpy())
    np.save(sequence, x.unsqueeze(0).repeat(T, 1, 1, 1, 1).numpy())
    got = infer(snn_run, art, static, os.path.join(work, "y.npy"))
    compare(got, want.numpy(), bound, "infer [N, ...] without --repeat-time")
    # One sample at a time the readout's GEMM may be blocked differently: within the bound.
    compare(infer(snn_run, art, static, os.path.join(work, "y_streamed.npy"), "--batch-size", 1),
            want.numpy(), bound, "infer [N, ...] streamed one sample at a time")
    for tag, x_path, extra in (("--repeat-time", static, ["--repeat-time", T]),
                               ("[T, N, ...]", sequence, [])):
        other = infer(snn_run, art, x_path, os.path.join(work, "y_other.npy"), *extra)
        if not np.array_equal(other, got):
            raise tc.Failure(f"{tag}: another output than the [N, ...] input's")
        print(f"{tag}: the same output bit for bit")
    return static


def compare(got, want, bound, what):
    if got.shape != want.shape:
        raise tc.Failure(f"{what}: output shape {got.shape}, PyTorch's {want.shape}")
    excess = np.abs(got - want) - bound
    if (excess > 0).any():
        raise tc.Failure(f"{what}: {int((excess > 0).sum())} outputs beyond the float32 bound "
                         f"of the readout (worst excess {excess.max():.3g})")
    print(f"{what}: {list(got.shape)} within the float32 bound of PyTorch (max abs diff "
          f"{float(np.max(np.abs(got - want))):.3g}, bound {float(bound.min()):.3g} or more)")


def expect_error(cmd, *says):
    proc = tc.run(cmd, expect_ok=False)
    lines = proc.stderr.strip().splitlines()
    if proc.returncode != 1 or len(lines) != 1 or not lines[0].startswith("error:") or \
            not all(s in lines[0] for s in says):
        raise tc.Failure(f"{cmd[1:]}: expected exit 1 and one error line with {says}, got "
                         f"{proc.returncode} and {lines}")
    print(f"refused: {lines[0]}")


def check_errors(snn_run, art, work, static):
    out = os.path.join(work, "y_bad.npy")
    expect_error([snn_run, "infer", art, "-i", static, "-o", out, "--repeat-time", T + 1],
                 f"--repeat-time {T + 1} does not match the artifact's T = {T}")
    wrong = os.path.join(work, "x_wrong.npy")
    np.save(wrong, np.zeros((N, 1, SIZE - 1, SIZE), np.float32))
    expect_error([snn_run, "infer", art, "-i", wrong, "-o", out], "x_wrong.npy",
                 f"[{N}, 1, {SIZE - 1}, {SIZE}]", f"[?, 1, {SIZE}, {SIZE}]")
    # An artifact without the field: the [N, ...] input needs --repeat-time, as it always did.
    old = os.path.join(work, "art_without_field")
    shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(art, old)
    with open(os.path.join(old, "manifest.json")) as f:
        manifest = json.load(f)
    del manifest["input"]["repeated_over_time"]
    with open(os.path.join(old, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    expect_error([snn_run, "infer", old, "-i", static, "-o", out],
                 "needs --repeat-time T")
    if os.path.exists(out):
        raise tc.Failure(f"a failed run left {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    snn_run = os.path.join(args.bin, "snn-run")
    torch.set_num_threads(2)
    work = tc.fresh_dir(args.work)
    net, x, out = case()
    onnx_path, art = os.path.join(work, "model.onnx"), os.path.join(work, "art")
    export_onnx(net, x, onnx_path)
    tc.run([os.path.join(args.bin, "snn-compile"), onnx_path, "-o", art])
    check_manifest(art)
    static = check_outputs(snn_run, art, work, x, out, readout_bound(net, x))
    check_errors(snn_run, art, work, static)
    print("PASS: snn-run infer takes the static input of a model that repeats it over T")


if __name__ == "__main__":
    tc.main_wrapper(main)
