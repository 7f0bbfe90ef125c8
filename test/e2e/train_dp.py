"""Data-parallel training (dp, zero, fsdp) equals one process on the global batch.

For one model (csnn: static images, direct encoding; vgg_dvs: event sequences, BatchNorm,
Dropout) and each rank count W (2 and 4): the artifact compiled with
`snn-compile --mode dp --topology dp=W`, trained with `snn-run --nproc W train` for 5 steps of a
global batch B=8 (each rank trains B/W samples; SyncBatchNorm; Dropout masks of the global
batch), against the PyTorch reference trainer (snnexport.train) in one process on the same global
batches from the same weights. Required, per docs/semantics.md and docs/training.md:
  - per-step global losses within 1e-4 relative, the same global accuracies and learning rates,
    the same per-epoch events (rank 0's --log);
  - every parameter and BatchNorm buffer of every rank within 1e-4 relative of the reference;
  - every rank's parameters bit-identical to rank 0's (the replicas never diverge).
--mode zero (dp + ZeRO-1) and --mode fsdp run the same checks on artifacts compiled with that
mode (the gathered fsdp parameters are what --save-params writes); every rank's log must name
the mode, and under fsdp each rank must hold about 1/W of the parameters between steps.
Two runs per W: sgd (momentum, weight decay, step schedule, MSE, shuffled, drop-last, 2 epochs)
and adam (cosine, cross-entropy, file order, --keep-last with a short last batch of 4).

Usage: train_dp.py --bin BUILD/bin --work DIR --model csnn|vgg_dvs [--ranks 2,4]
                   [--mode dp|zero|fsdp]
"""
import argparse
import json
import os
import shutil

import torch

import train_common as tc
import train_trajectory as tt
from snnexport import train as tr

T, B, STEPS = 4, 8, 5

RUNS = [
    ("sgd", 3 * B + 3, dict(optimizer="sgd", lr=0.01, momentum=0.9, weight_decay=5e-4,
                            schedule="step", step_size=2, gamma=0.5, loss="mse", seed=7)),
    ("adam", 4 * B + 4, dict(optimizer="adam", lr=3e-4, schedule="cosine", eta_min=1e-5,
                             loss="ce", seed=11, shuffle=False, drop_last=False)),
]


def compile_dp(bin_dir, case, work, ranks, mode="dp"):
    art = os.path.join(work, f"art_{mode}{ranks}")
    shutil.rmtree(art, ignore_errors=True)
    tc.run([os.path.join(bin_dir, "snn-compile"), os.path.join(case, "model.onnx"),
            "--mode", mode, "--topology", f"dp={ranks}", "--batch-size", B, "-o", art])
    return art


RANK_LOG_MODE = {"dp": "replicated", "zero": "zero", "fsdp": "fsdp"}


def check_plan_check(end, prediction, r, what):
    """The end event's plan_check: the manifest's prediction next to positive measurements
    (mean step time above the communication wait, memory above the parameters)."""
    check = end.get("plan_check")
    if not check or check["predicted"]["step_seconds"] != prediction["step_seconds"] or \
            check["predicted"]["times"] != prediction["times"]:
        raise tc.Failure(f"{what}: rank {r}'s plan_check {check} does not carry the manifest's "
                         f"prediction {prediction}")
    m = check["measured"]
    if not 0 <= m["comm_seconds"] < m["step_seconds"] or m["memory_bytes"] <= end["param_bytes"]:
        raise tc.Failure(f"{what}: rank {r}'s measurements are not plausible: {m}")
    if abs(check["ratio"]["step"] - m["step_seconds"] / prediction["step_seconds"]) > 1e-9 * \
            check["ratio"]["step"]:
        raise tc.Failure(f"{what}: rank {r}'s step ratio {check['ratio']['step']} is not "
                         "measured / predicted")


def check_rank_logs(log, ranks, mode, what, prediction):
    """Every rank writes LOG.rankR.jsonl: a 'rank' event naming the sharding and an 'end' event
    with what it holds and the plan's prediction next to what it measured. fsdp keeps ~1/W of
    the parameters; zero ~1/W of the optimizer state."""
    stem, ext = os.path.splitext(log)
    ends = []
    for r in range(ranks):
        events = tc.read_jsonl(f"{stem}.rank{r}{ext}")
        first, last = events[0], events[-1]
        if first.get("event") != "rank" or first.get("rank") != r or \
                first.get("mode") != RANK_LOG_MODE[mode]:
            raise tc.Failure(f"{what}: rank {r}'s log starts with {first}")
        if last.get("event") != "end" or last.get("steps") != STEPS:
            raise tc.Failure(f"{what}: rank {r}'s log ends with {last}")
        check_plan_check(last, prediction, r, what)
        ends.append(last)
    total = sum(e["param_bytes"] for e in ends)
    states = [e["optimizer_state_bytes"] for e in ends]
    if mode == "fsdp":
        for r, e in enumerate(ends):
            share = e["param_bytes"] * ranks / total
            if not 0.9 <= share <= 1.1:
                raise tc.Failure(f"{what}: rank {r} holds {e['param_bytes']} parameter bytes, "
                                 f"{share:.2f}x of 1/{ranks} of all ranks' {total}")
    if mode in ("zero", "fsdp") and max(states) > 1.1 * sum(states) / ranks:
        raise tc.Failure(f"{what}: optimizer state not sharded evenly: {states}")
    print(f"{what}: rank logs name '{RANK_LOG_MODE[mode]}'; parameter bytes per rank "
          f"{[e['param_bytes'] for e in ends]}, optimizer state {states}")


