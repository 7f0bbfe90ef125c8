"""Firing rates per neuron layer, measured by snn-run's neuron kernels, against PyTorch.

For one model (csnn: static images with direct encoding; vgg_dvs: event sequences, BatchNorm,
Dropout), from the case's exported weights:
  - `snn-run infer -v` on the case's input prints one line per neuron layer (the PyTorch
    module's name, its rate, the kernel that ran it); the layers are the model's neuron
    modules, each rate within 2e-6 of the PyTorch model's on the same input (make_case's
    meta.json, measured by forward hooks), and with fused spiking blocks in the program at
    least one layer ran on them;
  - `snn-run train --log` for 5 steps: every step event's `firing_rates` holds each layer's
    rate of that step within 2e-3 of the PyTorch reference trainer's (snnexport.train, same
    data and order, its neuron modules' outputs hooked during the training forwards; the two
    trajectories agree to 1e-4 relative, so a neuron near its threshold may flip), the first
    step's within 2e-6 (same weights, same batch), and the epoch event's rates are the mean of
    its steps';
  - the same training on 2 data-parallel ranks (`snn-compile --mode dp`, `snn-run --nproc 2`)
    logs the global batch's rates: within 2e-3 of the one-process run, step by step;
  - with --pp: `snn-run --nproc 2 infer -v` of the 2-stage pipeline artifact prints the same
    table as the one-process artifact on the same input (every stage's layers, in model order,
    the same rates: the math is the same), each layer firing at 5-50 %;
  - with --pp: the same training as a 2-stage pipeline on 2 ranks (1F1B, 2 microbatches): every
    step event names every stage's layers, and the first step's rates are within 2e-6 of the
    PyTorch model's training forwards of the same two microbatches (BatchNorm normalises each
    microbatch with its own statistics, as the pipeline does);
  - every compared layer fires at 5-50 % and the loss moves.

Usage: firing_rates.py --bin BUILD/bin --work DIR --model csnn|vgg_dvs [--pp]
"""
import argparse
import json
import os
import re

import train_common as tc  # first: it sets the BLAS threads before torch loads
import torch  # noqa: I100
from snnexport import functional
from snnexport import train as tr

T, B, STEPS = 4, 8, 5
EXACT, TRAJECTORY = 2e-6, 2e-3

MODELS = {
    "csnn": ({"width": 16}, [1, 28, 28], True),
    "vgg_dvs": ({"width": 16, "image": 32, "blocks": 2}, [2, 32, 32], False),
}
TABLE_ROW = re.compile(r"  (\S+)\s+([0-9.]+)  (.+)")


def infer_table(stderr):
    """{layer: (rate, kernel)} of the table `snn-run infer -v` prints after its summary."""
    lines = stderr.splitlines()
    if "snn-run: firing rates" not in lines:
        raise tc.Failure("snn-run infer -v printed no firing-rate table")
    rows = lines[lines.index("snn-run: firing rates") + 2:]
    table = {}
    for row in rows:
        m = TABLE_ROW.fullmatch(row)
        if not m:
            break
        table[m.group(1)] = (float(m.group(2)), m.group(3))
    return table


def check_infer(snn_run, case, art, work):
    with open(os.path.join(case, "meta.json")) as f:
        want = {k: v["firing_rate"] for k, v in json.load(f)["neurons"].items()}
    proc = tc.run([snn_run, "infer", art, "-i", os.path.join(case, "input.npy"),
                   "-o", os.path.join(work, "y.npy"), "-v"])
    got = infer_table(proc.stderr)
    if list(got) != list(want):
        raise tc.Failure(f"infer -v layers {list(got)}, the PyTorch model's {list(want)}")
    for layer, rate in want.items():
        print(f"infer {layer:>12}: snn-run {got[layer][0]:.6f} PyTorch {rate:.6f} "
              f"({got[layer][1]})")
        if abs(got[layer][0] - rate) > EXACT:
            raise tc.Failure(f"infer: {layer} fires {got[layer][0]}, PyTorch {rate}")
    return got


