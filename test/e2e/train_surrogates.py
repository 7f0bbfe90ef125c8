"""Every surrogate trains as the PyTorch reference does: `snn-run train` against the reference
trainer (snnexport.train) on deep_mlp (2 Linear + LIF layers) firing with each of
SpikingJelly's surrogate functions, with parameters other than their defaults.

Per surrogate: the case exported (`surrogate` with `alpha` and `beta` in the ONNX file),
compiled, trained 3 SGD steps by snn-run and by the reference from the same weights on the same
batches. Required: every neuron layer fires 5-50 % on the case's input, the loss moves, the
losses within 1e-4 relative, every final weight within 1e-4 relative (docs/training.md) and the
weights moved (so the surrogate's gradient reached them). With --tp / --pp, the same model
compiled for tp=2 / pp=2 trains on 2 ranks to the same weights (every rank's equal).

Usage: train_surrogates.py --bin BUILD/bin --work DIR [--only NAME,...] [--tp NAME,...]
                           [--pp NAME,...]
"""
import argparse
import os

import train_common as tc  # first: it sets the BLAS threads before torch loads
from snnexport import train as tr  # noqa: I100

T, B, STEPS = 4, 8, 3

# The `surrogate` value -> make_case's --surrogate spec (SpikingJelly's parameters in order).
SURROGATES = {
    "sigmoid": "sigmoid:3",
    "atan": "atan:1.5",
    "piecewise_quadratic": "piecewise_quadratic:0.9",
    "piecewise_exp": "piecewise_exp:1.5",
    "soft_sign": "soft_sign:1.5",
    "super_spike": "super_spike:1.5",
    "nonzero_sign_log_abs": "nonzero_sign_log_abs:1.5",
    "erf": "erf:1.5",
    "piecewise_leaky_relu": "piecewise_leaky_relu:0.8,0.05",
    "squarewave_fourier_series": "squarewave_fourier_series:3,7",
    "s2nn": "s2nn:3,0.8",
    "q_pseudo_spike": "q_pseudo_spike:2.5",
    "leaky_k_relu": "leaky_k_relu:0.1,0.9",
    "fake_numerical_gradient": "fake_numerical_gradient:0.5",
    "log_tailed_relu": "log_tailed_relu:0.1",
    "rect": "rect:0.8",
}


# Two-rank plans the surrogates of --tp / --pp also train under: the Linear layers split
# over tp (each neuron on its slice of the features), or the two layers as pipeline stages
# over 4 microbatches (the same gradients as the whole batch: no BatchNorm).
PARTITIONED = {
    "tp": ["--mode", "tp", "--topology", "tp=2"],
    "pp": ["--mode", "pp", "--topology", "pp=2", "--pp-microbatches", 4],
}


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


def check_one(args, name, work, data, x_path, y_path):
    d = tc.fresh_dir(os.path.join(work, name))
    case, art = tc.make_artifact(args.bin, d, "deep_mlp", T=T, N=B, tag=name, layers=2,
                                 width=32, classes=10, surrogate=SURROGATES[name])
    log, got = train_snn_run(args, art, data, d)
    tc.check_fires_and_moves(case, [log])
    model, _ = tr.model_from_case(case)
    start = tr.state_arrays(model)
    cfg = tr.TrainConfig(batch_size=B, steps=STEPS, lr=0.2, optimizer="sgd", momentum=0.9,
                         loss="mse", seed=5, repeat_time=T)
    res = tr.train(model, tr.load_npy(x_path, y_path, static=True), cfg)
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
    print(f"{name}: losses {[round(v, 6) for v in res.losses]}, worst weight rel err "
          f"{worst:.2g}, moved {moved:.2g}" + "".join(f", {m} too" for m in partitioned))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--only", default=",".join(SURROGATES),
                   help="comma-separated surrogates (default: all)")
    p.add_argument("--tp", default="", help="comma-separated surrogates also trained on tp=2")
    p.add_argument("--pp", default="", help="comma-separated surrogates also trained on pp=2")
    args = p.parse_args()
    names = args.only.split(",")
    args.tp = [n for n in args.tp.split(",") if n]
    args.pp = [n for n in args.pp.split(",") if n]
    unknown = sorted(set(names + args.tp + args.pp) - set(SURROGATES))
    if unknown:
        p.error(f"unknown surrogates {unknown} (expected any of {', '.join(SURROGATES)})")

    def check():
        work = tc.fresh_dir(args.work)
        x_path, y_path = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
        data = tc.static_images(x_path, y_path, B * STEPS, [64])
        for name in names:
            check_one(args, name, work, data, x_path, y_path)
        print(f"PASS: {len(names)} surrogates train as the reference does")

    tc.main_wrapper(check)


if __name__ == "__main__":
    main()
