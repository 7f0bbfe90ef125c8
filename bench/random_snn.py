#!/usr/bin/python3
"""Random SNN architectures, seeded: for checks that must hold beyond the models they were
tuned on (the planner's held-out evaluation, bench/planner_heldout.py).

A seed draws a spec (a JSON-able dict): one of four families, each with its sizes, T, the
batch's input kind, and one neuron (IF, LIF or PLIF with drawn tau, decay_input, v_reset,
detach_reset and surrogate) used by every layer:
  conv       [Conv3x3 (stride 1 or 2) (+BN) - neuron (+ max or avg pool)] x 1-4, widening;
  resnet     a Conv-BN-neuron stem, then SEW blocks (x + sn(bn(conv(sn(bn(conv(x)))))), ADD)
             with a pool between some of them;
  attention  a Conv-BN-neuron stem pooled to a few tokens, then 1-2 residual spiking
             self-attention blocks (Spikformer's) over the H*W tokens;
  mlp        Linear - neuron layers of drawn widths, residual where the width stays.
Each image family ends in Flatten (or a global average pool), an optional hidden
Linear - neuron, and a Linear - neuron readout whose rate over T is the output [N, classes].
Widths are multiples of 8, so every width splits over 2 and 4 tensor-parallel ranks.

  bench/random_snn.py --seed S --out DIR [--N 32] [--attempts 4]   write the case (make_case's
                                                                    files; meta.json has the spec)
  bench/random_snn.py --seed S --describe                           print the spec
"""
import argparse
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python_export"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from snnexport import functional, layer, neuron, reference, surrogate  # noqa: E402

FAMILIES = ("conv", "conv", "resnet", "attention", "mlp")  # conv drawn twice as often
SURROGATES = {"atan": surrogate.ATan, "sigmoid": surrogate.Sigmoid}


def _draw_neuron(g):
    kind = g.choice(["if", "lif", "lif", "plif"])
    spec = {"kind": kind, "surrogate": g.choice(sorted(SURROGATES)),
            "detach_reset": g.random() < 0.5, "v_reset": g.choice([0.0, 0.0, None])}
    if kind != "if":
        spec["decay_input"] = g.random() < 0.5
        # a decayed input reaches the threshold at 1/tau of its size: keep tau small there
        spec["tau"] = round(g.uniform(1.2, 2.0 if spec["decay_input"] else 3.0), 2)
    return spec


def _draw_image_input(g):
    channels = g.choice([1, 2, 3])
    # DVS-like event frames have two polarity channels; the others are images over T
    return {"kind": "image", "channels": channels, "size": g.choice([16, 24, 32]),
            "encoding": "events" if channels == 2 else "direct"}


def _draw_conv(g, size):
    blocks, width = [], g.choice([8, 16, 24, 32])
    for _ in range(g.randint(1, 4)):
        down = g.choice(["max", "avg", "stride", "none"]) if size >= 8 else "none"
        blocks.append({"type": "conv", "out": width, "bn": g.random() < 0.7,
                       "stride": 2 if down == "stride" else 1,
                       "pool": down if down in ("max", "avg") else None})
        size //= 1 if down == "none" else 2
        width = min(64, width * g.choice([1, 2]))
    return blocks, size


def _draw_resnet(g, size):
    width = g.choice([8, 16, 32])
    blocks = [{"type": "conv", "out": width, "bn": True, "stride": 1, "pool": None}]
    for _ in range(g.randint(1, 3)):
        blocks.append({"type": "residual", "bn": g.random() < 0.8})
        if size >= 8 and g.random() < 0.5:
            blocks.append({"type": "pool", "pool": g.choice(["max", "avg"])})
            size //= 2
    return blocks, size


def _draw_attention(g, size):
    width = g.choice([16, 32, 48])
    blocks = [{"type": "conv", "out": width, "bn": True, "stride": 1, "pool": "max"}]
    size //= 2
    while size > 8:
        blocks.append({"type": "pool", "pool": "max"})
        size //= 2
    for _ in range(g.randint(1, 2)):
        blocks.append({"type": "attention", "heads": g.choice([2, 4])})
    return blocks, size