def reference_rates(case, data, config):
    """Per layer, the rate of each training step of the PyTorch reference trainer."""
    model, _ = tr.model_from_case(case)
    rates = {}

    def recorder(name):
        def record(module, inputs, output):
            if module.training:
                rates.setdefault(name, []).append(float(output.double().mean()))
        return record

    for name, module in model.named_modules():
        if type(module).__name__.endswith("Node"):
            module.register_forward_hook(recorder(name))
    tr.train(model, data, config)
    return rates


def compare_steps(steps, want, what, first_exact):
    worst = 0.0
    if len(steps) != STEPS:
        raise tc.Failure(f"{what}: {len(steps)} step events, expected {STEPS}")
    for i, ev in enumerate(steps):
        got = ev.get("firing_rates")
        if not got or list(got) != list(want):
            raise tc.Failure(f"{what}: step {i} firing_rates {got}, want layers {list(want)}")
        for layer, rates in want.items():
            diff = abs(got[layer] - rates[i])
            tol = EXACT if i == 0 and first_exact else TRAJECTORY
            if diff > tol:
                raise tc.Failure(f"{what}: step {i}: {layer} fires {got[layer]}, reference "
                                 f"{rates[i]} (|diff| {diff:.3g} > {tol})")
            worst = max(worst, diff)
    return worst


def check_epoch(epochs, steps, what):
    if not epochs or "firing_rates" not in epochs[-1]:
        raise tc.Failure(f"{what}: the epoch event has no firing_rates")
    for layer, rate in epochs[-1]["firing_rates"].items():
        mean = sum(s["firing_rates"][layer] for s in steps) / len(steps)
        if abs(rate - mean) > 1e-9:
            raise tc.Failure(f"{what}: epoch rate of {layer} {rate}, mean of its steps {mean}")


def microbatch_rates(case, data, config, microbatches):
    """Per layer, the rate of the first step's training forwards, one per microbatch."""
    model, _ = tr.model_from_case(case)
    model.train()
    spikes, counts = {}, {}

    def recorder(name):
        def record(module, inputs, output):
            spikes[name] = spikes.get(name, 0.0) + float(output.double().sum())
            counts[name] = counts.get(name, 0) + output.numel()
        return record

    for name, module in model.named_modules():
        if type(module).__name__.endswith("Node"):
            module.register_forward_hook(recorder(name))
    order = tr.splitmix64_order(config.seed, 0, len(data))[:config.batch_size]
    size = config.batch_size // microbatches
    with torch.no_grad():
        for m in range(microbatches):
            x, _ = data.batch(order[m * size:(m + 1) * size], config.repeat_time)
            functional.reset_net(model)
            model(x)
    return {name: spikes[name] / counts[name] for name in spikes}


def check_pipeline_infer(snn_run, case, art, work, table):
    """`infer -v` on 2 pipeline ranks: the one-process table's layers and rates."""
    proc = tc.run([snn_run, "--nproc", 2, "infer", art, "-i", os.path.join(case, "input.npy"),
                   "-o", os.path.join(work, "y_pp2.npy"), "-v", "--threads", 1])
    got = infer_table(proc.stderr)
    if list(got) != list(table):
        raise tc.Failure(f"pp=2 infer -v layers {list(got)}, one process {list(table)}")
    for layer, (rate, _) in table.items():
        print(f"pp=2 infer {layer:>12}: {got[layer][0]:.6f} one process {rate:.6f} "
              f"({got[layer][1]})")
        if got[layer][0] != rate:
            raise tc.Failure(f"pp=2 infer: {layer} fires {got[layer][0]}, one process {rate}")
        if not 0.05 <= rate <= 0.5:
            raise tc.Failure(f"infer: {layer} fires {rate}, outside 5-50 %")


