"""SpikingJelly layers and idioms beyond the zoo ports, end to end, and frozen parameters.

One network holds what the nine zoo ports do not: layer.GroupNorm, layer.AdaptiveAvgPool2d to a
size that is no whole window of its input (3x3 from 8x8: windows of 3 and 4 overlapping),
layer.VotingLayer, layer.MultiStepContainer, functional.multi_step_forward in a forward,
x.view(T, N, -1), torch.cat on channels, direct encoding (unsqueeze(0).expand), the x.sum(0)
readout and a parameter with requires_grad=False. Required:
  - `snn-run infer` output bit-equal to PyTorch (sums over T of VotingLayer averages of
    spikes: exact in float32);
  - every neuron layer fires at 5-50 % on the case input;
  - the frozen parameter is `"frozen": true` in the manifest; 5 training steps equal the
    reference trainer (losses within 1e-4, every tensor within 1e-4), the loss moves, and the
    frozen parameter is bit-identical to its initial value in both trainers;
  - `snn-run train --freeze NAME` on the same artifact freezes one more parameter, equal to the
    reference with requires_grad=False on it;
  - `--freeze` of an unknown name or of a buffer: exit 1, one `error:` line naming it.

Usage: sj_layers.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads before torch loads
import numpy as np  # noqa: I100
import torch
import train_tp as ttp
import train_trajectory as tt
from torch import nn

from snnexport import export_onnx, functional, layer, neuron, reference, surrogate
from snnexport import train as tr

T, N, STEPS, CLASSES = 4, 8, 5, 4
SGD = dict(optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=5e-4, schedule="constant",
           loss="mse", seed=5, shuffle=False)
FROZEN = "features.0.weight"  # requires_grad=False in PyTorch
FREEZE = "head.0.bias"        # frozen by snn-run train --freeze


class Net(nn.Module):
    """Direct-encoded conv net over [N, 2, 8, 8] images, in SpikingJelly's idioms."""

    def __init__(self):
        super().__init__()
        self.features = layer.MultiStepContainer(
            layer.Conv2d(2, 8, 3, padding=1, bias=False), layer.GroupNorm(4, 8),
            neuron.IFNode(surrogate_function=surrogate.ATan()))
        self.skip = layer.Conv2d(2, 4, 1, step_mode="m")
        self.pool = layer.AdaptiveAvgPool2d((3, 3), step_mode="m")
        self.sn = neuron.LIFNode(tau=2.0, v_threshold=0.3, surrogate_function=surrogate.ATan(),
                                 step_mode="m")  # its input: averages of spikes
        # Single-step modules (the default), run over T by multi_step_forward below.
        self.head = nn.Sequential(layer.Linear(12 * 3 * 3, 4 * CLASSES), neuron.IFNode(),
                                  layer.VotingLayer(4))
        self.features[0].weight.requires_grad_(False)

    def forward(self, x):
        x = x.unsqueeze(0).expand(T, -1, -1, -1, -1)
        x = torch.cat([self.features(x), self.skip(x)], dim=2)
        x = self.sn(self.pool(x))
        x = x.view(x.shape[0], x.shape[1], -1)
        return functional.multi_step_forward(x, self.head).sum(0)  # spike counts