def draw(seed):
    """The spec of random architecture `seed`."""
    g = random.Random(seed)
    family = g.choice(FAMILIES)
    spec = {"seed": seed, "family": family, "T": g.choice([2, 4, 4, 6, 8]),
            "classes": g.choice([4, 10, 16]), "neuron": _draw_neuron(g)}
    if family == "mlp":
        spec["input"] = {"kind": "vector", "features": g.choice([64, 128, 256, 784]),
                         "encoding": "random"}
        spec["blocks"] = [{"type": "linear", "out": g.choice([64, 128, 256])}
                          for _ in range(g.randint(2, 5))]
        return spec
    spec["input"] = _draw_image_input(g)
    draw_blocks = {"conv": _draw_conv, "resnet": _draw_resnet, "attention": _draw_attention}
    spec["blocks"], side = draw_blocks[family](g, spec["input"]["size"])
    spec["head"] = {"global_pool": family == "resnet" and g.random() < 0.5,
                    "hidden": g.choice([None, 32, 64, 128])}
    spec["side"] = side
    return spec


def _make_neuron(spec):
    kw = {"surrogate_function": SURROGATES[spec["surrogate"]](),
          "detach_reset": spec["detach_reset"], "v_reset": spec["v_reset"]}
    if spec["kind"] == "if":
        return neuron.IFNode(**kw)
    if spec["kind"] == "lif":
        return neuron.LIFNode(tau=spec["tau"], decay_input=spec["decay_input"], **kw)
    return neuron.ParametricLIFNode(init_tau=spec["tau"], decay_input=spec["decay_input"], **kw)


class ResidualBlock(nn.Module):
    """SEW basic block, ADD connect: x + sn(bn(conv(sn(bn(conv(x))))))."""

    def __init__(self, channels, bn, sn):
        super().__init__()

        def conv_bn():
            conv = nn.Conv2d(channels, channels, 3, padding=1, bias=not bn)
            return layer.SeqToANNContainer(conv, nn.BatchNorm2d(channels)) if bn else \
                layer.SeqToANNContainer(conv)
        self.conv1, self.sn1, self.conv2, self.sn2 = conv_bn(), sn(), conv_bn(), sn()

    def forward(self, x):
        return x + self.sn2(self.conv2(self.sn1(self.conv1(x))))


class AttentionBlock(nn.Module):
    """x + spiking self-attention over the H*W tokens of [T, N, C, H, W]."""

    def __init__(self, channels, heads):
        super().__init__()
        self.attn = layer.SpikingSelfAttention(channels, num_heads=heads)

    def forward(self, x):
        T, N, C, H, W = x.shape
        tokens = x.flatten(3)
        return (tokens + self.attn(tokens)).reshape(T, N, C, H, W).contiguous()


class LinearBlock(nn.Module):
    """sn(fc(x)), plus x where the width stays."""

    def __init__(self, features, out, sn):
        super().__init__()
        self.fc, self.sn, self.residual = layer.Linear(features, out), sn(), features == out

    def forward(self, x):
        y = self.sn(self.fc(x))
        return x + y if self.residual else y


def _image_layers(spec, sn):
    mods, c = [], spec["input"]["channels"]
    for b in spec["blocks"]:
        if b["type"] == "conv":
            mods.append(layer.Conv2d(c, b["out"], 3, stride=b["stride"], padding=1,
                                     bias=not b["bn"]))
            mods += [layer.BatchNorm2d(b["out"])] if b["bn"] else []
            mods.append(sn())
            c = b["out"]
        elif b["type"] == "residual":
            mods.append(ResidualBlock(c, b["bn"], sn))
        elif b["type"] == "attention":
            mods.append(AttentionBlock(c, b["heads"]))
        pool = b.get("pool")
        if pool:
            mods.append(layer.MaxPool2d(2, 2) if pool == "max" else layer.AvgPool2d(2, 2))
    return mods, c


