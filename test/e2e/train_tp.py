"""Tensor-parallel runs (tp and fsdp_tp, partitioned by the compiler) equal one process.

For one model and each rank count W: the artifact compiled with `snn-compile --mode tp
--topology tp=W` (or `--mode fsdp_tp --topology dp=2,tp=W/2`) holds one program per tp
coordinate with explicit collectives. Required, against PyTorch in one process:
  - `snn-run --nproc W infer` on the case input: rank 0's output equal to the reference's.
    The sharded sums reorder float additions (error ~ K * eps * sum|terms| for a reduction of
    length K, below 1e-5 here), and make_case picks inputs whose membrane potentials stay at
    least 1e-4 from the threshold, so no spike can flip: the rates must be bit-equal;
  - 5 training steps (`snn-run --nproc W train`, SGD with momentum) against the reference
    trainer on the same global batches from the same weights: losses within 1e-4 relative,
    the loss moving, every parameter and buffer within 1e-4 relative, and every rank's saved
    parameters bit-identical to rank 0's;
  - each rank log's communication per step (calls and bytes per collective kind and mesh axis)
    equal to what the compiler predicted in the manifest (`plan.communication`);
  - every neuron layer of the reference fires at 5-50 % on the case input and on the first
    training batch;
  - the whole weights the run saved, evaluated on the partitioned artifact (each rank cuts its
    part out of them) and on the one-process one: the same loss and accuracy.

Usage: train_tp.py --bin BUILD/bin --work DIR --model deep_mlp|csnn|vgg_dvs|sew_resnet|spikformer
                   [--layers L] [--neuron lif|if|plif] [--width W] [--ranks 2,4]
                   [--mode tp|fsdp_tp] [--conv-tp]
"""
import argparse
import json
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads before torch loads
import numpy as np  # noqa: I100
import torch
import train_trajectory as tt
from snnexport import reference
from snnexport import train as tr

T, B, STEPS = 4, 8, 5
SGD = dict(optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=5e-4, schedule="constant",
           loss="mse", seed=7)
RATE_RANGE = (0.05, 0.5)


def sgd(what):
    """SGD with the learning rate of `what` (a model name, or a label starting with one)."""
    model = what.split("/")[0].split(" ")[0]
    return dict(SGD, lr=SGD["lr"] * tc.LR_SCALE.get(model, 1.0))

# model -> (make_case options, per-sample shape of the training data, static images?)
MODELS = {
    "deep_mlp": ({}, [64], False),
    "csnn": ({"width": 8, "classes": 8}, [1, 28, 28], True),
    "vgg_dvs": ({"width": 8, "image": 16, "blocks": 2, "classes": 8}, [2, 16, 16], False),
    "sew_resnet": ({"width": 8, "blocks": 1, "classes": 8}, [1, 28, 28], True),
    "spikformer": ({"blocks": 2, "image": 32, "classes": 8}, [3, 32, 32], True),
}


def check_rates(stats, what):
    """Every neuron layer's firing rate within RATE_RANGE."""
    lo, hi = RATE_RANGE
    rates = {path: s["firing_rate"] for path, s in stats.items()}
    bad = {p: r for p, r in rates.items() if not lo <= r <= hi}
    if bad:
        raise tc.Failure(f"{what}: neuron layers fire outside {lo:.0%}-{hi:.0%}: {bad}")
    print(f"{what}: firing rates " + ", ".join(f"{p} {r:.1%}" for p, r in rates.items()))


def compile_tp(args, case, work, ranks):
    art = os.path.join(work, f"art_{args.mode}{ranks}")
    shutil.rmtree(art, ignore_errors=True)
    topology = f"tp={ranks}" if args.mode == "tp" else f"dp=2,tp={ranks // 2}"
    cmd = [os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
           "--mode", args.mode, "--topology", topology, "--batch-size", B, "-o", art]
    if args.conv_tp:
        cmd.append("--experimental-conv-tp")
    tc.run(cmd)
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    tp = manifest["mesh"]["shape"][manifest["mesh"]["axes"].index("tp")]
    split = [p["name"] for p in manifest["parameters"] if p["sharding"] == "split"]
    if not manifest["plan"]["partitioned"] or len(manifest["programs"]) != tp or not split:
        raise tc.Failure(f"{art}: expected a partitioned artifact with {tp} programs and split "
                         f"parameters, got {len(manifest['programs'])} programs, split {split}")
    print(f"{art}: {tp} programs, {len(split)} split parameters")
    return art, manifest


