"""`snn-run train`'s step arena: the same training with and without it, bit for bit, while it
serves the steps' large tensors from the layout of a recorded step.

A CSNN (width 16, B = 32, T = 4: its convolutions' outputs are 6.4 MB, above the arena's
1 MiB) trains 4 steps under Adam with the arena (the default) and with --no-step-arena, also
with --recompute (two forwards' tensors in one step's layout), and on 2 data-parallel ranks
(the gradient all-reduce's buffers); each pair must have:
  - every step's loss and accuracy identical and every parameter and buffer bit-equal;
  - the end event's `step_arena` counts: laid out (from the second step) and serving at least
    one large tensor a step from the third step on (with --no-step-arena: no counts);
  - every neuron layer firing at 5-50 % and the losses moving (train_common).

Usage: train_step_arena.py --bin BUILD/bin --work DIR
"""
import argparse
import os

import train_common as tc

T, B, STEPS = 4, 32, 4
ADAM = ["--optimizer", "adam", "--lr", "0.003", "--loss", "ce", "--seed", "3"]


def train(args, art, data, d, extra=(), nproc=1):
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    cmd = [os.path.join(args.bin, "snn-run"), "train", art, "--data-npy", data,
           "--steps", STEPS, "--batch-size", B, "--log", log, "--save-params", params,
           "--threads", 1 if nproc > 1 else 2, "--progress", "none", "--repeat-time", T,
           *ADAM, *extra]
    if nproc > 1:
        cmd = cmd[:2] + ["--nproc", nproc] + cmd[2:]
    tc.run(cmd)
    stem, ext = os.path.splitext(log)
    rank_log = log if nproc == 1 else f"{stem}.rank0{ext}"
    return log, params if nproc == 1 else os.path.join(params, "rank0"), rank_log


def arena_counts(rank_log):
    ends = [e for e in tc.read_jsonl(rank_log) if e.get("event") == "end"]
    return ends[-1].get("step_arena") if ends else None


def check_pair(name, args, art, data, d, extra=(), nproc=1):
    arena = train(args, art, data, tc.fresh_dir(os.path.join(d, "arena")), extra, nproc)
    heap = train(args, art, data, tc.fresh_dir(os.path.join(d, "heap")),
                 [*extra, "--no-step-arena"], nproc)
    steps = tc.check_same_steps(name, arena[0], heap[0], STEPS, "with the step arena")
    tc.compare_params(tc.load_params(arena[1]), tc.load_params(heap[1]),
                      f"{name}: weights with the step arena against without", exact=True)
    counts = arena_counts(arena[2])
    if not counts or counts["layouts"] < 1 or counts["arena_bytes"] < (1 << 20) or \
            counts["served"] < STEPS - 2:
        raise tc.Failure(f"{name}: the arena served no step's tensors: end event {counts}")
    if arena_counts(heap[2]) is not None:
        raise tc.Failure(f"{name}: --no-step-arena still reports arena counts")
    print(f"{name}: losses {[s['loss'] for s in steps]} and weights bit-equal; arena {counts}")
    return [arena[0], heap[0]]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    case, art = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=16)
    x, y = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    data = tc.static_images(x, y, B * STEPS, [1, 28, 28], seed=5)
    logs = check_pair("csnn", args, art, data, os.path.join(work, "plain"))
    logs += check_pair("csnn --recompute", args, art, data, os.path.join(work, "recompute"),
                       ["--recompute"])
    dp = os.path.join(work, "art_dp2")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", dp,
            "--mode", "dp", "--topology", "dp=2", "--batch-size", B])
    logs += check_pair("csnn dp=2", args, dp, data, os.path.join(work, "dp2"), nproc=2)
    tc.check_fires_and_moves(case, logs)


if __name__ == "__main__":
    tc.main_wrapper(main)
