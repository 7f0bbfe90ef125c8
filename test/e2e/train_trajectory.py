"""Same-trajectory test: `snn-run train` against the PyTorch reference trainer
(snnexport.train), from the same exported weights on the same batches.

For one model (csnn: static images with direct encoding; vgg_dvs: [S, T, ...] event sequences,
BatchNorm, Dropout) it runs three 5-step trainings with both trainers:
  sgd   momentum 0.9, weight decay, step schedule, MSE, shuffled (seed 7), drop-last, 2 epochs
  adam  cosine schedule, cross-entropy, file order, --keep-last (a short last batch)
  adamw default decoupled decay, constant LR, MSE, shuffled (seed 3), one epoch
and requires, per docs/training.md: per-step losses within 1e-4 relative, the same accuracies,
the same learning rates, and every parameter and BatchNorm buffer (--save-params) within 1e-4
relative (max|a - b| / max(max|b|, 1e-6) per tensor), and the same per-epoch log events.

For csnn and vgg_dvs the log's end event must also show that the spiking blocks ran fused and
that conv2d inputs were kept as bits (so the trajectory checks those paths).

With `--spike-linear-density D` snn-run trains with the event-driven Linear kernels (spike
inputs with at most D of them ones); the same tolerances hold, and the log's end event must show
that they ran (`spike_linear.calls` > 0), or with --expect-dense-fallback that the Linears fell
back to the dense GEMM (the VGG's classifier reads Dropout's scaled spikes, which are not 0/1).

With `--spike-conv-density D` snn-run trains its conv2d layers on the event-driven kernels
(forward over the active inputs' weight taps, the weight gradient over the active inputs); the
same tolerances hold, and the end event must show calls on them (`spike_conv.calls` > 0).

Usage: train_trajectory.py --bin BUILD/bin --work DIR --model csnn|vgg_dvs [--threads N]
                           [--only sgd|adam|adamw] [--spike-linear-density D]
                           [--expect-dense-fallback] [--spike-conv-density D]
"""
import argparse
import os

import train_common as tc  # first: it sets the BLAS threads before torch loads
import torch  # noqa: I100
from snnexport import train as tr

T, B, STEPS = 4, 8, 5

MODELS = {
    # model kwargs for make_case, per-sample shape, static (direct encoding) or sequences
    "csnn": ({"width": 16}, [1, 28, 28], True),
    "vgg_dvs": ({"width": 16, "image": 32, "blocks": 2}, [2, 32, 32], False),
    # 2 blocks of 64 channels, 4 heads, over 4 tokens of a 32 x 32 image
    "spikformer": ({"blocks": 2, "image": 32}, [3, 32, 32], True),
}

RUNS = [
    ("sgd", 3 * B + 3, dict(optimizer="sgd", lr=0.01, momentum=0.9, weight_decay=5e-4,
                            schedule="step", step_size=2, gamma=0.5, loss="mse", seed=7)),
    ("adam", 4 * B + 3, dict(optimizer="adam", lr=3e-4, schedule="cosine", eta_min=1e-5,
                             loss="ce", seed=11, shuffle=False, drop_last=False)),
    ("adamw", 5 * B, dict(optimizer="adamw", lr=2e-4, loss="mse", seed=3)),
]


def cli_flags(c):
    steps = c.steps if c.steps is not None else STEPS
    f = ["--steps", steps, "--batch-size", c.batch_size, "--lr", repr(c.lr),
         "--optimizer", c.optimizer, "--schedule", c.schedule, "--loss", c.loss,
         "--seed", c.seed, "--drop-last" if c.drop_last else "--keep-last"]
    if c.optimizer == "sgd":
        f += ["--momentum", repr(c.momentum)]
    if c.weight_decay is not None:
        f += ["--weight-decay", repr(c.weight_decay)]
    if c.schedule == "step":
        f += ["--step-size", c.step_size, "--gamma", repr(c.gamma)]
    if c.schedule == "cosine":
        f += ["--eta-min", repr(c.eta_min)]
    if not c.shuffle:
        f.append("--no-shuffle")
    return f


