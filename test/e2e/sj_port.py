"""Import-only port of a SpikingJelly zoo network: export, compile, infer, train.

One network of sj_zoo.py, built with the zoo's constructor arguments and used as SpikingJelly
code uses it (a single-step model run over T, direct encoding inside forward, set_step_mode),
at a small input size where the zoo takes one. Required, against PyTorch:
  - export_onnx and snn-compile accept the model unchanged;
  - `snn-run infer` equals the PyTorch forward: spike (and VotingLayer) outputs bit-equal; a
    real-valued fc output within the float32 bound of its reduction, K * eps * (|W||s| + |b|)
    for K inputs (the spikes s it reads must then be the same). The input is the best of 8
    draws by the count of membrane potentials within 1e-4 of the threshold;
  - every neuron layer fires at 5-50 % on that input and on the first training batch;
  - 5 training steps (`snn-run train --no-channels-last`: NCHW convolutions, as eager PyTorch
    runs them; SGD with momentum, MSE on the firing rate) against the reference trainer
    (snnexport.train) driving the model the way its SpikingJelly code does:
    losses within 1e-4 relative, the loss moving, every parameter and buffer within 1e-4
    (a bias a BatchNorm follows has a zero gradient, so it holds only roundoff: it is held to
    the float32 bound of that roundoff instead, ZeroGradientNoise);
  - 1 training step of snn-run's default (channels-last convolutions): every parameter and
    buffer within 1e-4 of the reference's after its first step.

Usage: sj_port.py --bin BUILD/bin --work DIR --model NAME
"""
import argparse
import copy
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads before torch loads
import numpy as np  # noqa: I100
import torch
import train_tp as ttp
import train_trajectory as tt
from torch import nn

import sj_zoo as zoo
from snnexport import encoding, export_onnx, functional, neuron, reference, surrogate
from snnexport import train as tr
from snnexport.model import spikformer  # SpikingJelly's activation_based.model.spikformer

STEPS = 5
SGD = dict(optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=5e-4, schedule="constant",
           loss="mse", seed=7, shuffle=False)
EPS32 = float(np.finfo(np.float32).eps)
# VGG's 4096-wide classifier diverges at the others' rate (the loss grows 1e5-fold in 5 steps).
LR = {"spiking_vgg11_bn": 1e-3}


def plif(**extra):
    """The parametric_lif_net paper's neuron arguments."""
    return dict(spiking_neuron=neuron.ParametricLIFNode, surrogate_function=surrogate.ATan(),
                detach_reset=True, **extra)


def lif_node(**extra):
    return dict(spiking_neuron=neuron.LIFNode, surrogate_function=surrogate.ATan(),
                detach_reset=True, **extra)


def if_node(**extra):
    return dict(spiking_neuron=neuron.IFNode, surrogate_function=surrogate.ATan(),
                detach_reset=True, **extra)


# name -> (builder, T, N, per-sample shape, data, classes, how the zoo code runs it)
#   data: direct (static images, repeated over T), events (binary frames), poisson (encoded)
#   use: loop (single-step model over T), encodes (repeats its [N, ...] input itself), multi
CASES = {
    "lif_fc_mnist": (lambda: zoo.SNN(tau=2.0), 4, 8, [1, 28, 28], "poisson", 10, "loop"),
    "conv_fashion_mnist": (lambda: zoo.CSNN(T=4, channels=8), 4, 8, [1, 28, 28], "direct", 10,
                           "encodes"),
    "mnist_net": (lambda: zoo.MNISTNet(8, **plif()), 4, 8, [1, 28, 28], "direct", 10, "multi"),
    "cifar10_net": (lambda: zoo.CIFAR10Net(8, **if_node()), 4, 8, [3, 32, 32], "direct", 10,
                    "multi"),
    "cifar10dvs_net": (lambda: zoo.CIFAR10DVSNet(8, **if_node()), 4, 8, [2, 128, 128], "events",
                       10, "multi"),
    "dvsgesture_net": (lambda: zoo.DVSGestureNet(8, **if_node()), 4, 8, [2, 128, 128], "events",
                       11, "multi"),
    "sew_resnet18": (lambda: zoo.sew_resnet18(cnf="ADD", num_classes=10, **if_node()), 4, 8,
                     [3, 32, 32], "direct", 10, "multi"),
    "spiking_resnet18": (lambda: zoo.spiking_resnet18(num_classes=10, **lif_node()), 4, 8,
                         [3, 32, 32], "direct", 10, "multi"),
    "spiking_vgg11_bn": (lambda: zoo.spiking_vgg11_bn(num_classes=10, **if_node()), 2, 4,
                         [3, 32, 32], "direct", 10, "multi"),
    # The model zoo's Spikformer, 2 blocks at 32 x 32 (4 tokens of 64 channels, 4
    # heads); it repeats its [N, C, H, W] input over T itself and returns [T, N, classes].
    "spikformer": (lambda: spikformer.Spikformer(T=4, img_size_h=32, img_size_w=32,
                                                 num_classes=10, embed_dims=64, num_heads=4,
                                                 depths=2), 4, 8, [3, 32, 32], "direct", 10,
                   "encodes"),
}


