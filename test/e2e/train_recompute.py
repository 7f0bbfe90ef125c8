"""`snn-run train --recompute`: the same training as without it, bit for bit, on one process
and on two data-parallel ranks, while the forward keeps only each segment's input.

For each model (csnn: a time-invariant first convolution and fused BatchNorm blocks; vgg_dvs:
event sequences, BatchNorm, Dropout; sew_resnet: residual blocks; deep_mlp with PLIF neurons;
spikformer: attention) it trains 4 steps twice from the same weights on the same batches, once
with --recompute and once without, under SGD with momentum and under Adam, and requires:
  - every step's loss and accuracy identical, and every parameter and buffer (--save-params)
    bit-equal: the recomputed forward replays the same kernels, Dropout's draws and BatchNorm's
    statistics, and BatchNorm's running statistics are updated once per step;
  - the end event's `recomputation` counts: at least two segments per step, each replayed
    once, their inputs kept as bits (1/32 of float32 plus a byte per tensor) except the
    program's input;
  - every neuron layer firing at 5-50 % and the losses moving (train_common).
The first model also trains on 2 data-parallel ranks with and without --recompute (SyncBatchNorm
and the gradient all-reduce under recomputation), the PLIF MLP on 2 tensor-parallel ranks (the
segments' collectives replayed), and the flag's refusals are checked: an fsdp artifact and a
pipeline exit 1 with one line naming the plan's mode.

Usage: train_recompute.py --bin BUILD/bin --work DIR [--models csnn,vgg_dvs,...]
"""
import argparse
import os

import train_common as tc

T, B, STEPS = 4, 8, 4

MODELS = {
    # make_case keyword arguments, per-sample shape, static (direct encoding) or sequences,
    # and what the segments' inputs may be kept in against float32: chains of layers end
    # segments at spikes (bits: 1/32), SEW-ResNet at its residual sums (counts: bytes, 1/4),
    # Spikformer's at float residual sums.
    "csnn": ({"width": 16}, [1, 28, 28], True, 1 / 32),
    "vgg_dvs": ({"width": 16, "image": 32, "blocks": 2}, [2, 32, 32], False, 1 / 32),
    "sew_resnet": ({"width": 8, "blocks": 2}, [1, 28, 28], True, 1 / 4),
    "deep_mlp": ({"width": 32, "layers": 4, "neuron": "plif"}, [64], True, 1 / 32),
    "spikformer": ({"blocks": 1, "image": 32}, [3, 32, 32], True, 1.0),
}

OPTIMIZERS = {
    "sgd": ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--loss", "mse",
            "--seed", "7"],
    "adam": ["--optimizer", "adam", "--lr", "0.003", "--loss", "ce", "--seed", "3"],
}


def train(args, art, data, static, d, extra=(), nproc=1):
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    cmd = [os.path.join(args.bin, "snn-run"), "train", art, "--data-npy", data,
           "--steps", STEPS, "--batch-size", B, "--log", log, "--save-params", params,
           "--threads", 1 if nproc > 1 else 2, "--progress", "none", *extra]
    if static:
        cmd += ["--repeat-time", T]
    if nproc > 1:
        cmd = cmd[:2] + ["--nproc", nproc] + cmd[2:]
    tc.run(cmd)
    # Ranks save their parameters under rankR/; dp replicas hold the same ones.
    return log, params if nproc == 1 else os.path.join(params, "rank0")


def end_event(log):
    ends = [e for e in tc.read_jsonl(log) if e.get("event") == "end"]
    return ends[-1] if ends else {}


def check_recomputation_ran(log, name, share, ranks=1):
    # Ranks of a job write their end events to their own logs, one process to the run's.
    stem, ext = os.path.splitext(log)
    counts = end_event(log if ranks == 1 else f"{stem}.rank0{ext}").get("recomputation")
    if not counts:
        raise tc.Failure(f"{name}: the end event has no recomputation counts")
    if counts["segments"] < 2 * STEPS or counts["replays"] != counts["segments"]:
        raise tc.Failure(f"{name}: expected at least 2 segments per step, each replayed once: "
                         f"{counts}")
    # a partly filled last byte per packed tensor
    if counts["kept_bytes"] > share * counts["kept_float_bytes"] + counts["segments"]:
        raise tc.Failure(f"{name}: segment inputs kept in more than {share:.3g} of their "
                         f"float32 bytes: {counts}")
    print(f"{name}: {counts['segments'] // STEPS} segments per step, inputs kept in "
          f"{counts['kept_bytes']} bytes for {counts['kept_float_bytes']} of float32")


def check_same_run(name, plain, recomputed):
    steps_a = tc.check_same_steps(name, recomputed[0], plain[0], STEPS, "with --recompute")
    tc.compare_params(tc.load_params(recomputed[1]), tc.load_params(plain[1]),
                      f"{name}: weights with --recompute against without", exact=True)
    print(f"{name}: losses {[s['loss'] for s in steps_a]} and weights bit-equal")


