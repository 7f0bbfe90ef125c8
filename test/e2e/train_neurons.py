"""Every described neuron class infers and trains as the PyTorch reference does: deep_mlp (2
Linear layers, each followed by the neuron) with SpikingJelly's other neuron classes
(snnexport.described_neurons: QIF, EIF, Izhikevich, CUBALIF, KLIF with its learnable k, LIAF's
analog output, SimpleIF, SimpleLIF, HalfThresholdIF), exported as `Neuron` nodes described by
their parts and run by the runtime's neuron program evaluator.

Per class: `snn-run infer` on the case's input equals the reference's output (firing rates
within 1e-6 relative); every neuron layer fires 5-50 %; 3 SGD steps of `snn-run train` give the
reference trainer's losses and final weights within 1e-4 relative, and the weights moved. With
--tp / --pp, the same model compiled for tp=2 / pp=2 trains on 2 ranks to the same weights.

Usage: train_neurons.py --bin BUILD/bin --work DIR [--only NAME,...] [--tp NAME,...]
                        [--pp NAME,...]
"""
import argparse
import os

import numpy as np

import train_common as tc  # first: it sets the BLAS threads before torch loads
from snnexport import train as tr  # noqa: I100

T, B, STEPS = 4, 8, 3

NEURONS = ("qif", "eif", "izhikevich", "cubalif", "klif", "liaf", "simple_if", "simple_lif",
           "half_threshold_if")

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


def check_infer(args, name, case, art, d):
    """snn-run infer of the case's input against the reference's output."""
    output = os.path.join(d, "output.npy")
    tc.run([os.path.join(args.bin, "snn-run"), "infer", art, "--input",
            os.path.join(case, "input.npy"), "--output", output])
    got, want = np.load(output), np.load(os.path.join(case, "expected.npy"))
    err = tc.rel_err(got, want)
    if got.shape != want.shape or err > 1e-6:
        raise tc.Failure(f"{name}: snn-run infer output {got.shape} differs from the "
                         f"reference {want.shape} (max rel err {err:.3g})")


def check_one(args, name, work, data, x_path, y_path):
    d = tc.fresh_dir(os.path.join(work, name))
    case, art = tc.make_artifact(args.bin, d, "deep_mlp", T=T, N=B, tag=name, layers=2,
                                 width=32, classes=10, neuron=name)
    check_infer(args, name, case, art, d)
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
    print(f"{name}: inference equal; losses {[round(v, 6) for v in res.losses]}, worst weight "
          f"rel err {worst:.2g}, moved {moved:.2g}" +
          "".join(f", {m} too" for m in partitioned))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--only", default=",".join(NEURONS),
                   help="comma-separated neuron kinds (default: all)")
    p.add_argument("--tp", default="", help="comma-separated kinds also trained on tp=2")
    p.add_argument("--pp", default="", help="comma-separated kinds also trained on pp=2")
    args = p.parse_args()
    names = args.only.split(",")
    args.tp = [n for n in args.tp.split(",") if n]
    args.pp = [n for n in args.pp.split(",") if n]
    unknown = sorted(set(names + args.tp + args.pp) - set(NEURONS))
    if unknown:
        p.error(f"unknown neuron kinds {unknown} (expected any of {', '.join(NEURONS)})")

    def check():
        work = tc.fresh_dir(args.work)
        x_path, y_path = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
        data = tc.static_images(x_path, y_path, B * STEPS, [64])
        for name in names:
            check_one(args, name, work, data, x_path, y_path)
        print(f"PASS: {len(names)} neuron classes infer and train as the reference does")

    tc.main_wrapper(check)


if __name__ == "__main__":
    main()