class Looped(nn.Module):
    """A single-step network run over T, as the lif_fc tutorial's training loop does."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x_seq):
        return functional.multi_step_forward(x_seq, self.net)


class FirstStep(nn.Module):
    """Feeds a model that repeats its input itself the trainer's [T, N, ...] batch (all steps
    equal under direct encoding) as the [N, ...] batch it takes."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x_seq):
        return self.net(x_seq[0])


def build(name):
    make, T, N, shape, data, classes, use = CASES[name]
    torch.manual_seed(0)
    net = make()
    if use == "multi":
        functional.set_step_mode(net, "m")  # as the zoo's own test_models does
    return net


def time_major(net, use):
    """The network as a multi-step module on [T, N, ...] (what the statistics need)."""
    if use == "loop":
        net = copy.deepcopy(net)
        functional.set_step_mode(net, "m")
        return net
    return FirstStep(net) if use == "encodes" else net


def trainable(net, use):
    """The module the reference trainer drives: the SpikingJelly code's own use of `net`."""
    return Looped(net) if use == "loop" else FirstStep(net) if use == "encodes" else net


def samples(kind, count, T, shape, gen):
    """float32 inputs: images [count, *shape], or sequences [count, T, *shape]."""
    if kind == "direct":
        return torch.rand([count] + shape, generator=gen)
    if kind == "events":
        return (torch.rand([count, T] + shape, generator=gen) < 0.3).float()
    images = torch.rand([count] + shape, generator=gen)
    encoder = encoding.PoissonEncoder(generator=gen)  # the tutorial's encoder, seeded
    return torch.stack([encoder(images) for _ in range(T)], 1)


def as_time_major(kind, x, T):
    if kind == "direct":
        return x.unsqueeze(0).repeat(T, *([1] * x.dim()))
    return x.transpose(0, 1).contiguous()


def pick_input(tm_net, kind, T, N, shape, gen, bn_init=None):
    """Calibrates (BatchNorm ranges `bn_init`, the default when None), then draws inputs
    until none puts a potential within 1e-4 of the threshold (best of 8). Returns
    (sample-major x, stats)."""
    calibrate_x = as_time_major(kind, samples(kind, N, T, shape, gen), T)
    reference.calibrate(tm_net, calibrate_x, gen, bn_init)
    best = None
    for _ in range(8):
        x = samples(kind, N, T, shape, gen)
        _, stats = reference.run_reference(tm_net, as_time_major(kind, x, T))
        near = sum(s["near_count"] for s in stats.values())
        if best is None or near < best[0]:
            best = (near, x, stats)
        if near == 0:
            break
    count = sum(s["count"] for s in best[2].values())
    print(f"case input: {best[0]} of {count} potentials within 1e-4 of the threshold (the "
          "runtime makes the same ATen calls on the same shapes, so even these must agree)")
    return best[1], best[2]


def readout_linear(net):
    """The Linear whose real-valued output the network returns (ResNets, VGG, Spikformer's
    head), or None when the output is spikes or a VotingLayer's averages of spikes."""
    fc = getattr(net, "fc", getattr(net, "head", None))
    if fc is None and hasattr(net, "classifier"):
        fc = net.classifier[-1]
    return fc if isinstance(fc, nn.Linear) else None


def fc_bound(tm_net, fc, x_tm):
    """Elementwise float32 bound of the readout's GEMM: K * eps * (|W| |s| + |b|)."""
    seen = []
    hook = fc.register_forward_hook(lambda m, i, o: seen.append(i[0]))
    try:
        reference.run_reference(tm_net, x_tm)
    finally:
        hook.remove()
    s = seen[0].abs()
    bias = fc.bias.detach().abs() if fc.bias is not None else 0.0
    return (fc.in_features * EPS32 * (s @ fc.weight.detach().abs().t() + bias)).numpy()