class FirstStep(nn.Module):
    """The trainer's [T, N, ...] batch as the [N, ...] images the network repeats itself."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x_seq):
        return self.net(x_seq[0])


def case(work, gen):
    torch.manual_seed(0)
    net = Net()
    x = torch.rand(N, 2, 8, 8, generator=gen)
    tm = FirstStep(net)
    reference.calibrate(tm, x.unsqueeze(0).repeat(T, 1, 1, 1, 1), gen)
    out, stats = reference.run_reference(tm, x.unsqueeze(0).repeat(T, 1, 1, 1, 1))
    ttp.check_rates(stats, "case input")
    onnx_path, art = os.path.join(work, "model.onnx"), os.path.join(work, "art")
    export_onnx(net, x, onnx_path)
    shutil.rmtree(art, ignore_errors=True)
    tc.run([BIN["compile"], onnx_path, "-o", art])
    return net, x, out, art


def check_infer(work, art, x, want):
    given, got_path = os.path.join(work, "x.npy"), os.path.join(work, "out.npy")
    np.save(given, x.numpy())
    tc.run([BIN["run"], "infer", art, "--input", given, "--repeat-time", T, "--output",
            got_path])
    got = np.load(got_path)
    if got.shape != tuple(want.shape) or not np.array_equal(got, want.numpy()):
        raise tc.Failure(f"infer differs from PyTorch: {got.shape} vs {tuple(want.shape)}")
    print(f"infer: output {list(got.shape)} bit-equal to PyTorch")


def check_manifest(art):
    with open(os.path.join(art, "manifest.json")) as f:
        params = {p["name"]: p for p in json.load(f)["parameters"]}
    frozen = sorted(k for k, p in params.items() if p.get("frozen"))
    if frozen != [FROZEN]:
        raise tc.Failure(f"manifest: frozen parameters {frozen}, expected [{FROZEN!r}]")
    print(f"manifest: {FROZEN} is frozen")


def train_both(work, art, net, tag, freeze, gen):
    d = tc.fresh_dir(os.path.join(work, tag))
    x_path, y_path = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(x_path, torch.rand(N * STEPS, 2, 8, 8, generator=gen).numpy())
    np.save(y_path, torch.randint(0, CLASSES, (N * STEPS,), generator=gen).numpy())
    c = tr.TrainConfig(batch_size=N, steps=STEPS, repeat_time=T, **SGD)
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    cmd = [BIN["run"], "train", art, "--data-npy", f"{x_path},{y_path}", *tt.cli_flags(c),
           "--repeat-time", T, "--log", log, "--save-params", params, "--threads", 2]
    tc.run(cmd + (["--freeze", *freeze] if freeze else []))
    model = FirstStep(net)
    for name in freeze:
        model.net.get_parameter(name).requires_grad_(False)
    initial = tr.state_arrays(model.net)
    res = tr.train(model, tr.load_npy(x_path, y_path, static=True), c)
    tt.check_steps(tag, tc.read_log(log)[0], res, c, N * STEPS)
    if max(res.losses) - min(res.losses) <= 1e-6 * max(abs(v) for v in res.losses):
        raise tc.Failure(f"{tag}: the loss does not move: {res.losses}")
    got, trained = tc.load_params(params), tr.state_arrays(model.net)
    worst = tc.compare_params(got, trained, f"{tag} final weights")
    for name in [FROZEN, *freeze]:
        tc.compare_params({name: got[name]}, {name: initial[name]}, f"{tag}: snn-run's {name}",
                          exact=True)
        tc.compare_params({name: trained[name]}, {name: initial[name]},
                          f"{tag}: the reference's {name}", exact=True)
    print(f"{tag}: losses equal, weights within {worst:.2g}, {[FROZEN, *freeze]} unchanged")


def check_freeze_errors(work, art):
    for name, says in (("no.such.weight", "no parameter 'no.such.weight'"),
                       ("features.1", "no parameter 'features.1'")):
        proc = tc.run([BIN["run"], "train", art, "--data-npy", "x.npy,y.npy", "--steps", 1,
                       "--batch-size", N, "--lr", 0.1, "--freeze", name], expect_ok=False)
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        if proc.returncode != 1 or not last.startswith("error:") or says not in last:
            raise tc.Failure(f"--freeze {name}: exit {proc.returncode}, last line {last!r}")
    print("--freeze: unknown names are refused, naming them")


BIN = {}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    BIN.update(compile=os.path.join(args.bin, "snn-compile"),
               run=os.path.join(args.bin, "snn-run"))
    torch.set_num_threads(2)
    work = tc.fresh_dir(args.work)
    gen = torch.Generator().manual_seed(1)  # not the weights' seed-0 stream
    net, x, out, art = case(work, gen)
    check_infer(work, art, x, out)
    check_manifest(art)
    start = {k: v.clone() for k, v in net.state_dict().items()}
    train_both(work, art, net, "requires_grad", [], gen)
    net.load_state_dict(start)
    net.features[0].weight.requires_grad_(False)
    train_both(work, art, net, "freeze", [FREEZE], gen)
    check_freeze_errors(work, art)
    print("PASS: GroupNorm, adaptive pooling, VotingLayer, containers and frozen parameters "
          "equal PyTorch")


if __name__ == "__main__":
    tc.main_wrapper(main)
