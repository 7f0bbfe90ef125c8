"""What train_surrogates.py and train_neurons.py share: deep_mlp variants (2 Linear layers of 32,
each followed by a neuron) trained 3 SGD steps by `snn-run train` and by the reference trainer
(snnexport.train) from the same weights on the same batches, on one rank and, for the variants
named by --tp / --pp, compiled for tp=2 / pp=2 on 2 ranks.

Required per variant: every neuron layer fires 5-50 % on the case's input, the loss moves, the
losses within 1e-4 relative, every final weight within 1e-4 relative (docs/training.md), the
weights moved, and every rank of a partitioned run ends with the one-rank reference's weights."""
import argparse
import os

import train_common as tc  # first: it sets the BLAS threads before torch loads
from snnexport import train as tr  # noqa: I100

T, B, STEPS = 4, 8, 3

PARTITIONED = {
    "tp": ["--mode", "tp", "--topology", "tp=2"],
    "pp": ["--mode", "pp", "--topology", "pp=2", "--pp-microbatches", 4],
}


def make_case(args, name, work, **model):
    """The variant's case and artifact in WORK/NAME; returns (dir, case, art)."""
    d = tc.fresh_dir(os.path.join(work, name))
    case, art = tc.make_artifact(args.bin, d, "deep_mlp", T=T, N=B, tag=name, layers=2,
                                 width=32, classes=10, **model)
    return d, case, art


def train_snn_run(args, art, data, d, ranks=1):
    """snn-run's log and final weights (rank 0's whole ones on several ranks, every other
    rank's equal to them)."""
    params, log = os.path.join(d, "params"), os.path.join(d, "log.jsonl")
    tc.run([os.path.join(args.bin, "snn-run"), "--nproc", ranks, "train", art,
            "--data-npy", data, "--steps", STEPS, "--batch-size", B, "--lr", "0.2",
            "--optimizer", "sgd", "--momentum", "0.9", "--loss", "mse", "--seed", 5,
            "--threads", 1, "--progress", "none", "--repeat-time", T, "--log", log,
            "--save-params", params, "--dist-timeout", 120])
    if ranks == 1:
        return log, tc.load_params(params)
    first = tc.load_params(os.path.join(params, "rank0"))
    for r in range(1, ranks):
        tc.compare_params(tc.load_params(os.path.join(params, f"rank{r}")), first,
                          f"rank {r} vs rank 0", exact=True)
    return log, first


def check_training(args, name, d, case, art, data):
    """Trains the variant both ways (and partitioned where asked); returns a summary line."""
    log, got = train_snn_run(args, art, data, d)
    tc.check_fires_and_moves(case, [log])
    model, _ = tr.model_from_case(case)
    start = tr.state_arrays(model)
    cfg = tr.TrainConfig(batch_size=B, steps=STEPS, lr=0.2, optimizer="sgd", momentum=0.9,
                         loss="mse", seed=5, repeat_time=T)
    res = tr.train(model, tr.load_npy(args.x_path, args.y_path, static=True), cfg)
    steps, _ = tc.read_log(log)
    for i, (ev, want) in enumerate(zip(steps, res.losses)):
        if tc.rel_err(ev["loss"], want) > tc.TOL:
            raise tc.Failure(f"{name}: loss of step {i}: {ev['loss']!r} vs reference {want!r}")
    want = tr.state_arrays(model)
    worst = tc.compare_params(got, want, f"{name} final weights")
    moved = max(tc.rel_err(want[k], start[k]) for k in want)
    if moved < 1e-3:
        raise tc.Failure(f"{name}: the weights hardly moved ({moved:.2g})")
    partitioned = [mode for mode in PARTITIONED if name in getattr(args, mode)]
    for mode in partitioned:
        part_art = os.path.join(d, f"art_{mode}")
        tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
                *PARTITIONED[mode], "--batch-size", B, "-o", part_art])
        _, part_got = train_snn_run(args, part_art, data, tc.fresh_dir(os.path.join(d, mode)),
                                    ranks=2)
        tc.compare_params(part_got, want, f"{name} final weights under {mode}")
    return (f"losses {[round(v, 6) for v in res.losses]}, worst weight rel err {worst:.2g}, "
            f"moved {moved:.2g}" + "".join(f", {m} too" for m in partitioned))


def main(doc, variants, what, check_one):
    """The command line (--bin, --work, --only, --tp, --pp over `variants`) and the run:
    check_one(args, name, work, data) per variant, in a fresh WORK with shared batches."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--only", default=",".join(variants),
                   help=f"comma-separated {what} (default: all)")
    p.add_argument("--tp", default="", help=f"comma-separated {what} also trained on tp=2")
    p.add_argument("--pp", default="", help=f"comma-separated {what} also trained on pp=2")
    args = p.parse_args()
    names = args.only.split(",")
    args.tp = [n for n in args.tp.split(",") if n]
    args.pp = [n for n in args.pp.split(",") if n]
    unknown = sorted(set(names + args.tp + args.pp) - set(variants))
    if unknown:
        p.error(f"unknown {what} {unknown} (expected any of {', '.join(variants)})")

    def check():
        work = tc.fresh_dir(args.work)
        args.x_path, args.y_path = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
        data = tc.static_images(args.x_path, args.y_path, B * STEPS, [64])
        for name in names:
            check_one(args, name, work, data)
        print(f"PASS: {len(names)} {what} train as the reference does")

    tc.main_wrapper(check)