def check_replicas(params_dir, ranks, what):
    """Every rank wrote DIR/rankR; all must be bit-identical to rank 0's."""
    first = tc.load_params(os.path.join(params_dir, "rank0"))
    for r in range(1, ranks):
        other = tc.load_params(os.path.join(params_dir, f"rank{r}"))
        tc.compare_params(other, first, f"{what}: rank {r} vs rank 0", exact=True)
    extra = sorted(set(os.listdir(params_dir)) - {f"rank{r}" for r in range(ranks)})
    if extra:
        raise tc.Failure(f"{what}: unexpected entries in {params_dir}: {extra}")
    return first


def check_no_sync_bn(cmd, d, res, what):
    """--no-sync-bn (per-rank BatchNorm statistics) must leave the reference's trajectory: the
    models have BatchNorm, so this shows the comparison above can fail."""
    log = os.path.join(d, "log_no_sync_bn.jsonl")
    cmd = [a for a in cmd] + ["--no-sync-bn"]
    cmd[cmd.index("--log") + 1] = log
    params = os.path.join(d, "params_no_sync_bn")
    cmd[cmd.index("--save-params") + 1] = params
    tc.run(cmd)
    steps, _ = tc.read_log(log)
    worst = max(abs(ev["loss"] - want) / max(abs(want), 1e-6)
                for ev, want in zip(steps, res.losses))
    if not worst > tc.TOL:
        raise tc.Failure(f"{what}: --no-sync-bn gave the same losses as SyncBatchNorm "
                         f"(rel err {worst:.3g}): the flag or the comparison does nothing")
    print(f"{what}: --no-sync-bn departs from one process as it should (loss rel err "
          f"{worst:.3g})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True, choices=sorted(tt.MODELS))
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--threads", type=int, default=1, help="threads per rank")
    p.add_argument("--mode", default="dp", choices=sorted(RANK_LOG_MODE))
    args = p.parse_args()
    torch.set_num_threads(2)
    kw, sample_shape, static = tt.MODELS[args.model]
    work = tc.fresh_dir(args.work)
    case, _ = tc.make_artifact(args.bin, work, args.model, T=T, N=B, **kw)
    snn_run = os.path.join(args.bin, "snn-run")
    summary = []
    for ranks in [int(r) for r in args.ranks.split(",")]:
        art = compile_dp(args.bin, case, work, ranks, args.mode)
        for name, S, opts in RUNS:
            what = f"{args.model}/{args.mode}{ranks}/{name}"
            print(f"== {what}: {S} samples, {STEPS} steps of {B} on {ranks} ranks", flush=True)
            d = tc.fresh_dir(os.path.join(work, f"{args.mode}{ranks}_{name}"))
            x, y = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
            if static:
                data_arg = tc.static_images(x, y, S, sample_shape, seed=S)
            else:
                data_arg = tc.event_sequences(x, y, S, T, sample_shape, seed=S)
            opts = dict(opts, lr=opts["lr"] * tc.LR_SCALE.get(args.model, 1.0))
            c = tr.TrainConfig(batch_size=B, steps=STEPS, repeat_time=T if static else None,
                               **opts)
            cmd = [snn_run, "--nproc", ranks, "train", art, "--data-npy", data_arg,
                   *tt.cli_flags(c), "--log", os.path.join(d, "log.jsonl"), "--save-params",
                   os.path.join(d, "params"), "--threads", args.threads, "--progress", "none",
                   "--dist-timeout", 120, *tc.kernel_flags(args.model)]
            if static:
                cmd += ["--repeat-time", T]
            tc.run(cmd)
            model, _ = tr.model_from_case(case)
            data = tr.load_npy(x, y, static=static)
            res = tr.train(model, data, c)
            steps, epochs = tc.read_log(os.path.join(d, "log.jsonl"))
            tt.check_steps(what, steps, res, c, len(data))
            tt.check_epochs(what, epochs, res)
            got = check_replicas(os.path.join(d, "params"), ranks, what)
            worst = tc.compare_params(got, tr.state_arrays(model), f"{what} final weights")
            print(f"{what}: ranks identical; worst rel err vs reference {worst:.3g}")
            with open(os.path.join(art, "manifest.json")) as f:
                prediction = json.load(f)["plan"]["prediction"]
            check_rank_logs(os.path.join(d, "log.jsonl"), ranks, args.mode, what, prediction)
            if name == "sgd" and args.mode == "dp":
                check_no_sync_bn(cmd, d, res, what)
            summary.append(f"{args.mode}{ranks}/{name} ({worst:.2g})")
    print(f"PASS: {args.model} {args.mode} = one process on the global batch: "
          + ", ".join(summary))


if __name__ == "__main__":
    tc.main_wrapper(main)