def check_model(args, work, model):
    kw, shape, static, share = MODELS[model]
    d = tc.fresh_dir(os.path.join(work, model))
    case, art = tc.make_artifact(args.bin, d, model, T=T, N=B, **kw)
    x, y = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    S = B * STEPS
    classes = 8 if model == "deep_mlp" else 10  # make_case's deep_mlp has 8 outputs
    data = (tc.static_images(x, y, S, shape, classes=classes, seed=5) if static
            else tc.event_sequences(x, y, S, T, shape, seed=5))
    logs = []
    for opt, flags in OPTIMIZERS.items():
        name = f"{model}/{opt}"
        plain = train(args, art, data, static, tc.fresh_dir(os.path.join(d, opt)), flags)
        recomputed = train(args, art, data, static, tc.fresh_dir(os.path.join(d, opt + "-rc")),
                           [*flags, "--recompute"])
        check_same_run(name, plain, recomputed)
        check_recomputation_ran(recomputed[0], name, share)
        logs += [plain[0], recomputed[0]]
    tc.check_fires_and_moves(case, logs)
    return case, art, data, static


def check_data_parallel(args, work, model, case, data, static):
    d = os.path.join(work, model)
    art = os.path.join(d, "art_dp2")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art,
            "--mode", "dp", "--topology", "dp=2", "--batch-size", B])
    flags = OPTIMIZERS["sgd"]
    plain = train(args, art, data, static, tc.fresh_dir(os.path.join(d, "dp2")), flags, 2)
    recomputed = train(args, art, data, static, tc.fresh_dir(os.path.join(d, "dp2-rc")),
                       [*flags, "--recompute"], 2)
    check_same_run(f"{model}/dp=2", plain, recomputed)
    check_recomputation_ran(recomputed[0], f"{model}/dp=2", MODELS[model][3], ranks=2)


def check_tensor_parallel_and_refusals(args, work):
    """tp=2: bit-equal with and without --recompute; fsdp and a pipeline: one line naming the
    mode."""
    d = tc.fresh_dir(os.path.join(work, "tp_and_refusals"))
    kw, shape = MODELS["deep_mlp"][:2]
    case, _ = tc.make_artifact(args.bin, d, "deep_mlp", T=T, N=B, **kw)
    data = tc.static_images(os.path.join(d, "x.npy"), os.path.join(d, "y.npy"), B * STEPS,
                            shape, classes=8, seed=9)
    arts = {}
    for mode, topology in (("tp", "tp=2"), ("fsdp", "dp=2"), ("pp", "pp=2")):
        arts[mode] = os.path.join(d, f"art_{mode}")
        tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o",
                arts[mode], "--mode", mode, "--topology", topology, "--batch-size", B])
    flags = OPTIMIZERS["sgd"]
    plain = train(args, arts["tp"], data, True, tc.fresh_dir(os.path.join(d, "tp2")), flags, 2)
    recomputed = train(args, arts["tp"], data, True, tc.fresh_dir(os.path.join(d, "tp2-rc")),
                       [*flags, "--recompute"], 2)
    for rank in (0, 1):  # each rank's part of the split parameters
        tc.compare_params(tc.load_params(recomputed[1].replace("rank0", f"rank{rank}")),
                          tc.load_params(plain[1].replace("rank0", f"rank{rank}")),
                          f"deep_mlp/tp=2 rank {rank}: weights with --recompute", exact=True)
    check_same_run("deep_mlp/tp=2", plain, recomputed)
    check_recomputation_ran(recomputed[0], "deep_mlp/tp=2", MODELS["deep_mlp"][3], ranks=2)
    tc.check_fires_and_moves(case, [plain[0], recomputed[0]])
    for mode in ("fsdp", "pp"):
        proc = tc.run([os.path.join(args.bin, "snn-run"), "train", "--nproc", 2, arts[mode],
                       "--data-npy", data, "--repeat-time", T, "--steps", 1, "--batch-size", B,
                       "--lr", 0.01, "--threads", 1, "--recompute"], expect_ok=False)
        lines = [line for line in proc.stderr.splitlines() if "--recompute" in line]
        if proc.returncode != 1 or not lines or f"'{mode}'" not in lines[0] or \
                "signal" in proc.stderr.lower():
            raise tc.Failure(f"--recompute on a {mode} artifact: exit {proc.returncode}, "
                             f"stderr {proc.stderr.strip()[-400:]!r}")
        print(f"refused on {mode}: {lines[0].strip()}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", default=",".join(MODELS))
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    first = None
    for model in args.models.split(","):
        result = check_model(args, work, model)
        first = first or (model, result)
    model, (case, _, data, static) = first
    check_data_parallel(args, work, model, case, data, static)
    check_tensor_parallel_and_refusals(args, work)


if __name__ == "__main__":
    tc.main_wrapper(main)