def check_pipeline(args, case, flags, want, data, config, table):
    """2 stages on 2 ranks: infer -v's table as one process's; every stage's layers in each
    training step, the first step's rates equal PyTorch's on the same microbatches."""
    art = os.path.join(args.work, "art_pp2")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
            "--mode", "pp", "--topology", "pp=2", "--batch-size", B, "--pp-schedule", "1f1b",
            "--pp-microbatches", 2, "-o", art])
    check_pipeline_infer(os.path.join(args.bin, "snn-run"), case, art, args.work, table)
    log = os.path.join(args.work, "pp2.jsonl")
    tc.run([os.path.join(args.bin, "snn-run"), "--nproc", 2, "train", art, *flags,
            "--log", log, "--threads", 1])
    steps, epochs = tc.read_log(log)
    for i, ev in enumerate(steps):
        if list(ev.get("firing_rates", {})) != list(want):
            raise tc.Failure(f"pp=2: step {i} firing_rates {ev.get('firing_rates')}, want "
                             f"layers {list(want)}")
    check_epoch(epochs, steps, "pp=2")
    first = microbatch_rates(case, data, config, 2)
    for layer, rate in first.items():
        diff = abs(steps[0]["firing_rates"][layer] - rate)
        print(f"pp=2 step 0 {layer:>12}: snn-run {steps[0]['firing_rates'][layer]:.6f} "
              f"PyTorch {rate:.6f}")
        if diff > EXACT:
            raise tc.Failure(f"pp=2: step 0: {layer} fires {steps[0]['firing_rates'][layer]}, "
                             f"PyTorch on the microbatches {rate}")
    return log


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--pp", action="store_true", help="also a 2-stage pipeline on 2 ranks")
    args = p.parse_args()
    torch.set_num_threads(2)
    kw, sample_shape, static = MODELS[args.model]
    work = tc.fresh_dir(args.work)
    case, art = tc.make_artifact(args.bin, work, args.model, T=T, N=B, **kw)
    snn_run = os.path.join(args.bin, "snn-run")
    table = check_infer(snn_run, case, art, work)
    kernels = {layer: kernel for layer, (_, kernel) in table.items()}
    if not any(k.startswith("fused block") for k in kernels.values()):
        raise tc.Failure(f"no layer ran on a fused spiking block: {kernels}")

    x, y = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    S = STEPS * B
    data_arg = (tc.static_images(x, y, S, sample_shape, seed=S) if static
                else tc.event_sequences(x, y, S, T, sample_shape, seed=S))
    config = tr.TrainConfig(batch_size=B, epochs=1, repeat_time=T if static else None,
                            optimizer="adam", lr=1e-3, loss="ce", seed=5)
    data = tr.load_npy(x, y, static=static)
    want = reference_rates(case, data, config)
    flags = ["--data-npy", data_arg, "--epochs", 1, "--batch-size", B, "--lr", "1e-3",
             "--optimizer", "adam", "--loss", "ce", "--seed", 5, "--progress", "none"]
    if static:
        flags += ["--repeat-time", T]
    one = os.path.join(work, "one.jsonl")
    tc.run([snn_run, "train", art, *flags, "--log", one, "--threads", 2])
    steps, epochs = tc.read_log(one)
    worst = compare_steps(steps, want, "one process", first_exact=True)
    check_epoch(epochs, steps, "one process")

    dp_art = os.path.join(work, "art_dp2")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
            "--mode", "dp", "--topology", "dp=2", "--batch-size", B, "-o", dp_art])
    two = os.path.join(work, "dp2.jsonl")
    tc.run([snn_run, "--nproc", 2, "train", dp_art, *flags, "--log", two, "--threads", 1])
    dp_steps, dp_epochs = tc.read_log(two)
    one_rates = {layer: [s["firing_rates"][layer] for s in steps] for layer in want}
    worst_dp = compare_steps(dp_steps, one_rates, "dp=2", first_exact=True)
    check_epoch(dp_epochs, dp_steps, "dp=2")
    logs = [one, two]
    if args.pp:
        logs.append(check_pipeline(args, case, flags, want, data, config, table))
    tc.check_fires_and_moves(case, logs)
    print(f"PASS: {args.model}: infer rates equal PyTorch's; training rates within "
          f"{worst:.2g} of the reference trainer's, dp=2 within {worst_dp:.2g} of one process")


if __name__ == "__main__":
    tc.main_wrapper(main)
