"""Elastic data parallelism: a job continued on another number of ranks ends where it would have.

A CSNN artifact planned for 4 ranks trains 30 steps of a global batch of 12 in three legs:
on 4 ranks until step 10, then (--resume) on 2 ranks until step 20, then on 3 ranks to the end
(`--stop-after` ends a leg with a checkpoint). Its dp axis is resized at each start (the global
batch and its data order stay the same); the checkpoint is resharded on load. Required: every
rank of the last leg holds the parameters of the uninterrupted 4-rank job within 1e-4 relative
(the ranks sum the gradients in another order: float32 rounding, not another trajectory; the
learning rate is small enough that no spike flips over 30 steps, where 0.05 flips one by step
15 and 0.003 one by step 30 (with the first convolution's weight gradient taken from the sum
over T), and the runs part as any two summation orders would), the
loss moved, and the model's neuron layers fire at 5-50 % (make_case's measurement).
--mode dp, zero, fsdp, fsdp_tp (dp=2 x tp=2: 4, then 2, then 6 ranks), or pp (dp=2 x pp=2:
4, then 2, then 4 ranks). A layout whose fixed axes do not divide the ranks is refused before
any rank starts, naming the axis.

Usage: train_elastic.py --bin BUILD/bin --work DIR [--mode dp|zero|fsdp|fsdp_tp|pp]
"""
import argparse
import os

import train_common as tc

T, B, STEPS, LEG, EVERY = 4, 12, 30, 10, 5
LAYOUT = {"dp": (["--mode", "dp", "--topology", "dp=4"], [4, 2, 3]),
          "zero": (["--mode", "zero", "--topology", "dp=4"], [4, 2, 3]),
          "fsdp": (["--mode", "fsdp", "--topology", "dp=4"], [4, 2, 3]),
          "fsdp_tp": (["--mode", "fsdp_tp", "--topology", "dp=2,tp=2",
                       "--experimental-conv-tp"], [4, 2, 6]),
          "pp": (["--mode", "pp", "--topology", "dp=2,pp=2", "--pp-schedule", "1f1b",
                  "--pp-microbatches", "2"], [4, 2, 4])}





def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--mode", choices=sorted(LAYOUT), default="dp")
    args = p.parse_args()
    layout, legs = LAYOUT[args.mode]
    work = tc.fresh_dir(args.work)
    case, _ = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=8)
    art = os.path.join(work, f"art_{args.mode}")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art,
            "--batch-size", B, *layout])
    w = lambda *n: os.path.join(work, *n)  # noqa: E731
    data = tc.static_images(w("x.npy"), w("y.npy"), 4 * B, [1, 28, 28], seed=5)
    snn_run = os.path.join(args.bin, "snn-run")
    common = ["train", art, "--data-npy", data, "--steps", STEPS, "--batch-size", B,
              "--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.001", "--loss", "ce",
              "--seed", 2, "--repeat-time", T, "--threads", 1, "--progress", "none",
              "--dist-timeout", 60]
    tc.run([snn_run, "--nproc", legs[0], *common, "--save-params", w("straight")])
    logs = []
    for leg, ranks in enumerate(legs):
        logs.append(w(f"log{leg}.jsonl"))
        last = leg == len(legs) - 1
        proc = tc.run([snn_run, "--nproc", ranks, *common, "--checkpoint", w("ckpt"),
                       "--checkpoint-every", EVERY, "--resume", "--log", logs[-1],
                       *([] if last else ["--stop-after", LEG]),
                       *(["--save-params", w("elastic")] if last else [])])
        if ranks != legs[0] and f"running on {ranks} ranks" not in proc.stderr:
            raise tc.Failure(f"leg {leg + 1} on {ranks} ranks did not say its dp axis was "
                             f"resized:\n{proc.stderr}")
    rates = tc.check_fires_and_moves(case, logs)
    straight = tc.load_params(w("straight", "rank0"))
    worst = 0.0
    for r in range(legs[-1]):
        worst = max(worst, tc.compare_params(tc.load_params(w("elastic", f"rank{r}")), straight,
                                             f"rank {r} after {legs} ranks vs 4 throughout"))
    # The fixed axes cannot change: refused before any rank starts, naming them.
    if args.mode in ("fsdp_tp", "pp"):
        proc = tc.run([snn_run, "--nproc", 3, *common], expect_ok=False)
        axis = "tp=2" if args.mode == "fsdp_tp" else "pp=2"
        if proc.returncode != 1 or f"not {axis}" not in proc.stderr:
            raise tc.Failure(f"3 ranks for a {axis} artifact: {proc.stderr}")
    print(f"PASS: {args.mode}: 4 -> {legs[1]} -> {legs[2]} ranks ended within {worst:.2g} "
          f"(relative) of the uninterrupted 4-rank job; firing rates "
          f"{sorted(round(r, 3) for r in rates.values())}")


if __name__ == "__main__":
    tc.main_wrapper(main)