class RandomSNN(nn.Module):
    """The network a spec describes: [T, N, ...] -> firing rate [N, classes]."""

    def __init__(self, spec):
        super().__init__()

        def sn():
            return _make_neuron(spec["neuron"])
        if spec["input"]["kind"] == "vector":
            mods, f = [], spec["input"]["features"]
            for b in spec["blocks"]:
                mods.append(LinearBlock(f, b["out"], sn))
                f = b["out"]
        else:
            mods, c = _image_layers(spec, sn)
            head = spec["head"]
            if head["global_pool"]:
                mods.append(layer.AdaptiveAvgPool2d((1, 1)))
            mods.append(layer.Flatten())
            f = c if head["global_pool"] else c * spec["side"] ** 2
            if head["hidden"]:
                mods += [layer.Linear(f, head["hidden"]), sn()]
                f = head["hidden"]
        mods += [layer.Linear(f, spec["classes"]), sn()]
        self.body = nn.Sequential(*mods)
        functional.set_step_mode(self, "m")

    def forward(self, x_seq):
        return self.body(x_seq).mean(0)


def step_shape(spec):
    i = spec["input"]
    return [i["features"]] if i["kind"] == "vector" else [i["channels"], i["size"], i["size"]]


def _bn_init(spec):
    """BatchNorm init: the default, but for the attention's q, k and v a BN shift that makes
    ((v k^T) q) / 8, a sum over L tokens and D channels a head of products of three spike
    trains, reach the attention neuron's 0.5 threshold for some: q, k, v firing near
    p = (8 / (D L))^(1/3) (the shift for p interpolated between two measured points: 0 to
    0.3 gives about 8 %, 1.0 to 1.4 about 33 %)."""
    blocks = spec.get("blocks", [])
    width = next((b["out"] for b in blocks if b["type"] == "conv"), 8)
    heads = next((b["heads"] for b in blocks if b["type"] == "attention"), 1)
    p = min(0.45, max(0.08, (8 / (width // heads * spec.get("side", 1) ** 2)) ** (1 / 3)))
    shift = min(1.4, max(0.0, 0.15 + (p - 0.08) * 1.05 / 0.25))

    def init(path):
        floor, gamma, beta = reference.default_bn_init(path)
        return floor, gamma, (shift - 0.2, shift + 0.2) if ".qkv_conv_bn." in f".{path}." \
            else beta
    return init


def write(spec, out_dir, N=32, attempts=4):
    """Builds, calibrates (BatchNorm statistics from the data; Linear and BN-less convolutions
    scaled so that the next neuron fires) and exports the case of `spec` into `out_dir`, in
    make_case's format; meta.json carries the spec. Returns meta."""
    reference.set_seed(spec["seed"])
    model = RandomSNN(spec)
    x, out, stats, attempt = reference.seeded_case(
        model, step_shape(spec), spec["input"]["encoding"], spec["T"], N, spec["seed"],
        attempts, bn_init=_bn_init(spec), scaled=(nn.Linear, nn.Conv2d, nn.Conv1d))
    return reference.write_case(model, x, out, stats, out_dir, kind="rate",
                                meta={"model": "random", "spec": spec, "T": spec["T"],
                                      "N": N, "seed": spec["seed"],
                                      "encoding": spec["input"]["encoding"],
                                      "input_attempt": attempt})


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", help="write the case here")
    p.add_argument("--N", type=int, default=32, help="batch of the case's input (default 32)")
    p.add_argument("--attempts", type=int, default=4, help="input draws (default 4)")
    p.add_argument("--describe", action="store_true", help="print the spec")
    args = p.parse_args()
    spec = draw(args.seed)
    if args.describe or not args.out:
        print(json.dumps(spec, indent=2))
    if args.out:
        meta = write(spec, args.out, args.N, args.attempts)
        rates = {k: round(v["firing_rate"], 3) for k, v in meta["neurons"].items()}
        print(json.dumps({"spec": spec["family"], "firing_rates": rates}))


if __name__ == "__main__":
    main()
