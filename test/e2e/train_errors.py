"""Bad input to `snn-run train` / `snn-run eval`: each case must exit non-zero with one
`error:` line that says what is wrong, print no stack trace, and leave good state intact.

  nan-data      a NaN sample in batch 2 of an unshuffled run of a model whose output is not a
                spike (a Linear readout; a neuron would turn NaN into "no spike"): the error
                names step 2 (the log's numbering) and the log holds steps 0 and 1 only
  huge-lr       lr 1e30 makes the loss overflow: stops at the first non-finite loss, named
  other-model   --resume from a checkpoint of another model (and snn-run eval --checkpoint) is
                refused naming the checkpoint; the checkpoint still resumes its own model
  corrupt       the newest checkpoint damaged (a flipped byte in tensors.bin, then a truncated
                checkpoint.json): --resume refuses it naming it; the previous checkpoint is
                untouched, a stale half-written `step-*.tmp` is ignored, and once the bad one
                is removed --resume continues from the previous one to the same weights as a
                straight run

Usage: train_errors.py --bin BUILD/bin --work DIR [--threads N]
"""
import argparse
import os
import shutil

import numpy as np
import torch
from torch import nn

import train_common as tc
from snnexport import export_onnx, layer

T, B = 4, 8
FAILURES = []


class LinearReadout(nn.Module):
    """Flatten-Linear, rate = mean over T: no neuron, so NaN reaches the loss."""

    def __init__(self):
        super().__init__()
        self.flat = layer.Flatten(step_mode="m")
        self.fc = layer.Linear(784, 10, step_mode="m")

    def forward(self, x):
        return self.fc(self.flat(x)).mean(0)


def expect_error(name, cmd, must_mention, timeout=300):
    """Runs cmd; records a failure unless it exits 1-ish with an `error:` last line that
    contains every string of `must_mention` (case-insensitive). Returns that line."""
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    proc = tc.subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                             timeout=timeout)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    problems = []
    if proc.returncode == 0:
        problems.append("exit code 0")
    if proc.returncode < 0:
        problems.append(f"killed by signal {-proc.returncode}")
    if not last.startswith("error: "):
        problems.append(f"last stderr line is not 'error: ...': {last!r}")
    for s in must_mention:
        if s.lower() not in last.lower():
            problems.append(f"error does not mention {s!r}")
    if any("Traceback" in l or "frame #" in l or "Stack dump" in l for l in lines):
        problems.append("stack trace printed")
    print(f"{'ok  ' if not problems else 'FAIL'} {name}: {last or '<no stderr>'}", flush=True)
    if problems:
        FAILURES.append(f"{name}: {'; '.join(problems)}")
    return last


def check(cond, msg):
    print(f"{'ok  ' if cond else 'FAIL'} {msg}", flush=True)
    if not cond:
        FAILURES.append(msg)


def snapshot(directory):
    """Every file's bytes, but the job lock's (each run that opens the directory writes its pid
    there; no checkpoint's)."""
    out = {}
    for root, _, files in os.walk(directory):
        for f in files:
            if f == ".lock" and root == directory:
                continue
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, directory)] = fh.read()
    return out


def nan_cases(args, work, snn_run):
    w = lambda *n: os.path.join(work, *n)  # noqa: E731
    torch.manual_seed(0)
    model = LinearReadout()
    export_onnx(model, torch.rand(T, 2, 1, 28, 28), w("readout.onnx"))
    tc.run([os.path.join(args.bin, "snn-compile"), w("readout.onnx"), "-o", w("art_readout")])
    S = 5 * B
    g = np.random.default_rng(0)
    x = g.random((S, 1, 28, 28), dtype=np.float32)
    x[2 * B + 1, 0, 5, 5] = np.nan
    np.save(w("nan_x.npy"), x)
    np.save(w("nan_y.npy"), g.integers(0, 10, S).astype(np.int64))
    base = [snn_run, "train", w("art_readout"), "--data-npy",
            f"{w('nan_x.npy')},{w('nan_y.npy')}", "--repeat-time", T, "--batch-size", B,
            "--steps", 5, "--optimizer", "sgd", "--threads", args.threads]
    expect_error("nan-data", base + ["--lr", "0.01", "--no-shuffle", "--log", w("nan.jsonl")],
                 ["step 2", "nan"])
    steps, _ = tc.read_log(w("nan.jsonl")) if os.path.exists(w("nan.jsonl")) else ([], [])
    check([s["step"] for s in steps] == [0, 1],
          f"nan-data: the log holds the finished steps 0 and 1 (got "
          f"{[s['step'] for s in steps]})")

    x[2 * B + 1, 0, 5, 5] = 0.5
    np.save(w("ok_x.npy"), x)
    huge = [snn_run, "train", w("art_readout"), "--data-npy",
            f"{w('ok_x.npy')},{w('nan_y.npy')}", "--repeat-time", T, "--batch-size", B,
            "--steps", 5, "--optimizer", "sgd", "--lr", "1e30", "--no-shuffle", "--log",
            w("huge.jsonl"), "--threads", args.threads]
    print("+ " + " ".join(str(c) for c in huge), flush=True)
    proc = tc.subprocess.run([str(c) for c in huge], capture_output=True, text=True,
                             timeout=300)
    steps, _ = tc.read_log(w("huge.jsonl")) if os.path.exists(w("huge.jsonl")) else ([], [])
    last = (proc.stderr.strip().splitlines() or [""])[-1]
    n = len(steps)
    good = (proc.returncode != 0 and last.startswith("error: ") and f"step {n}" in last
            and 0 < n < 5 and all(np.isfinite(s["loss"]) for s in steps))
    print(f"{'ok  ' if good else 'FAIL'} huge-lr: {n} finite steps logged, then {last!r}")
    if not good:
        FAILURES.append(f"huge-lr: expected an error naming step {n} after {n} finite steps "
                        f"(exit {proc.returncode}): {last!r}")


