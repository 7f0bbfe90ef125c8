"""SpikingJelly's own neuron and surrogate classes against SpikeMesh: for each class the given
SpikingJelly source tree has, a network of two Linear layers each followed by that neuron (of
SpikingJelly's class, set up as SpikingJelly's users do) is

  1. run by SpikingJelly and by snnexport's port of the class from the same weights: the
     outputs must be identical, every neuron layer firing 5-50 %;
  2. exported (snnexport reads SpikingJelly's modules), compiled, and run by `snn-run infer`:
     equal to SpikingJelly's output (1e-6 relative);
  3. trained 3 SGD steps by `snn-run train` and by PyTorch autograd on SpikingJelly's own
     modules (snnexport.train's loop, the same batches): the same weights within 1e-4.

The SpikingJelly source must import on this machine's torch (1.13: the 0.0.0.0.14 line runs,
the current source needs torch >= 2.4). Classes that tree does not have, or that fail to
construct there, are reported and skipped; a class of the table missing from snnexport is a
failure.

Usage: sj_neurons.py --bin BUILD/bin --work DIR --spikingjelly SRC [--only NAME,...]
"""
import argparse
import importlib
import os
import sys

import numpy as np

import train_common as tc  # first: it sets the BLAS threads before torch loads
import torch  # noqa: I100
from torch import nn

from snnexport import export_onnx, functional as sx_functional, layer as sx_layer  # noqa: I100
from snnexport import neuron as sx_neuron, surrogate as sx_surrogate
from snnexport import train as tr
from snnexport.reference import calibrate

T, B, STEPS, IN, HIDDEN, CLASSES = 4, 8, 3, 64, 32, 10
CHANNELS, SIDE = 4, 6  # the conv network's [1, SIDE, SIDE] steps
CONV = ("GatedLIFNode",)

# name -> (neuron class, constructor arguments that make it fire on this network, surrogate);
# `width` in an argument is the layer's width, `T` the time steps.
NEURONS = {
    "IFNode": ("IFNode", {}, None),
    "LIFNode": ("LIFNode", {"tau": 2.0}, None),
    "ParametricLIFNode": ("ParametricLIFNode", {"init_tau": 2.0}, None),
    "QIFNode": ("QIFNode", {"tau": 2.0}, None),
    "EIFNode": ("EIFNode", {"tau": 2.0, "detach_reset": True}, None),
    "IzhikevichNode": ("IzhikevichNode", {"tau": 2.0, "a": 0.5, "b": 0.2, "v_rest": -0.1},
                       None),
    "KLIFNode": ("KLIFNode", {"scale_reset": True, "v_reset": None}, None),
    "LIAFNode": ("LIAFNode", {"act": "relu", "threshold_related": True, "v_threshold": 0.8},
                 None),
    "GatedLIFNode": ("GatedLIFNode", {"T": "T", "inplane": "width"}, None),
    "CUBALIFNode": ("CUBALIFNode", {}, None),
    "ILIFNode": ("ILIFNode", {"v_threshold": 0.5}, None),
    "SimpleIFNode": ("SimpleIFNode", {}, None),
    "SimpleLIFNode": ("SimpleLIFNode", {"tau": 2.0, "decay_input": True}, None),
    "HalfThresholdIFNode": ("HalfThresholdIFNode", {}, None),
    "PSN": ("PSN", {"T": "T"}, None),
    "MaskedPSN": ("MaskedPSN", {"k": 2, "T": "T", "lambda_init": 0.5}, None),
    "SlidingPSN": ("SlidingPSN", {"k": 2}, None),
}
# SpikingJelly's MaskedPSN keeps its masks and lambda as buffers; SpikeMesh derives them from
# k, T and the exported lambda, so they are not among the trained values compared.
DERIVED_BUFFERS = ("mask0", "mask1", "_lambda_")
# Every surrogate class fires a LIFNode (PiecewiseLeakyReLU etc. with their defaults).
SURROGATES = ("Sigmoid", "ATan", "PiecewiseQuadratic", "PiecewiseExp", "SoftSign", "SuperSpike",
              "NonzeroSignLogAbs", "Erf", "PiecewiseLeakyReLU", "SquarewaveFourierSeries", "S2NN",
              "QPseudoSpike", "LeakyKReLU", "FakeNumericalGradient", "LogTailedReLU", "Rect")


