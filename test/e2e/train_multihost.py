"""Training across two hosts: ranks in two network namespaces joined by a veth pair.

The test makes two "hosts": network namespaces A and B, each with loopback and one end of a veth
pair (A: 10.231.0.1/24, B: 10.231.0.2/24), and removes them afterwards, also when it fails. Four
ranks are started by hand with torchrun's variables, two per host: ranks 0 and 1 in A (rank 0
hosts the c10d TCPStore), ranks 2 and 3 in B, every rank with MASTER_ADDR=10.231.0.1,
LOCAL_WORLD_SIZE=2 and GLOO_SOCKET_IFNAME naming its host's veth. B cannot reach A's loopback,
so everything between the hosts goes over the veth; its byte counters must show at least the
gradient exchange (each direction >= STEPS x the parameter bytes: every step each side needs the
other side's share of every summed gradient, or of every gathered parameter under fsdp).
Required:
  - dp and fsdp (CSNN, dp=4, 5 SGD steps of a global batch of 8): per-step losses and the final
    weights within 1e-4 relative of the PyTorch reference trainer in one process, the loss and
    the weights moving, every rank's weights bit-identical to rank 0's; the reference's neuron
    layers fire at 5-50 % on the first batch;
  - a long dp run whose host B ranks are SIGKILLed mid-training: A's ranks exit non-zero within
    --dist-timeout + SLACK seconds of the kill, each with exactly one `error:` line naming a lost
    peer on host B (rank 2 or 3) and its own rank once, and no rank process is left;
  - the same run with host B cut off (its veth down: no reset arrives, only the timeout tells):
    A's ranks as above; B's ranks, cut off from the store on rank 0 as well, exit within
    2 x --dist-timeout + SLACK, each naming rank 0 (host A); no process left.
Skips (exit 77) with one line when this machine refuses network namespaces or veth pairs (not
root, no CAP_NET_ADMIN, no `ip`, a container without the rights).

Usage: train_multihost.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import train_common as tc  # first: it sets the BLAS threads before torch loads
import torch  # noqa: I100
import train_dp as tdp
import train_tp as ttp
import train_trajectory as tt

SKIP = 77
T, B, STEPS, RANKS = 4, 8, 5, 4
ADDR = {"A": "10.231.0.1", "B": "10.231.0.2"}
HOST_OF = {0: "A", 1: "A", 2: "B", 3: "B"}
# Fixed: the port lives in this run's own namespace A, so parallel runs cannot collide.
PORT = 29531
DIST_TIMEOUT = 10
# After the loss: a survivor's next collective fails at once (the dead ranks' sockets are closed
# by B's kernel) or after --dist-timeout; then 3 heartbeat intervals (timeout / 20 each) for the
# diagnosis, and the Gloo group's teardown. The slack covers a loaded 2-core machine.
SLACK = 10
EXIT_BOUND = DIST_TIMEOUT + SLACK
# Ranks cut off from the store (on rank 0) wait out their collective, then one store read.
CUT_OFF_BOUND = 2 * DIST_TIMEOUT + SLACK


class Skip(Exception):
    pass


# `ip` errors that mean "this machine does not let us", not "the test is wrong".
REFUSED = ("Operation not permitted", "Permission denied", "Operation not supported",
           "Unknown device type", "not supported", "Read-only file system")


class Hosts:
    """Namespaces A and B joined by a veth pair, named after this process so that parallel
    runs do not collide; `close` removes whatever was made (and kills what runs inside)."""

    def __init__(self):
        pid = os.getpid()
        self.ns = {h: f"snnmh{h}{pid}" for h in "AB"}
        self.dev = {h: f"smh{h}{pid}"[:15] for h in "AB"}
        self.made = []

    def ip(self, *args, refusal_skips=False):
        proc = subprocess.run(["ip", *args], capture_output=True, text=True)
        if proc.returncode != 0:
            msg = f"ip {' '.join(args)}: {proc.stderr.strip() or f'exit {proc.returncode}'}"
            if refusal_skips and any(r in proc.stderr for r in REFUSED):
                raise Skip(msg)
            raise tc.Failure(msg)
        return proc.stdout

    def open(self):
        if shutil.which("ip") is None:
            raise Skip("no `ip` command (iproute2) to make network namespaces")
        for h in "AB":
            self.ip("netns", "add", self.ns[h], refusal_skips=True)
            self.made.append(("netns", self.ns[h]))
        self.ip("link", "add", self.dev["A"], "type", "veth", "peer", "name", self.dev["B"],
                refusal_skips=True)
        self.made.append(("link", self.dev["A"]))
        for h in "AB":
            self.ip("link", "set", self.dev[h], "netns", self.ns[h], refusal_skips=True)
            self.ip("-n", self.ns[h], "addr", "add", f"{ADDR[h]}/24", "dev", self.dev[h])
            self.ip("-n", self.ns[h], "link", "set", "lo", "up")
            self.ip("-n", self.ns[h], "link", "set", self.dev[h], "up")
        print(f"hosts: {self.ns['A']} ({self.dev['A']} {ADDR['A']}) <-> {self.ns['B']} "
              f"({self.dev['B']} {ADDR['B']})", flush=True)

    def close(self):
        for kind, name in reversed(self.made):
            if kind == "netns":
                self.kill_inside(name)
                subprocess.run(["ip", "netns", "del", name], capture_output=True)
            else:  # gone with its namespace once moved; deleted here if it never was
                subprocess.run(["ip", "link", "del", name], capture_output=True)
        self.made = []

    def kill_inside(self, ns):
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for pid in pids.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass

    def pids_inside(self, h):
        return self.ip("netns", "pids", self.ns[h]).split()

    def veth_bytes(self, h):
        """(rx, tx) bytes of host h's veth end."""
        info = json.loads(self.ip("-j", "-s", "-n", self.ns[h], "link", "show", "dev",
                                  self.dev[h]))[0]["stats64"]
        return info["rx"]["bytes"], info["tx"]["bytes"]