def checkpoint_cases(args, work, snn_run):
    w = lambda *n: os.path.join(work, *n)  # noqa: E731
    _, art8 = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=8)
    _, art4 = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=4, tag="csnn4")
    data = tc.static_images(w("ck_x.npy"), w("ck_y.npy"), 3 * B, [1, 28, 28], seed=5)

    def train(art, *extra):
        return [snn_run, "train", art, "--data-npy", data, "--repeat-time", T,
                "--batch-size", B, "--optimizer", "adam", "--lr", "0.001", "--seed", 4,
                "--threads", args.threads, *extra]

    # --- another model's checkpoint
    ck = w("ck_other")
    tc.run(train(art8, "--steps", 4, "--stop-after", 2, "--checkpoint", ck))
    before = snapshot(ck)
    expect_error("other-model: train --resume", train(art4, "--steps", 4, "--checkpoint", ck,
                                                       "--resume"), [ck])
    expect_error("other-model: eval --checkpoint",
                 [snn_run, "eval", art4, "--data-npy", data, "--repeat-time", T,
                  "--batch-size", B, "--checkpoint", ck, "--threads", args.threads], [ck])
    check(snapshot(ck) == before, "other-model: the refused checkpoint is unchanged")
    tc.run(train(art8, "--steps", 4, "--checkpoint", ck, "--resume", "--log",
                 w("other_ok.jsonl")))
    steps, _ = tc.read_log(w("other_ok.jsonl"))
    check([s["step"] for s in steps] == [2, 3], "other-model: the checkpoint still resumes "
          f"its own model at step 2 (logged {[s['step'] for s in steps]})")

    # --- corrupt newest checkpoint
    tc.run(train(art8, "--steps", 6, "--save-params", w("straight6")))
    ck = w("ck_corrupt")
    keep = ["--checkpoint", ck, "--checkpoint-every", 2, "--keep-checkpoints", 2]
    tc.run(train(art8, "--steps", 6, "--stop-after", 4, *keep))
    entries = sorted(e for e in os.listdir(ck) if e.startswith("step-"))
    check(entries == ["step-00000002", "step-00000004"],
          f"corrupt: --keep-checkpoints 2 keeps step 2 and 4 (found {entries})")
    if len(entries) != 2:
        return
    prev, newest = os.path.join(ck, entries[0]), os.path.join(ck, entries[1])
    prev_bytes = snapshot(prev)
    os.makedirs(os.path.join(ck, "step-00000099.tmp"))  # a save that crashed half-way
    with open(os.path.join(ck, "step-00000099.tmp", "tensors.bin"), "wb") as f:
        f.write(b"\0" * 100)
    tensors = os.path.join(newest, "tensors.bin")
    blob = bytearray(open(tensors, "rb").read())
    blob[len(blob) // 2] ^= 0x40
    open(tensors, "wb").write(bytes(blob))
    expect_error("corrupt: flipped byte in tensors.bin",
                 train(art8, "--steps", 6, *keep, "--resume"), [entries[1]])
    meta = os.path.join(newest, "checkpoint.json")
    text = open(meta, "rb").read()
    blob[len(blob) // 2] ^= 0x40
    open(tensors, "wb").write(bytes(blob))  # tensors fine again, the JSON truncated now
    open(meta, "wb").write(text[: len(text) // 2])
    expect_error("corrupt: truncated checkpoint.json",
                 train(art8, "--steps", 6, *keep, "--resume"), [entries[1]])
    expect_error("corrupt: eval --checkpoint",
                 [snn_run, "eval", art8, "--data-npy", data, "--repeat-time", T,
                  "--batch-size", B, "--checkpoint", ck, "--threads", args.threads],
                 [entries[1]])
    check(snapshot(prev) == prev_bytes, "corrupt: the previous checkpoint is untouched")
    shutil.rmtree(newest)
    tc.run(train(art8, "--steps", 6, *keep, "--resume", "--log", w("corrupt_resumed.jsonl"),
                 "--save-params", w("resumed6")))
    steps, _ = tc.read_log(w("corrupt_resumed.jsonl"))
    check([s["step"] for s in steps] == [2, 3, 4, 5],
          f"corrupt: resumed from the previous checkpoint (logged "
          f"{[s['step'] for s in steps]})")
    try:
        tc.compare_params(tc.load_params(w("resumed6")), tc.load_params(w("straight6")),
                          "corrupt: resumed from the previous checkpoint vs straight",
                          exact=True)
        check(True, "corrupt: resuming from the previous checkpoint gives the straight run's "
              "weights bit for bit")
    except tc.Failure as e:
        check(False, str(e))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    snn_run = os.path.join(args.bin, "snn-run")
    nan_cases(args, work, snn_run)
    checkpoint_cases(args, work, snn_run)
    if FAILURES:
        raise tc.Failure("\n  ".join([f"{len(FAILURES)} problem(s):"] + FAILURES))
    print("PASS: bad training input refused cleanly")


if __name__ == "__main__":
    tc.main_wrapper(main)