def check_infer(args, case, art, ranks, what):
    out = os.path.join(os.path.dirname(art), f"out_{os.path.basename(art)}.npy")
    cmd = [os.path.join(args.bin, "snn-run"), "--nproc", ranks, "infer", art,
           "--input", os.path.join(case, "input.npy"), "--output", out, "--dist-timeout", 120]
    tc.run(cmd)
    got, want = np.load(out), np.load(os.path.join(case, "expected.npy"))
    if got.shape != want.shape or not np.array_equal(got, want):
        diff = np.abs(got - want).max() if got.shape == want.shape else "shape"
        raise tc.Failure(f"{what}: infer output differs from PyTorch (max |diff| {diff})")
    print(f"{what}: infer output on rank 0 equals PyTorch's {list(want.shape)}")


def training_data(d, shape, static, S):
    """Uniform [0, 1) samples: images [S, *shape] (static) or sequences [S, T, *shape]."""
    x, y = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    g = np.random.default_rng(S)
    np.save(x, g.random((S, *shape) if static else (S, T, *shape), dtype=np.float32))
    np.save(y, g.integers(0, 8, S).astype(np.int64))
    return x, y


def check_comm(log, ranks, manifest, what):
    """Each rank's per-step communication equals the manifest's prediction."""
    want = sorted((c["kind"], c["mesh_axis"], c["calls"], c["bytes"])
                  for c in manifest["plan"]["communication"])
    if not want:
        raise tc.Failure(f"{what}: the manifest predicts no communication")
    stem, ext = os.path.splitext(log)
    for r in range(ranks):
        steps, _ = tc.read_log(f"{stem}.rank{r}{ext}")
        for ev in steps:
            got = sorted((c["kind"], c["mesh_axis"], c["calls"], c["bytes"])
                         for c in ev.get("comm", []))
            if got != want:
                raise tc.Failure(f"{what}: rank {r} step {ev.get('step')} communicated {got}, "
                                 f"the compiler predicted {want}")
    print(f"{what}: communication per step as predicted on every rank: {want}")


def reference_training(case, x, y, static, what, microbatches=1):
    """The reference trainer in one process on the global batches (accumulating over
    `microbatches`), from the case's weights; checks that every neuron layer fires at 5-50 % on
    the first batch and that the loss and the weights move. Returns (result, config, trained
    state, samples, model)."""
    model, _ = tr.model_from_case(case)
    initial = tr.state_arrays(model)
    data = tr.load_npy(x, y, static=static)
    first, _ = data.batch(range(B), T)
    check_rates(reference.run_reference(model, first)[1], f"{what}: first training batch")
    c = tr.TrainConfig(batch_size=B, steps=STEPS, repeat_time=T if static else None,
                       microbatches=microbatches, **sgd(what))
    res = tr.train(model, data, c)
    if max(res.losses) - min(res.losses) <= 1e-6 * max(abs(v) for v in res.losses):
        raise tc.Failure(f"{what}: the reference loss does not move over {STEPS} steps: "
                         f"{res.losses}")
    trained = tr.state_arrays(model)
    moved = max(tc.rel_err(trained[k], initial[k]) for k in trained)
    if not moved > 1e-3:
        raise tc.Failure(f"{what}: the reference's weights moved by {moved:.3g} only")
    return res, c, trained, len(data), model