class Net(nn.Module):
    """Linear -> neuron -> Linear -> neuron, the firing rate over T (deep_mlp's shape). With
    `conv` (GatedLIFNode, whose SpikingJelly class needs [N, C, H, W] steps): Conv2d -> neuron
    -> Flatten -> Linear -> LIFNode."""

    def __init__(self, pkg, make_neuron, conv=False):
        super().__init__()
        neuron_mod, layer = pkg[0], pkg[1]
        if conv:
            self.stack = nn.Sequential(layer.Conv2d(1, CHANNELS, 3, padding=1),
                                       make_neuron(CHANNELS), layer.Flatten(),
                                       layer.Linear(CHANNELS * SIDE * SIDE, CLASSES),
                                       neuron_mod.LIFNode(tau=2.0))
        else:
            self.stack = nn.Sequential(layer.Linear(IN, HIDDEN), make_neuron(HIDDEN),
                                       layer.Linear(HIDDEN, CLASSES), make_neuron(CLASSES))

    def forward(self, x_seq):
        return self.stack(x_seq).mean(0)


def cases():
    """(case name, neuron class name, kwargs, surrogate class name or None) of the table."""
    out = [(name, cls, kw, sg) for name, (cls, kw, sg) in NEURONS.items()]
    out += [(f"LIFNode+{sg}", "LIFNode", {"tau": 2.0}, sg) for sg in SURROGATES]
    return out


def make_net(pkg, cls, kw, sg):
    """The network with `pkg`'s classes (SpikingJelly's or snnexport's)."""
    neuron_mod, _, surrogate_mod, functional_mod = pkg

    def make_neuron(width):
        args = {k: (width if v == "width" else T if v == "T" else v) for k, v in kw.items()}
        if args.get("act") == "relu":
            args["act"] = nn.ReLU()
        if sg is not None:
            args["surrogate_function"] = getattr(surrogate_mod, sg)()
        return getattr(neuron_mod, cls)(**args)

    net = Net(pkg, make_neuron, conv=cls in CONV)
    functional_mod.set_step_mode(net, "m")
    return net


def firing_rates(net, x):
    """Each neuron layer's share of nonzero outputs (LIAF: of act(H - v_threshold) > 0)."""
    rates, hooks = {}, []
    for i, m in enumerate(net.stack):
        if "Node" in type(m).__name__:
            hooks.append(m.register_forward_hook(
                lambda mod, inp, out, i=i: rates.__setitem__(i, float((out != 0).float().mean()))))
    try:
        net(x)
    finally:
        for h in hooks:
            h.remove()
    return rates


def check_one(args, sj, name, cls, kw, sg, data):
    sx = (sx_neuron, sx_layer, sx_surrogate, sx_functional)
    if not hasattr(sj[0], cls) or (sg is not None and not hasattr(sj[2], sg)):
        return f"{name}: not in this SpikingJelly tree, skipped"
    torch.manual_seed(0)
    try:
        theirs = make_net(sj, cls, kw, sg)
    except Exception as e:  # noqa: BLE001 - a defect of that SpikingJelly tree, reported
        return f"{name}: SpikingJelly's own class fails there ({type(e).__name__}: {e}), skipped"
    step = [1, SIDE, SIDE] if cls in CONV else [IN]
    x = torch.rand(T, B, *step, generator=torch.Generator().manual_seed(1))
    calibrate(theirs, x, torch.Generator().manual_seed(2), scaled=(nn.Linear, nn.Conv2d))
    ours = make_net(sx, cls, kw, sg)
    ours.load_state_dict(theirs.state_dict())
    # Training mode for SpikingJelly's forward too: its eval-mode paths of some classes fail in
    # 0.0.0.0.14 (LIAFNode's), and the network has no Dropout or BatchNorm to differ.
    with torch.no_grad():
        sj[3].reset_net(theirs)
        sx_functional.reset_net(ours)
        want, mine = theirs(x), ours(x)
        sj[3].reset_net(theirs)
        rates = firing_rates(theirs, x)
    sj[3].reset_net(theirs)
    if not torch.equal(want, mine):
        raise tc.Failure(f"{name}: snnexport's port differs from SpikingJelly's class "
                         f"(max |diff| {float((want - mine).abs().max()):.3g})")
    quiet = {k: r for k, r in rates.items() if not 0.05 <= r <= 0.5}
    if quiet:
        raise tc.Failure(f"{name}: neuron layers outside 5-50 % firing: {quiet}")
    d = tc.fresh_dir(os.path.join(args.work, name.replace("+", "_")))
    onnx_path, art = os.path.join(d, "model.onnx"), os.path.join(d, "art")
    export_onnx(theirs, x, onnx_path)
    sj[3].reset_net(theirs)
    tc.run([os.path.join(args.bin, "snn-compile"), onnx_path, "-o", art])
    np.save(os.path.join(d, "input.npy"), x.numpy())
    tc.run([os.path.join(args.bin, "snn-run"), "infer", art, "--input",
            os.path.join(d, "input.npy"), "--output", os.path.join(d, "output.npy")])
    got = np.load(os.path.join(d, "output.npy"))
    if tc.rel_err(got, want.numpy()) > 1e-6:
        raise tc.Failure(f"{name}: snn-run infer differs from SpikingJelly "
                         f"(rel err {tc.rel_err(got, want.numpy()):.3g})")
    return (f"{name}: identical forward, infer equal, "
            + train_both(args, theirs, art, d, data[cls in CONV]))


