"""A pipeline stage holds what it sends only while its microbatch is in flight.

Stage 0 of a 1F1B pipeline over 2 ranks sends each microbatch's activations to stage 1 and
keeps them as the microbatch's output until the gradient comes back; then the transport
drops its send too (StageTransport::releaseActivationSends). So with microbatches of one
sample, rank 0's peak of tensor bytes grows from M = 2 to M = 8 microbatches by the larger
batch it loads, not by the six more microbatches' activations it would hold if the sends were
kept until the step ends (docs/planner.md counts the transport's tensors the same way).

Required: rank 0's growth minus the batch's growth under twice one microbatch's activations
(the held sends would add six: measured 0.02 with the release, 6.01 without), both runs
train (the loss moves), and the case's neuron layers fire at 5-50 % (the spikes sent are
real ones).

Usage: pp_send_memory.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os

import train_common as tc  # first: it sets the BLAS threads before torch loads
import train_tp as ttp  # noqa: I100

T, WIDTH, STEPS = 4, 8, 3
IMAGE = (1, 28, 28)


def rank0_growth(args, case, batch, microbatches):
    """Rank 0's peak tensor bytes over its bytes before the steps, and its losses."""
    d = tc.fresh_dir(os.path.join(args.work, f"m{microbatches}"))
    art = os.path.join(d, "art")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
            "--mode", "pp", "--topology", "pp=2", "--batch-size", batch, "--pp-schedule",
            "1f1b", "--pp-microbatches", microbatches, "-o", art])
    data = tc.static_images(os.path.join(d, "x.npy"), os.path.join(d, "y.npy"),
                            batch * STEPS, IMAGE, classes=8)
    log = os.path.join(d, "log.jsonl")
    tc.run([os.path.join(args.bin, "snn-run"), "--nproc", 2, "train", art, "--data-npy", data,
            "--steps", STEPS, "--batch-size", batch, "--lr", 0.05, "--repeat-time", T,
            "--threads", 1, "--progress", "none", "--log", log])
    events = tc.read_jsonl(os.path.join(d, "log.rank0.jsonl"))
    end = [e for e in events if e.get("event") == "end"][-1]
    losses = [e["loss"] for e in events if e.get("event") == "step"]
    if len(losses) != STEPS or len(set(losses)) < 2:
        raise tc.Failure(f"M={microbatches}: rank 0 logged losses {losses}; they must move")
    tensors = end["tensor_bytes"]
    return tensors["peak"] - tensors["before_steps"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    tc.fresh_dir(args.work)
    case, _ = tc.make_artifact(args.bin, args.work, "csnn", T=T, N=8, width=WIDTH, classes=8)
    with open(os.path.join(case, "meta.json")) as f:
        ttp.check_rates(json.load(f)["neurons"], "csnn: case input")
    small = rank0_growth(args, case, batch=2, microbatches=2)
    large = rank0_growth(args, case, batch=8, microbatches=8)
    # The batch a rank loads: T copies of each image (direct encoding) and a label.
    batch_growth = (8 - 2) * (T * IMAGE[0] * IMAGE[1] * IMAGE[2] * 4 + 8)
    # One sample's activations sent by stage 0: the pooled spikes [T, 1, WIDTH, 14, 14].
    sent = T * WIDTH * 14 * 14 * 4
    extra = large - small - batch_growth
    print(f"rank 0: {small} bytes at M=2, {large} at M=8; beyond the batch {extra} bytes "
          f"({extra / sent:.2f} microbatches' activations)")
    if extra >= 2 * sent:
        raise tc.Failure(f"rank 0 holds {extra} bytes more at M=8 than at M=2 beyond the "
                         f"batch: {extra / sent:.1f} microbatches' sent activations (at most "
                         "the 2 in flight may be held)")
    print("PASS: stage 0 holds the activations of the microbatches in flight only")


if __name__ == "__main__":
    tc.main_wrapper(main)
