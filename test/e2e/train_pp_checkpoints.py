"""A pipeline's checkpoint continues in data parallelism, and a data-parallel one in a pipeline
(docs/checkpoints.md "Pipeline runs"): the checkpoints are whole, so the mode may change between
runs.

The spiking MLP (no BatchNorm, so one process on the whole batch and one accumulating over
microbatches compute the same up to rounding; docs/training.md) trains 5 SGD steps with momentum,
against PyTorch in one process accumulating over 2 microbatches:
  - dp -> pp: `snn-run --nproc 2 train` on a dp=2 artifact stops after 2 steps (--stop-after,
    which checkpoints), then a pp=2 1F1B artifact resumes that checkpoint and finishes;
  - pp -> dp: the same the other way round;
  - pp -> pp x tp and pp x tp -> dp: a pipeline whose stages are split over tp=2 (4 ranks)
    continues the pipeline's checkpoint, and its own (tp parts made whole) continues as dp.
Each continued run's logged losses (steps 2-4) and final weights on every rank are within 1e-4
relative of the reference's, and the loss moves; the reference's neuron layers fire at 5-50 % on
the first training batch.

Usage: train_pp_checkpoints.py --bin BUILD/bin --work DIR
"""
import argparse
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads before torch loads
import torch  # noqa: I100
import train_pp as tpp
import train_tp as ttp
import train_trajectory as tt
from snnexport import train as tr

T, B, STEPS, STOP = tpp.T, tpp.B, tpp.STEPS, 2
RANKS = 2  # the dp size and the pipeline's stages (and microbatches)
# Each artifact: its snn-compile flags and its rank count.
ARTIFACTS = {
    "dp": (["--mode", "dp", "--topology", f"dp={RANKS}"], RANKS),
    "pp": (["--mode", "pp", "--topology", f"pp={RANKS}", "--pp-schedule", "1f1b",
            "--pp-microbatches", RANKS], RANKS),
    "pp_tp": (["--mode", "pp", "--topology", f"pp={RANKS},tp=2", "--pp-schedule", "1f1b",
               "--pp-microbatches", RANKS], 2 * RANKS),
}


def compile_artifacts(bin_dir, case, work):
    arts = {}
    for name, (flags, ranks) in ARTIFACTS.items():
        art = os.path.join(work, f"art_{name}")
        shutil.rmtree(art, ignore_errors=True)
        tc.run([os.path.join(bin_dir, "snn-compile"), os.path.join(case, "model.onnx"), *flags,
                "--batch-size", B, "-o", art])
        arts[name] = (art, ranks)
    return arts


def switch_modes(args, arts, data, first, then):
    """`first` trains STOP steps and checkpoints; `then` resumes it and finishes. Returns the
    continued run's log and rank 0's final weights (every rank's checked equal to them)."""
    d = tc.fresh_dir(os.path.join(args.work, f"{first}_to_{then}"))
    c = tr.TrainConfig(batch_size=B, steps=STEPS, **ttp.SGD)
    common = ["--data-npy", data, *tt.cli_flags(c), "--threads", 1, "--progress", "none",
              "--dist-timeout", 120, "--checkpoint", os.path.join(d, "ckpt")]
    def snn_run(name):
        return [os.path.join(args.bin, "snn-run"), "--nproc", arts[name][1], "train",
                arts[name][0]]
    tc.run(snn_run(first) + [*common, "--stop-after", STOP])
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    tc.run(snn_run(then) + [*common, "--resume", "--log", log, "--save-params", params])
    weights = tc.load_params(os.path.join(params, "rank0"))
    for r in range(1, arts[then][1]):
        tc.compare_params(tc.load_params(os.path.join(params, f"rank{r}")), weights,
                          f"{first} -> {then}: rank {r} vs rank 0", exact=True)
    return log, weights


def check_continued(what, log, weights, res, trained):
    steps, _ = tc.read_log(log)
    if [s["step"] for s in steps] != list(range(STOP, STEPS)):
        raise tc.Failure(f"{what}: the resumed run logged steps {[s['step'] for s in steps]}, "
                         f"expected {STOP}..{STEPS - 1}")
    for s in steps:
        want = res.losses[s["step"]]
        if not abs(s["loss"] - want) <= tc.TOL * abs(want):
            raise tc.Failure(f"{what}: step {s['step']} loss {s['loss']!r}, reference {want!r}")
    worst = tc.compare_params(weights, trained, f"{what}: final weights")
    print(f"{what}: steps {STOP}-{STEPS - 1} and the final weights equal the reference "
          f"(worst {worst:.2g})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    args.model, args.layers, args.neuron, args.width = "deep_mlp", None, None, None
    torch.set_num_threads(2)
    work = tc.fresh_dir(args.work)
    case, _ = ttp.make_case(args, work)
    _, shape, static = ttp.MODELS[args.model]
    x, y = ttp.training_data(tc.fresh_dir(os.path.join(work, "data")), shape, static,
                             S=B * STEPS)
    res, _, trained, _, _ = ttp.reference_training(case, x, y, static, args.model, RANKS)
    arts = compile_artifacts(args.bin, case, work)
    for first, then in (("dp", "pp"), ("pp", "dp"), ("pp", "pp_tp"), ("pp_tp", "dp")):
        log, weights = switch_modes(args, arts, f"{x},{y}", first, then)
        check_continued(f"{first} -> {then}", log, weights, res, trained)
    print("PASS: a dp checkpoint continues as a pipeline and a pipeline's as dp, a pipeline's "
          "with tensor-parallel stages and back, equal to one process")


if __name__ == "__main__":
    tc.main_wrapper(main)
