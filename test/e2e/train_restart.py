"""Restarts: ranks killed mid-training come back by themselves and finish bit-identically.

A CSNN trains STEPS steps on 4 ranks, checkpointing every EVERY steps, under
  snn-run --nproc 4 --max-restarts 3 train ART ... --checkpoint DIR --resume
(--launcher torchrun: `torchrun --nproc_per_node 4 --max_restarts 3 --no_python snn-run train
...`, torchrun's own agent restarting the ranks). At 3 seeded random steps a seeded random rank
gets SIGKILL (found as the launcher's child named "snn-run rank r", or whose environment says
RANK=r under torchrun). Required:
  - the job exits 0 by itself; the snn-run launcher announced each restart naming the killed
    rank and the signal, and the first start said it had no checkpoint yet;
  - every rank's final parameters equal, bit for bit, those of the same command run without a
    fault (the data order, the RNG, the schedule position and the optimizer state all come back
    from the checkpoint);
  - the loss moved, and the model's neuron layers fire at 5-50 % (make_case's measurement).
--mode dp, fsdp (sharded checkpoints), or pp (dp=2 x pp=2, 1F1B: restarted to the same size).

Usage: train_restart.py --bin BUILD/bin --work DIR [--mode dp|fsdp|pp] [--launcher snn-run|torchrun]
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import train_common as tc

T, B, STEPS, EVERY, RANKS, KILLS = 4, 8, 200, 10, 4, 3
DIST_TIMEOUT = 20
LAYOUT = {"dp": ["--mode", "dp", "--topology", "dp=4"],
          "fsdp": ["--mode", "fsdp", "--topology", "dp=4"],
          "pp": ["--mode", "pp", "--topology", "dp=2,pp=2", "--pp-schedule", "1f1b",
                 "--pp-microbatches", "2"]}


def last_step(log):
    """(the step of the log's last step event, how many step events) — the log grows across
    restarts, a restarted run appending to it."""
    step, count = -1, 0
    try:
        with open(log) as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # a line being written
                if event.get("event") == "step":
                    step, count = event["step"], count + 1
    except OSError:
        pass
    return step, count


def run_with_kills(cmd, log, plan):
    """Runs `cmd`, SIGKILLing plan[i] = (step, rank) once the log passed that step after the
    previous kill; returns (exit code, stderr, the kills done)."""
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    done, seen, deadline = [], 0, time.time() + 600
    for step, rank in plan:
        while True:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                _, err = proc.communicate()
                raise tc.Failure(f"the job ended (exit {proc.returncode}) before the kill at "
                                 f"step {step}:\n{tc._tail(err)}")
            now, count = last_step(log)
            pids = tc.rank_processes(proc.pid)
            if now >= step and count > seen and rank in pids:
                os.kill(pids[rank], signal.SIGKILL)
                done.append((now, rank))
                print(f"killed rank {rank} (pid {pids[rank]}) at step {now}", flush=True)
                seen = count
                break
            time.sleep(0.003)
    try:
        _, err = proc.communicate(timeout=max(deadline - time.time(), 1))
    except subprocess.TimeoutExpired:
        proc.kill()
        raise tc.Failure("the job did not finish after its restarts")
    sys.stdout.write(tc._tail(err, 40))
    return proc.returncode, err, done


def check_restart_lines(err, kills, launcher):
    if launcher != "snn-run":
        return
    for n, (_, rank) in enumerate(kills, 1):
        want = f"restarting {RANKS} ranks (restart {n} of {KILLS})"
        line = next((l for l in err.splitlines() if want in l), None)
        if line is None:
            raise tc.Failure(f"the launcher did not announce restart {n} ('{want}')")
        if "signal 9 (SIGKILL)" not in line and "lost" not in line:
            raise tc.Failure(f"restart {n}'s line does not name the killed rank: {line}")
    if "no checkpoint in" not in err:
        raise tc.Failure("the first start did not say it had no checkpoint yet")





def launch(args, tail):
    if args.launcher == "torchrun":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", RANKS,
                # 1 (stdout): this torch's Std.from_str reads 0 and 3 (composite flags under
                # Python 3.11) as no setting at all, and then fails.
                "--redirects", "1", "--tee", "1",
                "--master_addr", "127.0.0.1", "--master_port", port, "--monitor_interval",
                "0.1", "--max_restarts", KILLS, "--no_python",
                os.path.join(args.bin, "snn-run"), *tail]
    return [os.path.join(args.bin, "snn-run"), "--nproc", RANKS, "--max-restarts", KILLS,
            *tail]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--mode", choices=sorted(LAYOUT), default="dp")
    p.add_argument("--launcher", choices=("snn-run", "torchrun"), default="snn-run")
    p.add_argument("--seed", type=int, default=3)
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    case, _ = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=8)
    art = os.path.join(work, f"art_{args.mode}")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art,
            "--batch-size", B, *LAYOUT[args.mode]])
    w = lambda *n: os.path.join(work, *n)  # noqa: E731
    data = tc.static_images(w("x.npy"), w("y.npy"), 6 * B, [1, 28, 28], seed=5)
    common = ["train", art, "--data-npy", data, "--steps", STEPS, "--batch-size", B,
              "--optimizer", "adam", "--lr", "0.002", "--loss", "ce", "--seed", 2,
              "--repeat-time", T, "--threads", 1, "--progress", "none",
              "--dist-timeout", DIST_TIMEOUT]
    tc.run([os.path.join(args.bin, "snn-run"), "--nproc", RANKS, *common,
            "--save-params", w("straight")])
    rng = random.Random(args.seed)
    kill_steps = sorted(rng.sample(range(2 * EVERY, STEPS - 3 * EVERY, EVERY + 3), KILLS))
    plan = [(s, rng.randrange(RANKS)) for s in kill_steps]
    rc, err, kills = run_with_kills(
        launch(args, common + ["--checkpoint", w("ckpt"), "--checkpoint-every", EVERY,
                               "--resume", "--log", w("log.jsonl"),
                               "--save-params", w("restarted")]),
        w("log.jsonl"), plan)
    if rc != 0:
        raise tc.Failure(f"the job exited {rc} after {len(kills)} kills")
    check_restart_lines(err, kills, args.launcher)
    rates = tc.check_fires_and_moves(case, [w("log.jsonl")])
    for r in range(RANKS):
        tc.compare_params(tc.load_params(w("restarted", f"rank{r}")),
                          tc.load_params(w("straight", f"rank{r}")),
                          f"rank {r}: restarted vs uninterrupted", exact=True)
    print(f"PASS: {args.mode} under {args.launcher}: killed {kills} (step, rank); the job "
          f"restarted itself {len(kills)} times and ended bit-identical to the run without "
          f"faults; firing rates {sorted(round(r, 3) for r in rates.values())}")


if __name__ == "__main__":
    tc.main_wrapper(main)