def start_ranks(hosts, cmd, log_dir):
    """The four ranks, each in its host's namespace, with torchrun's variables (no agent store:
    rank 0 hosts the TCPStore on A's address). Returns {rank: Popen}; stderr goes to a file."""
    procs = {}
    for rank in range(RANKS):
        h = HOST_OF[rank]
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(RANKS), LOCAL_RANK=str(rank % 2),
                   LOCAL_WORLD_SIZE="2", GROUP_RANK="0" if h == "A" else "1",
                   MASTER_ADDR=ADDR["A"], MASTER_PORT=str(PORT),
                   GLOO_SOCKET_IFNAME=hosts.dev[h])
        for name in ("TORCHELASTIC_USE_AGENT_STORE", "SNN_JOB_SECRET", "SNN_LAUNCHER_PID"):
            env.pop(name, None)
        err = open(os.path.join(log_dir, f"stderr.rank{rank}"), "w")
        procs[rank] = subprocess.Popen(["ip", "netns", "exec", hosts.ns[h], *map(str, cmd)],
                                       env=env, stdout=subprocess.DEVNULL, stderr=err)
        err.close()
    print(f"+ [4 ranks, 2 per host] {' '.join(map(str, cmd))}", flush=True)
    return procs


def stderr_of(log_dir, rank):
    with open(os.path.join(log_dir, f"stderr.rank{rank}")) as f:
        return f.read()


def wait_all(procs, log_dir, timeout):
    deadline = time.monotonic() + timeout
    for rank, proc in procs.items():
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            for p in procs.values():
                p.kill()
            raise tc.Failure(f"rank {rank} did not finish within {timeout} s")
    bad = {r: p.returncode for r, p in procs.items() if p.returncode != 0}
    if bad:
        for r in bad:
            sys.stdout.write(f"rank {r} stderr:\n{tc._tail(stderr_of(log_dir, r))}")
        raise tc.Failure(f"ranks exited with {bad}")


def reference_run(case, x, y, static):
    """The reference trainer in one process on the global batches (train_tp's, which checks
    the firing rates and that the loss and weights move), and the model's parameter bytes."""
    res, c, trained, count, model = ttp.reference_training(case, x, y, static, "reference")
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return res, c, trained, count, param_bytes