def check_steps(name, steps, res, c, count):
    if len(steps) != STEPS:
        raise tc.Failure(f"{name}: snn-run logged {len(steps)} step events, expected {STEPS}")
    first = steps[0].get("step")
    if first not in (0, 1):
        raise tc.Failure(f"{name}: first step is numbered {first!r}")
    per_epoch = tr.steps_per_epoch(count, c.batch_size, c.drop_last)
    print(f"{'step':>4} {'snn-run loss':>14} {'reference':>14} {'rel err':>9} "
          f"{'acc':>6} {'ref acc':>7} {'lr':>12}")
    for i, ev in enumerate(steps):
        missing = {"epoch", "step", "loss", "accuracy", "lr", "samples_per_s"} - set(ev)
        if missing:
            raise tc.Failure(f"{name}: step event {i} lacks {sorted(missing)}: {ev}")
        want_loss, want_acc, want_lr = res.losses[i], res.accuracies[i], res.lrs[i]
        e = abs(ev["loss"] - want_loss) / max(abs(want_loss), 1e-6)
        print(f"{i:>4} {ev['loss']:>14.8f} {want_loss:>14.8f} {e:>9.2e} {ev['accuracy']:>6.3f} "
              f"{want_acc:>7.3f} {ev['lr']:>12.6g}")
        if ev["step"] != first + i:
            raise tc.Failure(f"{name}: step event {i} is numbered {ev['step']}, "
                             f"expected {first + i}")
        if ev["epoch"] != i // per_epoch:
            raise tc.Failure(f"{name}: step {i} is in epoch {ev['epoch']}, expected "
                             f"{i // per_epoch}")
        if not e <= tc.TOL:
            raise tc.Failure(f"{name}: loss of step {i}: {ev['loss']!r} vs reference "
                             f"{want_loss!r} (rel err {e:.3g} > {tc.TOL})")
        if abs(ev["accuracy"] - want_acc) > 1e-9:
            raise tc.Failure(f"{name}: accuracy of step {i}: {ev['accuracy']} vs "
                             f"reference {want_acc}")
        if abs(ev["lr"] - want_lr) > 1e-12 * abs(want_lr):
            raise tc.Failure(f"{name}: lr of step {i}: {ev['lr']!r} vs {want_lr!r}")


def check_epochs(name, epochs, res):
    """The per-epoch events: the same epochs, step counts and averages as the reference."""
    epochs = [e for e in epochs if e.get("event") == "epoch"]
    if len(epochs) != len(res.epochs):
        raise tc.Failure(f"{name}: snn-run logged {len(epochs)} epoch events, the reference "
                         f"{len(res.epochs)}")
    for got, want in zip(epochs, res.epochs):
        e = abs(got["loss"] - want["loss"]) / max(abs(want["loss"]), 1e-6)
        if got["epoch"] != want["epoch"] or got.get("steps", want["steps"]) != want["steps"] \
                or not e <= tc.TOL or abs(got["accuracy"] - want["accuracy"]) > 1e-9:
            raise tc.Failure(f"{name}: epoch event {got} vs reference {want}")


def check_spike_kernels_ran(log, expect_fallback):
    ends = [e for e in tc.read_jsonl(log) if e.get("event") == "end"]
    spikes = ends[-1].get("spike_linear") if ends else None
    if not spikes:
        raise tc.Failure(f"--spike-linear-density: the end event has no spike_linear counts")
    fallback = spikes["dense_above_density"] + spikes["dense_not_spikes"]
    if expect_fallback and fallback <= 0:
        raise tc.Failure(f"expected Linear calls that fell back to the dense GEMM: {spikes}")
    if not expect_fallback and spikes["calls"] <= 0:
        raise tc.Failure(f"--spike-linear-density: the end event shows no Linear call on the "
                         f"spike kernels ({spikes})")
    print(f"spike kernels: {spikes['calls']} Linear calls at mean density "
          f"{spikes['mean_density']:.3f}, {fallback} dense")


def check_event_convolutions_ran(log):
    ends = [e for e in tc.read_jsonl(log) if e.get("event") == "end"]
    conv = ends[-1].get("spike_conv") if ends else None
    if not conv or conv["calls"] <= 0:
        raise tc.Failure(f"--spike-conv-density: the end event shows no conv2d call on the "
                         f"event-driven kernels ({conv})")
    print(f"event-driven conv2d: {conv['calls']} calls, {conv['dense']} dense")