def train_both(args, theirs, art, d, data):
    """3 SGD steps by snn-run train and by autograd on SpikingJelly's modules."""
    params, log = os.path.join(d, "params"), os.path.join(d, "log.jsonl")
    tc.run([os.path.join(args.bin, "snn-run"), "train", art, "--data-npy", data, "--steps",
            STEPS, "--batch-size", B, "--lr", "0.2", "--optimizer", "sgd", "--momentum", "0.9",
            "--loss", "mse", "--seed", 5, "--threads", 1, "--progress", "none",
            "--repeat-time", T, "--log", log, "--save-params", params])
    got = tc.load_params(params)
    theirs.train()
    start = {k: v for k, v in tr.state_arrays(theirs).items()
             if k.rsplit(".", 1)[-1] not in DERIVED_BUFFERS}
    cfg = tr.TrainConfig(batch_size=B, steps=STEPS, lr=0.2, optimizer="sgd", momentum=0.9,
                         loss="mse", seed=5, repeat_time=T)
    try:
        res = tr.train(theirs, tr.load_npy(*data.split(","), static=True), cfg)
    except Exception as e:  # noqa: BLE001 - a defect of that SpikingJelly tree, reported
        return f"SpikingJelly's own training fails there ({type(e).__name__}), not compared"
    want = {k: v for k, v in tr.state_arrays(theirs).items()
            if k.rsplit(".", 1)[-1] not in DERIVED_BUFFERS}
    worst = tc.compare_params(got, want, "final weights")
    moved = max(tc.rel_err(want[k], start[k]) for k in want)
    if moved < 1e-3:
        raise tc.Failure(f"the weights hardly moved ({moved:.2g})")
    steps, _ = tc.read_log(log)
    for i, (ev, loss) in enumerate(zip(steps, res.losses)):
        if tc.rel_err(ev["loss"], loss) > tc.TOL:
            raise tc.Failure(f"loss of step {i}: {ev['loss']!r} vs SpikingJelly {loss!r}")
    return f"trained alike (worst weight rel err {worst:.2g}, moved {moved:.2g})"


def load_spikingjelly(source):
    """SpikingJelly's neuron, layer, surrogate and functional modules from `source`."""
    if not os.path.isdir(os.path.join(source, "spikingjelly")):
        raise tc.Failure(f"--spikingjelly {source}: no spikingjelly/ package there")
    sys.path.insert(0, source)
    try:
        return tuple(importlib.import_module(f"spikingjelly.activation_based.{m}")
                     for m in ("neuron", "layer", "surrogate", "functional"))
    except Exception as e:  # noqa: BLE001 - one line naming the tree
        raise tc.Failure(f"--spikingjelly {source} does not import here: "
                         f"{type(e).__name__}: {e}") from None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--spikingjelly", required=True, help="a SpikingJelly source tree")
    p.add_argument("--only", default="", help="comma-separated case names (default: all)")
    args = p.parse_args()

    def check():
        sj = load_spikingjelly(args.spikingjelly)
        work = tc.fresh_dir(args.work)
        args.work = work
        data = [tc.static_images(os.path.join(work, f"x{i}.npy"), os.path.join(work, f"y{i}.npy"),
                                 B * STEPS, shape)
                for i, shape in enumerate(([IN], [1, SIDE, SIDE]))]
        only = [n for n in args.only.split(",") if n]
        checked = 0
        for name, cls, kw, sg in cases():
            if only and name not in only:
                continue
            line = check_one(args, sj, name, cls, kw, sg, data)
            checked += "skipped" not in line and "not compared" not in line
            print(line, flush=True)
        print(f"PASS: {checked} SpikingJelly classes compute and train as SpikeMesh does")

    tc.main_wrapper(check)


if __name__ == "__main__":
    main()