def check_training(args, case, art, manifest, ranks, what):
    _, shape, static = MODELS[args.model]
    d = tc.fresh_dir(os.path.join(args.work, f"train_{args.mode}{ranks}"))
    x, y = training_data(d, shape, static, S=B * STEPS)
    c = tr.TrainConfig(batch_size=B, steps=STEPS, repeat_time=T if static else None,
                       **sgd(args.model))
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    cmd = [os.path.join(args.bin, "snn-run"), "--nproc", ranks, "train", art,
           "--data-npy", f"{x},{y}", *tt.cli_flags(c), "--log", log, "--save-params", params,
           "--threads", 1, "--progress", "none", "--dist-timeout", 120,
           *tc.kernel_flags(args.model)]
    if static:
        cmd += ["--repeat-time", T]
    tc.run(cmd)
    res, c, trained, count, _ = reference_training(case, x, y, static, what)
    steps, _ = tc.read_log(log)
    tt.check_steps(what, steps, res, c, count)
    first_rank = tc.load_params(os.path.join(params, "rank0"))
    for r in range(1, ranks):
        other = tc.load_params(os.path.join(params, f"rank{r}"))
        tc.compare_params(other, first_rank, f"{what}: rank {r} vs rank 0", exact=True)
    worst = tc.compare_params(first_rank, trained, f"{what} final weights")
    print(f"{what}: ranks identical; worst rel err vs reference {worst:.3g}")
    check_comm(log, ranks, manifest, what)
    check_params_load(args, art, ranks, os.path.join(params, "rank0"), f"{x},{y}", static, what)
    return worst


def check_params_load(args, art, ranks, params, data, static, what):
    """The whole weights the run saved, evaluated on the partitioned artifact (every rank cuts
    its own part out of them, a fused qkv projection's block by block) and on the one-process
    artifact: the same loss and accuracy."""
    results = []
    for nproc, artifact in ((ranks, art), (1, os.path.join(args.work, f"art_{args.model}"))):
        cmd = [os.path.join(args.bin, "snn-run"), "--nproc", nproc, "eval", artifact,
               "--params", params, "--data-npy", data, "--batch-size", B, "--threads", 1,
               "--dist-timeout", 120] + (["--repeat-time", T] if static else [])
        out = tc.run(cmd).stdout.strip().splitlines()
        results.append(json.loads(out[-1]))
    split, whole = results
    if abs(split["loss"] - whole["loss"]) > tc.TOL * max(abs(whole["loss"]), 1e-6) or \
            split["accuracy"] != whole["accuracy"]:
        raise tc.Failure(f"{what}: eval with the saved weights: {split} partitioned vs "
                         f"{whole} in one process")
    print(f"{what}: the saved weights evaluate alike partitioned and whole "
          f"(loss {split['loss']:.6g})")


def add_model_args(p):
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--layers", type=int)
    p.add_argument("--neuron", choices=["lif", "if", "plif"])
    p.add_argument("--width", type=int)


def make_case(args, work):
    """The model's reference case in WORK (make_case with MODELS' options and the command
    line's); its neuron layers must fire at 5-50 % on the case input. Returns (case, kwargs)."""
    kw = dict(MODELS[args.model][0])
    for k in ("layers", "neuron", "width"):
        if getattr(args, k) is not None:
            kw[k] = getattr(args, k)
    case, _ = tc.make_artifact(args.bin, work, args.model, T=T, N=B, **kw)
    with open(os.path.join(case, "meta.json")) as f:
        check_rates(json.load(f)["neurons"], f"{args.model}: case input")
    return case, kw


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    add_model_args(p)
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--mode", default="tp", choices=["tp", "fsdp_tp"])
    p.add_argument("--conv-tp", action="store_true", help="compile with --experimental-conv-tp")
    args = p.parse_args()
    torch.set_num_threads(2)
    work = tc.fresh_dir(args.work)
    case, kw = make_case(args, work)
    summary = []
    for ranks in [int(r) for r in args.ranks.split(",")]:
        what = f"{args.model}/{args.mode}{ranks}"
        art, manifest = compile_tp(args, case, work, ranks)
        check_infer(args, case, art, ranks, what)
        worst = check_training(args, case, art, manifest, ranks, what)
        summary.append(f"{args.mode}{ranks} ({worst:.2g})")
    print(f"PASS: {args.model} {kw} {args.mode} = one process: " + ", ".join(summary))


if __name__ == "__main__":
    tc.main_wrapper(main)
