"""Fault test: kill one of 4 ranks mid-training (fsdp, or a 4-stage pipeline), then resume.

The VGG-style model trains STEPS steps on 4 ranks (`--mode fsdp`: fsdp over dp=4; `--mode pp`:
a 4-stage 1F1B pipeline with 4 microbatches, so rank 2 runs stage 2 and its neighbours wait on
its transfers), checkpointing every EVERY steps. Once a checkpoint at step >= KILL_AFTER is
published, rank 2 (its pid from its rank log) gets SIGKILL, mid-step.
Required:
  - the launcher exits non-zero within the timeout (--dist-timeout plus the launcher's grace and
    terminate periods), its message names rank 2 and the signal, and no rank process is left;
  - `latest` names a complete checkpoint (every shard readable: the resumed run loads it);
  - `--resume` on 4 ranks finishes the run with parameters bit-identical to an uninterrupted run.

Usage: train_fault.py --bin BUILD/bin --work DIR [--mode fsdp|pp]
"""
import argparse
import json
import os
import signal
import subprocess
import time

import train_common as tc
import train_trajectory as tt

T, B, STEPS, EVERY, KILL_AFTER, RANKS, VICTIM = 4, 8, 40, 2, 4, 4, 2
DIST_TIMEOUT = 20
# The launcher waits 5 s for the other ranks to exit, then 3 s after SIGTERM (distributed.md).
EXIT_BOUND = DIST_TIMEOUT + 5 + 3 + 5


def latest_step(ckpt):
    try:
        with open(os.path.join(ckpt, "latest")) as f:
            return int(f.read().strip().split("-")[1])
    except (OSError, ValueError, IndexError):
        return -1


def rank_pids(log):
    stem, ext = os.path.splitext(log)
    pids = {}
    for r in range(RANKS):
        try:
            with open(f"{stem}.rank{r}{ext}") as f:
                pids[r] = json.loads(f.readline())["pid"]
        except (OSError, ValueError, KeyError):
            return None
    return pids


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for our purposes
        return f.read().split(")")[1].split()[0] != "Z"


def kill_mid_run(cmd, ckpt, log):
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while latest_step(ckpt) < KILL_AFTER:
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise tc.Failure(f"no checkpoint at step {KILL_AFTER} before the run ended "
                             f"(exit {proc.returncode}):\n{err[-2000:]}")
        time.sleep(0.002)
    pids = rank_pids(log)
    if pids is None:
        raise tc.Failure("the rank logs do not name every rank's pid")
    os.kill(pids[VICTIM], signal.SIGKILL)
    killed_at, step = time.time(), latest_step(ckpt)
    try:
        out, err = proc.communicate(timeout=EXIT_BOUND + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise tc.Failure(f"the launcher did not exit within {EXIT_BOUND + 30} s of the kill")
    elapsed = time.time() - killed_at
    sys_err = err.rstrip()
    print(sys_err[-3000:])
    print(f"killed rank {VICTIM} (pid {pids[VICTIM]}) after checkpoint {step}; launcher exited "
          f"with {proc.returncode} after {elapsed:.2f} s")
    if proc.returncode == 0:
        raise tc.Failure("the launcher exited 0 although a rank was killed")
    if elapsed > EXIT_BOUND:
        raise tc.Failure(f"the launcher took {elapsed:.1f} s (bound {EXIT_BOUND} s)")
    if f"error: rank {VICTIM} killed by signal 9 (SIGKILL)" not in err:
        raise tc.Failure("the launcher's message does not name the killed rank")
    left = [r for r, pid in pids.items() if alive(pid)]
    if left:
        raise tc.Failure(f"ranks {left} outlived the launcher")
    return step


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--mode", choices=("fsdp", "pp"), default="fsdp")
    args = p.parse_args()
    kw, sample_shape, _ = tt.MODELS["vgg_dvs"]
    work = tc.fresh_dir(args.work)
    case, _ = tc.make_artifact(args.bin, work, "vgg_dvs", T=T, N=B, **kw)
    art = os.path.join(work, f"art_{args.mode}4")
    layout = (["--topology", f"dp={RANKS}"] if args.mode == "fsdp" else
              ["--topology", f"pp={RANKS}", "--pp-schedule", "1f1b", "--pp-microbatches", RANKS])
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art,
            "--mode", args.mode, "--batch-size", B, *layout])
    x, y = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    data = tc.event_sequences(x, y, 6 * B, T, sample_shape, seed=4)
    w = lambda *n: os.path.join(work, *n)  # noqa: E731
    common = [os.path.join(args.bin, "snn-run"), "--nproc", RANKS, "train", art,
              "--data-npy", data, "--steps", STEPS, "--batch-size", B, "--optimizer", "adam",
              "--lr", "0.001", "--loss", "ce", "--seed", 2, "--threads", 1, "--progress", "none",
              "--dist-timeout", DIST_TIMEOUT]
    tc.run(common + ["--save-params", w("straight")])
    step = kill_mid_run(common + ["--checkpoint", w("ckpt"), "--checkpoint-every", EVERY,
                                  "--log", w("log.jsonl")], w("ckpt"), w("log.jsonl"))
    tc.run(common + ["--checkpoint", w("ckpt"), "--checkpoint-every", EVERY, "--resume",
                     "--save-params", w("resumed")])
    for r in range(RANKS):
        tc.compare_params(tc.load_params(w("resumed", f"rank{r}")),
                          tc.load_params(w("straight", f"rank{r}")),
                          f"rank {r}: resumed from step {step} vs uninterrupted", exact=True)
    print(f"PASS: {args.mode}: rank {VICTIM} of {RANKS} killed after checkpoint {step}: the launcher named it "
          f"and no rank was left; resuming gave bit-identical weights")


if __name__ == "__main__":
    tc.main_wrapper(main)
