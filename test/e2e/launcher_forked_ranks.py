"""snn-run --nproc's ranks are forks of the launcher that run on without exec, set up as exec
would set them up.

A CSNN trains on 2 ranks (dp=2) under `snn-run --nproc 2 train ... --steps 2000`. While it
runs, required of each rank:
  - a child of the launcher named "snn-run rank R" (R = 0, 1) whose command line is the
    launcher's (a fork: an exec'd rank's has no --nproc);
  - it holds none of the launcher's listening sockets (the store's: close-on-exec descriptors
    are closed in the fork, as exec closes them);
  - it catches none of SIGHUP, SIGINT and SIGTERM (the launcher forwards them with its own
    handlers; a fork has them reset to the defaults, as exec resets them).
Then SIGTERM to the launcher: it forwards it, the ranks end at once (well inside the 5 s grace
period after which it would SIGKILL them), and it exits 143 with its "interrupted by SIGTERM"
line. A run of 3 steps then exits 0 with its loss logged.

Usage: launcher_forked_ranks.py --bin BUILD/bin --work DIR
"""
import os
import signal
import subprocess
import time

import train_common as tc

RANKS, B, T = 2, 8, 4
CAUGHT_BY_THE_LAUNCHER = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)


def socket_inodes(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def listening_inodes():
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if os.path.exists(table):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A":  # LISTEN
                        inodes.add(fields[9])
    return inodes


def caught_signals(pid):
    with open(f"/proc/{pid}/status") as f:
        mask = int(next(l for l in f if l.startswith("SigCgt:")).split()[1], 16)
    return {s for s in CAUGHT_BY_THE_LAUNCHER if mask >> (int(s) - 1) & 1}


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read()


def check_ranks(proc):
    deadline = time.monotonic() + 60
    ranks = {}
    while len(ranks) < RANKS and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        ranks = tc.rank_processes(proc.pid)
    if sorted(ranks) != list(range(RANKS)):
        raise tc.Failure(f"the launcher's children named 'snn-run rank R': {ranks}")
    store = socket_inodes(proc.pid) & listening_inodes()
    if not store:
        raise tc.Failure("the launcher listens on no socket (its store)")
    for rank, pid in sorted(ranks.items()):
        if cmdline(pid) != cmdline(proc.pid):
            raise tc.Failure(f"rank {rank}'s command line is not the launcher's: not a fork")
        if socket_inodes(pid) & store:
            raise tc.Failure(f"rank {rank} holds the launcher's listening socket")
        caught = caught_signals(pid)
        if caught:
            raise tc.Failure(f"rank {rank} catches {sorted(s.name for s in caught)}, "
                             "the launcher's handlers")
        print(f"rank {rank}: pid {pid}, a fork of the launcher, no store socket, "
              "default SIGHUP/SIGINT/SIGTERM", flush=True)


def main():
    bin_dir, work = tc.bin_and_work(__doc__)
    case, _ = tc.make_artifact(bin_dir, work, "csnn", T=T, N=B, width=8)
    art = os.path.join(work, "art_dp")
    tc.run([os.path.join(bin_dir, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art,
            "--batch-size", B, "--mode", "dp", "--topology", f"dp={RANKS}"])
    data = tc.static_images(os.path.join(work, "x.npy"), os.path.join(work, "y.npy"), 4 * B,
                            [1, 28, 28], seed=5)
    train = [os.path.join(bin_dir, "snn-run"), "--nproc", RANKS, "train", art, "--data-npy",
             data, "--batch-size", B, "--lr", "0.01", "--loss", "ce", "--repeat-time", T,
             "--threads", 1, "--progress", "none"]
    proc = subprocess.Popen([str(a) for a in train + ["--steps", 2000]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        check_ranks(proc)
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    if proc.returncode != 128 + signal.SIGTERM or "interrupted by SIGTERM" not in err:
        raise tc.Failure(f"SIGTERM: exit {proc.returncode}, stderr:\n{err}")
    if took > 4:
        raise tc.Failure(f"the ranks took {took:.1f} s to end on SIGTERM (the grace period's "
                         "SIGKILL, not the signal's default action)")
    print(f"SIGTERM: forwarded, exit 143 after {took:.2f} s", flush=True)
    log = os.path.join(work, "log.jsonl")
    tc.run(train + ["--steps", 3, "--log", log])
    steps = [e for e in tc.read_jsonl(log) if e.get("event") == "step"]
    if len(steps) != 3:
        raise tc.Failure(f"{len(steps)} step events in {log}, expected 3")
    print("PASS", flush=True)


if __name__ == "__main__":
    tc.main_wrapper(main)