def train_across(args, hosts, case, art, ref, mode):
    """5 steps on 4 ranks over the two hosts, compared with the reference; returns the worst
    relative error and the veth bytes (rx, tx) of host B during the run."""
    res, c, trained, count, param_bytes = ref
    _, _, static = ttp.MODELS["csnn"]
    d = tc.fresh_dir(os.path.join(args.work, mode))
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    cmd = [os.path.join(args.bin, "snn-run"), "train", art, "--data-npy", args.data,
           *tt.cli_flags(c), "--log", log, "--save-params", params, "--threads", 1,
           "--progress", "none", "--dist-timeout", 60]
    if static:
        cmd += ["--repeat-time", T]
    before = hosts.veth_bytes("B")
    wait_all(start_ranks(hosts, cmd, d), d, timeout=240)
    after = hosts.veth_bytes("B")
    moved = (after[0] - before[0], after[1] - before[1])
    what = f"csnn/{mode} across 2 hosts"
    steps, _ = tc.read_log(log)
    tt.check_steps(what, steps, res, c, count)
    first = tdp.check_replicas(params, RANKS, what)
    worst = tc.compare_params(first, trained, f"{what} final weights")
    with open(os.path.join(art, "manifest.json")) as f:
        prediction = json.load(f)["plan"]["prediction"]
    tdp.check_rank_logs(log, RANKS, mode, what, prediction)
    if min(moved) < STEPS * param_bytes:
        raise tc.Failure(f"{what}: host B's veth carried rx {moved[0]} / tx {moved[1]} bytes, "
                         f"less than {STEPS} steps x {param_bytes} parameter bytes: the ranks "
                         f"did not talk over it")
    print(f"{what}: ranks identical; worst rel err vs reference {worst:.3g}; host B's veth "
          f"carried rx {moved[0]} / tx {moved[1]} bytes ({param_bytes} parameter bytes)")
    return worst, moved


# The error names the rank and the peers it lost, after the node that was running (snn-run).
LOST = re.compile(r"rank (\d+): lost peer \(ranks? ([\d, ]+)\?\)")


def started_training(log):
    try:
        steps, _ = tc.read_log(log)
    except tc.Failure:
        return False
    return len(steps) >= 2


def lose_host_b(args, hosts, art, how):
    """A long dp run; once rank 0 has logged 2 steps, host B is lost: `kill` SIGKILLs its ranks
    (B's kernel then resets their connections), `cut` takes B's veth down (a partition: nothing
    arrives, A's ranks learn only from the timeout). Returns {rank of A: seconds to its exit}."""
    d = tc.fresh_dir(os.path.join(args.work, how))
    log = os.path.join(d, "log.jsonl")
    cmd = [os.path.join(args.bin, "snn-run"), "train", art, "--data-npy", args.data,
           "--steps", 100000, "--batch-size", B, "--lr", "0.01", "--threads", 1,
           "--progress", "none", "--dist-timeout", DIST_TIMEOUT, "--log", log,
           "--repeat-time", T]
    procs = start_ranks(hosts, cmd, d)
    try:
        deadline = time.monotonic() + 120
        while not started_training(log):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                raise tc.Failure(f"{how}: the long run did not log 2 steps within 120 s, or a "
                                 f"rank ended early")
            time.sleep(0.05)
        if how == "kill":
            for rank in (2, 3):
                os.kill(procs[rank].pid, signal.SIGKILL)
        else:
            hosts.ip("-n", hosts.ns["B"], "link", "set", hosts.dev["B"], "down")
        lost_at = time.monotonic()
        exits = {}
        for rank in (0, 1) if how == "kill" else range(RANKS):
            try:
                procs[rank].wait(timeout=CUT_OFF_BOUND + 30)
            except subprocess.TimeoutExpired:
                raise tc.Failure(f"{how}: rank {rank} still runs {CUT_OFF_BOUND + 30} s after "
                                 f"host B was lost") from None
            exits[rank] = time.monotonic() - lost_at
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
        if how == "cut":
            hosts.ip("-n", hosts.ns["B"], "link", "set", hosts.dev["B"], "up")
    check_survivors(hosts, procs, exits, d, how)
    return exits


def check_survivors(hosts, procs, exits, d, how):
    """A's ranks (and under `cut` B's too) exit in bound with one error line naming the lost
    ranks on the other host; no process is left on either host."""
    check_exits(procs, exits, d, how, (0, 1), "B", EXIT_BOUND)
    if how == "cut":
        # B is cut off from the store on rank 0 too: its diagnosis waits out one more timeout.
        check_exits(procs, exits, d, how, (2, 3), "A", CUT_OFF_BOUND)
    left = {h: hosts.pids_inside(h) for h in "AB"}
    if any(left.values()):
        raise tc.Failure(f"{how}: processes left in the namespaces: {left}")