def check_infer(args, net, use, x, expected, bound):
    """Export (the model as its SpikingJelly code holds it), compile, snn-run infer."""
    _, T, _, _, kind, _, _ = CASES[args.model]
    onnx_path, art = os.path.join(args.work, "model.onnx"), os.path.join(args.work, "art")
    example = x if use == "encodes" else as_time_major(kind, x, T)
    export_onnx(net, example, onnx_path)
    shutil.rmtree(art, ignore_errors=True)
    tc.run([os.path.join(args.bin, "snn-compile"), onnx_path, "-o", art])
    given = os.path.join(args.work, "input.npy")
    out = os.path.join(args.work, "output.npy")
    np.save(given, (x if kind == "direct" else as_time_major(kind, x, T)).numpy())
    cmd = [os.path.join(args.bin, "snn-run"), "infer", art, "--input", given, "--output", out]
    tc.run(cmd + (["--repeat-time", T] if kind == "direct" else []))
    got, want = np.load(out), expected.numpy()
    if got.shape != want.shape:
        raise tc.Failure(f"infer output {got.shape} != PyTorch {want.shape}")
    if bound is None:
        differ = int(np.count_nonzero(got != want))
        if differ:
            raise tc.Failure(f"infer: {differ} of {got.size} outputs differ from PyTorch")
        print(f"infer: output {list(got.shape)} bit-equal to PyTorch")
    else:
        excess = np.abs(got - want) - bound
        if (excess > 0).any():
            raise tc.Failure(f"infer: {int((excess > 0).sum())} outputs beyond the float32 "
                             f"bound (worst excess {excess.max():.3g})")
        print(f"infer: output {list(got.shape)} within the GEMM bound "
              f"(max |diff| {np.abs(got - want).max():.3g}, min bound {bound.min():.3g})")
    return art


def strip_name(k, prefix="net."):
    """A wrapper's (Looped, FirstStep) parameter name as the wrapped network's."""
    return k[len(prefix):] if k.startswith(prefix) else k


def strip(arrays):
    return {strip_name(k): v for k, v in arrays.items()}


def zero_gradient_biases(model):
    """name -> module of every Conv/Linear bias whose gradient is zero in exact arithmetic: the
    module is followed in its nn.Sequential by a BatchNorm (training mode normalises with the
    batch statistics, so a per-channel shift cancels). SpikingJelly's VGG starts them at 0."""
    found = {}
    for prefix, seq in model.named_modules():
        if not isinstance(seq, nn.Sequential):
            continue
        kids = list(seq.named_children())
        for (name, m), (_, after) in zip(kids, kids[1:]):
            if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Linear)) and m.bias is not None and \
                    isinstance(after, nn.modules.batchnorm._BatchNorm):
                found[f"{prefix}.{name}.bias" if prefix else f"{name}.bias"] = m
    return found


