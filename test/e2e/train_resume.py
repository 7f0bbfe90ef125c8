"""Resume test: `snn-run train` for 2N steps straight must equal the same run stopped after N
steps (--stop-after N, which checkpoints) and continued with --resume: bit-identical parameters
and BatchNorm buffers, and the same per-step log (loss, accuracy, lr) before and after the
resume point.

Variants (both resume in the middle of an epoch, so the sample order of the epoch must be
recomputed, not restarted):
  vgg_dvs + adam: optimizer moments, the Adam step count, BatchNorm running statistics, the
                  Dropout generator state (the masks after the resume must be the same) and
                  a step LR schedule that decays after the resume point
  csnn + sgd:     momentum buffers, weight decay, a cosine LR schedule over the whole run,
                  direct encoding

Usage: train_resume.py --bin BUILD/bin --work DIR [--threads N]
"""
import argparse
import os

import train_common as tc

T, B, N = 4, 8, 4

VARIANTS = [
    ("vgg_dvs", {"width": 8, "image": 16, "blocks": 2}, False,
     ["--optimizer", "adam", "--lr", "0.002", "--schedule", "step", "--step-size", "5",
      "--gamma", "0.5", "--loss", "ce", "--seed", "5"]),
    ("csnn", {"width": 8}, True,
     ["--optimizer", "sgd", "--lr", "0.02", "--momentum", "0.9", "--weight-decay", "0.001",
      "--schedule", "cosine", "--eta-min", "0.001", "--loss", "mse", "--seed", "9"]),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    snn_run = os.path.join(args.bin, "snn-run")
    for model, kw, static, flags in VARIANTS:
        print(f"== {model}: {2 * N} steps straight vs {N} + resume {N}", flush=True)
        _, art = tc.make_artifact(args.bin, work, model, T=T, N=B, **kw)
        d = tc.fresh_dir(os.path.join(work, model))
        w = lambda *n: os.path.join(d, *n)  # noqa: E731
        S = 3 * B + 3  # 3 steps per epoch: step N = 4 is the second batch of epoch 1
        if static:
            data = tc.static_images(w("x.npy"), w("y.npy"), S, [1, 28, 28], seed=1)
        else:
            data = tc.event_sequences(w("x.npy"), w("y.npy"), S, T, [2, 16, 16], seed=1)
        common = [snn_run, "train", art, "--data-npy", data, "--batch-size", B,
                  "--threads", args.threads, *flags]
        if static:
            common += ["--repeat-time", T]

        tc.run(common + ["--steps", 2 * N, "--log", w("straight.jsonl"),
                         "--save-params", w("straight")])
        tc.run(common + ["--steps", 2 * N, "--stop-after", N, "--checkpoint", w("ckpt"),
                         "--log", w("first.jsonl"), "--save-params", w("first")])
        if not os.path.isdir(w("ckpt")) or not os.listdir(w("ckpt")):
            raise tc.Failure(f"{model}: --checkpoint {w('ckpt')} holds nothing after {N} steps")
        tc.run(common + ["--steps", 2 * N, "--checkpoint", w("ckpt"), "--resume",
                         "--log", w("resumed.jsonl"), "--save-params", w("resumed")])

        straight, _ = tc.read_log(w("straight.jsonl"))
        first, _ = tc.read_log(w("first.jsonl"))
        resumed, _ = tc.read_log(w("resumed.jsonl"))
        if len(straight) != 2 * N or len(first) != N or len(resumed) != N:
            raise tc.Failure(f"{model}: step events straight/first/resumed = {len(straight)}/"
                             f"{len(first)}/{len(resumed)}, expected {2 * N}/{N}/{N}")
        for i, (a, b) in enumerate(zip(straight, first + resumed)):
            print(f"  step {a['step']}: straight loss {a['loss']!r}, split run "
                  f"{b['loss']!r} (step {b['step']}, epoch {b['epoch']})")
            if (a["step"], a["epoch"], a["loss"], a["accuracy"], a["lr"]) != \
                    (b["step"], b["epoch"], b["loss"], b["accuracy"], b["lr"]):
                raise tc.Failure(f"{model}: step event {i} differs: straight {a} vs "
                                 f"first+resumed {b}")
        if len(set(e["loss"] for e in straight)) < 3:
            raise tc.Failure(f"{model}: losses barely change; the case does not test resuming")
        tc.compare_params(tc.load_params(w("resumed")), tc.load_params(w("straight")),
                          f"{model}: resumed vs straight weights", exact=True)
        moved = max(tc.rel_err(a, b) for a, b in zip(tc.load_params(w("first")).values(),
                                                     tc.load_params(w("straight")).values()))
        if moved == 0.0:
            raise tc.Failure(f"{model}: the last {N} steps did not change the weights")
        print(f"{model}: resumed weights bit-identical to the straight run "
              f"(the last {N} steps moved them by {moved:.3g} relative)")
    print("PASS: resume continues bit-identically")


if __name__ == "__main__":
    tc.main_wrapper(main)