def check_exits(procs, exits, d, how, ranks, other, bound):
    for rank in ranks:
        err = stderr_of(d, rank)
        code = procs[rank].returncode
        sys.stdout.write(f"{how}: rank {rank} (host {HOST_OF[rank]}) exited with {code} after "
                         f"{exits[rank]:.2f} s:\n{tc._tail(err, 5)}")
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        if code is None or code <= 0:
            raise tc.Failure(f"{how}: rank {rank} exited with {code}, expected an error exit")
        if len(errors) != 1:
            raise tc.Failure(f"{how}: rank {rank}: expected one error line, got {errors}")
        m = LOST.search(errors[0])
        lost = [int(r) for r in m.group(2).split(", ")] if m else []
        if not m or int(m.group(1)) != rank or not lost or \
                any(HOST_OF[r] != other for r in lost):
            raise tc.Failure(f"{how}: rank {rank}: the error line does not name a lost peer on "
                             f"host {other}: {errors[0]}")
        if errors[0].count(f"rank {rank}: ") != 1:
            raise tc.Failure(f"{how}: rank {rank}: the error line names the rank more than "
                             f"once: {errors[0]}")
        if exits[rank] > bound:
            raise tc.Failure(f"{how}: rank {rank} took {exits[rank]:.1f} s to exit (bound "
                             f"{bound} s)")


def remove_stale_hosts():
    """Namespaces of earlier runs that were killed before they could clean up (a ctest
    timeout): named snnmh{A,B}PID, removed when PID is gone."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    for name in re.findall(r"^snnmh[AB](\d+)", listed.stdout, re.M):
        pid = int(name)
        try:
            os.kill(pid, 0)
            continue
        except ProcessLookupError:
            pass
        for h in "AB":
            Hosts().kill_inside(f"snnmh{h}{pid}")
            subprocess.run(["ip", "netns", "del", f"snnmh{h}{pid}"], capture_output=True)


def make_hosts():
    """Hosts, opened; Skip when this machine refuses namespaces."""
    if shutil.which("ip") is not None:
        remove_stale_hosts()
    hosts = Hosts()
    try:
        hosts.open()
    except BaseException:
        hosts.close()
        raise
    return hosts


def run_all(args, hosts):
    kw, shape, static = ttp.MODELS["csnn"]
    case, _ = tc.make_artifact(args.bin, args.work, "csnn", T=T, N=B, **kw)
    x, y = ttp.training_data(args.work, shape, static, S=B * STEPS)
    args.data = f"{x},{y}"
    ref = reference_run(case, x, y, static)
    summary = []
    for mode in ("dp", "fsdp"):
        art = tdp.compile_dp(args.bin, case, args.work, RANKS, mode)
        worst, moved = train_across(args, hosts, case, art, ref, mode)
        summary.append(f"{mode} (rel err {worst:.2g}, B's veth rx/tx {moved[0]}/{moved[1]} B)")
    for how in ("kill", "cut"):
        exits = lose_host_b(args, hosts, os.path.join(args.work, "art_dp4"), how)
        summary.append(f"host B {'killed' if how == 'kill' else 'cut off'}: ranks exited "
                       f"after " + ", ".join(f"{r}: {s:.2f} s" for r, s in exits.items()))
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    torch.set_num_threads(2)
    args.work = tc.fresh_dir(args.work)
    # SIGTERM (ctest, CI) unwinds through the `finally` that removes the namespaces.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        hosts = make_hosts()
    except Skip as e:
        print(f"SKIP: this machine refuses network namespaces or veth pairs ({e}); the "
              f"two-host test needs root or CAP_NET_ADMIN and iproute2", flush=True)
        sys.exit(SKIP)
    try:
        summary = run_all(args, hosts)
    finally:
        hosts.close()
    left = [n for n in hosts.ns.values()
            if n in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                   text=True).stdout.split()]
    if left:
        raise tc.Failure(f"namespaces not removed: {left}")
    print("PASS: dp and fsdp across two network namespaces equal one process; a lost host is "
          "named: " + "; ".join(summary))


if __name__ == "__main__":
    tc.main_wrapper(main)