class ZeroGradientNoise:
    """Records, per training step, the BatchNorm-input gradient g of each zero-gradient bias's
    module, and turns it into a float32 bound on how far two runs' biases can drift apart.

    The bias gradient is the sum of g over the n = numel / C positions of a channel, exactly 0;
    computed in float32 it is at most the summation error n * eps * sum|g| plus the terms' own
    rounding (bounded the same way), so |noise| <= 2 n eps sum|g| each step. SGD with momentum
    mu carries a step's noise into every later update: after S steps the bias is off its exact
    value by at most lr * sum_t sum_{k<=t} mu^(t-k) b_k; two runs differ by twice that."""

    def __init__(self, model):
        self.modules = zero_gradient_biases(model)
        self.per_step = {k: [] for k in self.modules}
        self.hooks = [m.register_full_backward_hook(self._hook(k))
                      for k, m in self.modules.items()]

    def _hook(self, key):
        def record(module, grad_input, grad_output):
            g = grad_output[0].detach().double()
            channels = module.weight.shape[0]
            self.per_step[key].append(2 * (g.numel() // channels) * EPS32 * float(g.abs().sum()))
        return record

    def bounds(self, lr, momentum, rename):
        for h in self.hooks:
            h.remove()
        out = {}
        for key, steps in self.per_step.items():
            carried, total = 0.0, 0.0
            for b in steps:
                carried = momentum * carried + b
                total += lr * carried
            out[rename(key)] = 2 * total
        return out


def check_first_step(args, snn_run, model, data, opts, N, repeat_time):
    """One step of snn-run's default (channels-last) convolutions against the reference:
    every parameter and buffer within 1e-4 (summation order only, before any spike can
    flip)."""
    c = tr.TrainConfig(batch_size=N, steps=1, repeat_time=repeat_time, **opts)
    params = os.path.join(args.work, "train", "params_first_step")
    tc.run(snn_run + [*tt.cli_flags(c), "--save-params", params])
    noise = ZeroGradientNoise(model)
    tr.train(model, data, c)
    worst = tc.compare_params(tc.load_params(params), strip(tr.state_arrays(model)),
                              f"{args.model} weights after one channels-last step",
                              noise=noise.bounds(c.lr, c.momentum, strip_name))
    print(f"training: one step with channels-last convolutions, worst rel err vs "
          f"reference {worst:.3g}")


def check_training(args, art, net, use, gen):
    _, T, N, shape, kind, classes, _ = CASES[args.model]
    d = tc.fresh_dir(os.path.join(args.work, "train"))
    x_path, y_path = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(x_path, samples(kind, N * STEPS, T, shape, gen).numpy())
    np.save(y_path, torch.randint(0, classes, (N * STEPS,), generator=gen).numpy())
    static = kind == "direct"
    opts = dict(SGD, lr=LR.get(args.model, SGD["lr"]))
    c = tr.TrainConfig(batch_size=N, steps=STEPS, repeat_time=T if static else None, **opts)
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    snn_run = [os.path.join(args.bin, "snn-run"), "train", art, "--data-npy",
               f"{x_path},{y_path}", "--threads", 2] + (["--repeat-time", T] if static else [])
    # Like with like: eager PyTorch convolves NCHW tensors, so the five steps run snn-run's
    # dense NCHW convolutions too. Any other summation order (snn-run's default channels-last
    # convolutions) moves a deep network's trajectory away once a spike lying within
    # rounding of the threshold flips; those are checked on one step below.
    tc.run(snn_run + [*tt.cli_flags(c), "--log", log, "--save-params", params,
                      "--no-channels-last", *tc.DENSE_KERNELS])
    data = tr.load_npy(x_path, y_path, static=static)
    first, _ = data.batch(range(N), T)
    ttp.check_rates(reference.run_reference(time_major(net, use), first)[1],
                    f"{args.model}: first training batch")
    model = trainable(net, use)
    check_first_step(args, snn_run, copy.deepcopy(model), data, opts, N, T if static else None)
    initial = strip(tr.state_arrays(model))
    noise = ZeroGradientNoise(model)
    res = tr.train(model, data, c)
    noise = noise.bounds(c.lr, c.momentum, strip_name)
    steps, _ = tc.read_log(log)
    tt.check_steps(args.model, steps, res, c, len(data))
    if max(res.losses) - min(res.losses) <= 1e-6 * max(abs(v) for v in res.losses):
        raise tc.Failure(f"the loss does not move over {STEPS} steps: {res.losses}")
    trained = strip(tr.state_arrays(model))
    moved = max(tc.rel_err(trained[k], initial[k]) for k in trained)
    worst = tc.compare_params(tc.load_params(params), trained, f"{args.model} final weights",
                              noise=noise)
    if noise:
        print(f"{len(noise)} biases have a zero gradient (a BatchNorm follows): compared "
              f"within their float32 roundoff bounds ({min(noise.values()):.3g} to "
              f"{max(noise.values()):.3g}) instead of relatively")
    print(f"training: losses {[round(v, 6) for v in res.losses]}; weights moved {moved:.3g}, "
          f"worst rel err vs reference {worst:.3g}")
    return worst


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True, choices=sorted(CASES))
    args = p.parse_args()
    torch.set_num_threads(2)
    tc.fresh_dir(args.work)
    _, T, N, shape, kind, _, use = CASES[args.model]
    # Not seed 0: that stream initialised the weights, and inputs drawn from it would be
    # correlated with them.
    gen = torch.Generator().manual_seed(1)
    net = build(args.model)
    tm_net = time_major(net, use)
    x, stats = pick_input(tm_net, kind, T, N, shape, gen, reference.BN_INIT.get(args.model))
    if use == "loop":  # calibration ran on the multi-step copy: bring its weights back
        net.load_state_dict(tm_net.state_dict())
    ttp.check_rates(stats, f"{args.model}: case input")
    expected, _ = reference.run_reference(tm_net, as_time_major(kind, x, T))
    fc = readout_linear(net)
    bound = fc_bound(tm_net, fc, as_time_major(kind, x, T)) if fc is not None else None
    art = check_infer(args, net, use, x, expected, bound)
    worst = check_training(args, art, net, use, gen)
    print(f"PASS: {args.model} ported by its import: infer equal, 5 training steps within "
          f"{worst:.2g} of PyTorch")


if __name__ == "__main__":
    tc.main_wrapper(main)