def check_fast_paths_ran(log):
    """The end event shows spiking blocks run fused and conv2d spike inputs kept as bits: the
    trajectory above then checks them against PyTorch."""
    ends = [e for e in tc.read_jsonl(log) if e.get("event") == "end"]
    end = ends[-1] if ends else {}
    blocks, bits = end.get("spiking_blocks", {}), end.get("spike_bits", {})
    if blocks.get("fused", 0) <= 0 or bits.get("tensors", 0) <= 0:
        raise tc.Failure(f"the end event shows no fused spiking block or no spike input kept "
                         f"as bits: spiking_blocks {blocks}, spike_bits {bits}")
    if bits["bit_bytes"] * 32 > bits["float_bytes"] + 32 * bits["tensors"]:
        raise tc.Failure(f"spike_bits: {bits['bit_bytes']} bytes of bits for "
                         f"{bits['float_bytes']} bytes of float32")
    print(f"spiking blocks: {blocks['fused']} fused runs, {blocks['one_step_layers']} "
          f"one-step layers, {blocks['fused_norm_backward']} BatchNorm backwards in the BPTT "
          f"pass; spike inputs as bits: {bits['float_bytes']} -> "
          f"{bits['bit_bytes']} bytes")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", help="run only this optimizer case (sgd, adam, adamw)")
    p.add_argument("--spike-linear-density", type=float, default=0.0)
    p.add_argument("--expect-dense-fallback", action="store_true")
    p.add_argument("--spike-conv-density", type=float, default=0.0)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    kw, sample_shape, static = MODELS[args.model]
    work = tc.fresh_dir(args.work)
    case, art = tc.make_artifact(args.bin, work, args.model, T=T, N=B, **kw)
    snn_run = os.path.join(args.bin, "snn-run")
    summary = []
    for name, S, opts in RUNS:
        if args.only and name != args.only:
            continue
        print(f"== {args.model} / {name}: {S} samples, {STEPS} steps of {B}", flush=True)
        d = tc.fresh_dir(os.path.join(work, name))
        x, y = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
        if static:
            data_arg = tc.static_images(x, y, S, sample_shape, seed=S)
        else:
            data_arg = tc.event_sequences(x, y, S, T, sample_shape, seed=S)
        if opts["optimizer"] == "sgd":  # SGD steps that are a fraction of the weights
            opts = dict(opts, lr=opts["lr"] * tc.LR_SCALE.get(args.model, 1.0))
        c = tr.TrainConfig(batch_size=B, steps=STEPS, repeat_time=T if static else None,
                           **opts)
        cmd = [snn_run, "train", art, "--data-npy", data_arg, *cli_flags(c),
               "--log", os.path.join(d, "log.jsonl"), "--save-params",
               os.path.join(d, "params"), "--threads", args.threads]
        if static:
            cmd += ["--repeat-time", T]
        cmd += tc.kernel_flags(args.model)
        if args.spike_linear_density:
            cmd += ["--spike-linear-density", args.spike_linear_density]
        if args.spike_conv_density:
            cmd += ["--spike-conv-density", args.spike_conv_density]
        tc.run(cmd)
        if args.spike_conv_density:
            check_event_convolutions_ran(os.path.join(d, "log.jsonl"))
        if args.spike_linear_density:
            check_spike_kernels_ran(os.path.join(d, "log.jsonl"), args.expect_dense_fallback)
        if args.model in ("csnn", "vgg_dvs"):
            check_fast_paths_ran(os.path.join(d, "log.jsonl"))
        model, _ = tr.model_from_case(case)
        data = tr.load_npy(x, y, static=static)
        res = tr.train(model, data, c)
        steps, epochs = tc.read_log(os.path.join(d, "log.jsonl"))
        check_steps(f"{args.model}/{name}", steps, res, c, len(data))
        check_epochs(f"{args.model}/{name}", epochs, res)
        worst = tc.compare_params(tc.load_params(os.path.join(d, "params")),
                                  tr.state_arrays(model), f"{args.model}/{name} final weights")
        moved = max(tc.rel_err(v, w) for (k, v), w in
                    zip(tr.state_arrays(model).items(), tr.state_arrays(
                        tr.model_from_case(case)[0]).values()))
        if moved < 1e-3:
            raise tc.Failure(f"{args.model}/{name}: the weights hardly moved ({moved:.2g}); "
                             "the case does not test training")
        print(f"{name}: final weights: worst rel err {worst:.3g} "
              f"(largest relative change by training {moved:.3g})")
        summary.append(f"{name} (max param rel err {worst:.2g})")
    print(f"PASS: {args.model} same trajectory as the PyTorch reference: " + ", ".join(summary))


if __name__ == "__main__":
    tc.main_wrapper(main)
