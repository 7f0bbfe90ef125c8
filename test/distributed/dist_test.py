#!/usr/bin/env python3
"""Multi-process tests of the distributed layer (ctest names distributed.*).

Each case runs snn-dist-check (test/distributed/snn-dist-check.cpp) on real
ranks over loopback and checks exit codes, the one-line error messages,
timing bounds and that no rank process is left behind. Only the standard
library is needed, except for the torchrun case (skipped, exit 77, without
torch).

    dist_test.py --tool build/bin/snn-dist-check --case NAME
"""

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid

SKIP = 77


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Run:
    def __init__(self, returncode, stdout, stderr, seconds):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds

    def __str__(self):
        return "exit %s after %.1f s\n--- stdout\n%s--- stderr\n%s" % (
            self.returncode, self.seconds, self.stdout, self.stderr)


def run(args, env=None, timeout=60):
    start = time.monotonic()
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=timeout)
    return Run(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


def new_marker():
    return "snnmark" + uuid.uuid4().hex[:12]


def leftovers(marker):
    """Processes whose command line holds the marker (none should remain)."""
    found = subprocess.run(["pgrep", "-f", marker], stdout=subprocess.PIPE, text=True)
    return [int(p) for p in found.stdout.split() if int(p) != os.getpid()]


def expect_no_leftovers(marker, wait=2.0):
    deadline = time.monotonic() + wait
    while True:
        pids = leftovers(marker)
        if not pids:
            return
        if time.monotonic() > deadline:
            for pid in pids:  # clean up after a failed check
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            raise Failure("processes left behind: %s" % pids)
        time.sleep(0.1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(rank, world, port, extra=None):
    env = dict(os.environ)
    for name in ("TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT",
                 "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        env.pop(name, None)
    env.update({"RANK": str(rank), "WORLD_SIZE": str(world),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    env.update(extra or {})
    return env


# --- cases -------------------------------------------------------------------

def case_launcher_success(tool):
    """All ranks succeed -> 0; every rank ran; nothing left behind."""
    marker = new_marker()
    r = run([tool, "--nproc", "2", "collectives", "--marker", marker])
    check(r.returncode == 0, "expected exit 0\n%s" % r)
    for rank in range(2):
        check("rank %d: collectives ok" % rank in r.stdout, "rank %d missing\n%s" % (rank, r))
    check(r.stderr == "", "expected no stderr\n%s" % r)
    expect_no_leftovers(marker)


def case_launcher_exit_code(tool):
    """One rank exits 3 while the others are busy: the launcher stops them."""
    marker = new_marker()
    r = run([tool, "--nproc", "4", "exit", "--rank", "2", "--code", "3",
             "--grace-ms", "1000", "--marker", marker])
    check(r.returncode == 3, "expected the rank's exit code 3\n%s" % r)
    check("error: rank 2 exited with code 3\n" in r.stderr, "missing launcher message\n%s" % r)
    check(r.stderr.count("error:") == 1, "expected one error line\n%s" % r)
    # Busy ranks sleep 60 s: only the launcher (1 s grace, SIGTERM) ends them.
    check(r.seconds < 15, "took %.1f s\n%s" % (r.seconds, r))
    expect_no_leftovers(marker)


def lost_peer_lines(stderr, lost):
    pattern = re.compile(r"^error: rank (\d+): lost peer \(rank %d\?\) during (\w+)" % lost, re.M)
    return {int(m.group(1)): m.group(2) for m in pattern.finditer(stderr)}


def case_kill_mid_collective(tool):
    """Rank 2 of 4 is SIGKILLed inside an all_reduce loop: the others name it."""
    marker = new_marker()
    r = run([tool, "--nproc", "4", "kill", "--rank", "2", "--iterations", "20",
             "--timeout-ms", "5000", "--marker", marker])
    check(r.returncode == 128 + 9, "expected 137\n%s" % r)
    check("error: rank 2 killed by signal 9 (SIGKILL)\n" in r.stderr, "launcher message\n%s" % r)
    lines = lost_peer_lines(r.stderr, 2)
    check(sorted(lines) == [0, 1, 3], "every survivor must name rank 2\n%s" % r)
    check(set(lines.values()) == {"all_reduce"}, "operation\n%s" % r)
    check(r.seconds < 5 + 8, "took %.1f s\n%s" % (r.seconds, r))
    expect_no_leftovers(marker)


def case_kill_rank0(tool):
    """Rank 0 dies: the store lives in the launcher, so rank 1 can name it."""
    marker = new_marker()
    r = run([tool, "--nproc", "2", "kill", "--rank", "0", "--iterations", "5",
             "--timeout-ms", "5000", "--marker", marker])
    check(r.returncode == 137, "expected 137\n%s" % r)
    check(sorted(lost_peer_lines(r.stderr, 0)) == [1], "rank 1 must name rank 0\n%s" % r)
    check("error: rank 0 killed by signal 9 (SIGKILL)\n" in r.stderr, "launcher\n%s" % r)
    expect_no_leftovers(marker)


def case_hang(tool):
    """Rank 3 stays alive but never reaches the all_reduce: the others time
    out (2 s here), name it, and the launcher stops it."""
    marker = new_marker()
    r = run([tool, "--nproc", "4", "hang", "--rank", "3", "--timeout-ms", "2000",
             "--grace-ms", "500", "--marker", marker])
    check(r.returncode != 0, "expected a failure\n%s" % r)
    lines = lost_peer_lines(r.stderr, 3)
    check(sorted(lines) == [0, 1, 2], "every other rank must name rank 3\n%s" % r)
    check(r.stderr.count("did not reach this collective") == 3, "hang diagnosis\n%s" % r)
    check("error: rank 3 stopped answering (ranks 0, 1, 2 lost it in a collective or transfer); "
          "stopped by the launcher\n" in r.stderr, "launcher message\n%s" % r)
    check(r.seconds < 2 + 10, "took %.1f s\n%s" % (r.seconds, r))
    expect_no_leftovers(marker)


def case_size_mismatch(tool):
    """Rank 1's all_reduce is longer than rank 0's: Gloo's transport thread throws on the
    message that does not fit. The rank it throws on ends with one error line and exit code
    1, never SIGABRT ("terminate called ..."), and no rank dies of SIGPIPE writing to it."""
    marker = new_marker()
    r = run([tool, "--nproc", "2", "size_mismatch", "--rank", "1", "--timeout-ms", "5000",
             "--marker", marker])
    check(r.returncode == 1, "expected exit code 1\n%s" % r)
    check(re.search(r"^error: rank \d: a thread of this rank failed .*: ", r.stderr, re.M),
          "the thread's error line\n%s" % r)
    for word in ("terminate called", "signal", "SIGABRT", "SIGPIPE"):
        check(word not in r.stderr, "%r in the output\n%s" % (word, r))
    expect_no_leftovers(marker)


def case_p2p_kill(tool):
    """Rank 1 of 3 is SIGKILLed while the others wait to receive from it: each names it
    within the timeout (5 s here), in one line."""
    marker = new_marker()
    r = run([tool, "--nproc", "3", "p2p_kill", "--rank", "1", "--timeout-ms", "5000",
             "--marker", marker])
    check(r.returncode == 137, "expected 137\n%s" % r)
    check("error: rank 1 killed by signal 9 (SIGKILL)\n" in r.stderr, "launcher\n%s" % r)
    for rank in (0, 2):
        line = "error: rank %d: lost peer rank 1 during recv from rank 1 (group world, tag 5)" \
            % rank
        check(line in r.stderr, "rank %d must name rank 1\n%s" % (rank, r))
    check(r.seconds < 5 + 8, "took %.1f s\n%s" % (r.seconds, r))
    expect_no_leftovers(marker)


def case_p2p_hang(tool):
    """Rank 1 stays alive but never sends: rank 0 times out (2 s), names it as alive without
    the matching call, and the launcher stops it."""
    marker = new_marker()
    r = run([tool, "--nproc", "2", "p2p_hang", "--rank", "1", "--timeout-ms", "2000",
             "--grace-ms", "500", "--marker", marker])
    check(r.returncode != 0, "expected a failure\n%s" % r)
    check("error: rank 0: lost peer rank 1 during recv from rank 1 (group world, tag 5)"
          in r.stderr, "rank 0 must name rank 1\n%s" % r)
    check("rank 1 is alive but did not post the matching send or recv" in r.stderr,
          "hang diagnosis\n%s" % r)
    check("error: rank 1 stopped answering" in r.stderr, "launcher message\n%s" % r)
    check(r.seconds < 2 + 10, "took %.1f s\n%s" % (r.seconds, r))
    expect_no_leftovers(marker)


def case_port_in_use(tool):
    """--master-port on a port in use, and MASTER_PORT in use for a rank 0
    that hosts the store: clear errors, nothing started."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        marker = new_marker()
        r = run([tool, "--nproc", "2", "--master-port", str(port), "collectives",
                 "--marker", marker])
        check(r.returncode != 0, "expected a failure\n%s" % r)
        check(r.stderr == "error: --master-port %d: port %d is already in use on this "
              "host (another job?); choose another port, or leave --master-port out to "
              "use a free one\n" % (port, port), "message\n%s" % r)
        check(r.seconds < 5, "took %.1f s" % r.seconds)
        expect_no_leftovers(marker)
        r = run([tool, "collectives"], env=rank_env(0, 2, port))
        check(r.returncode != 0, "expected a failure\n%s" % r)
        check(r.stderr == "error: rank 0: cannot start the rendezvous store: port %d "
              "(MASTER_PORT) is already in use on this host\n" % port, "message\n%s" % r)


def case_bad_launch(tool):
    """Missing or invalid torchrun variables, bad launcher flags, and an
    --nproc that does not match the artifact's mesh."""
    env = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        env.pop(name, None)
    r = run([tool, "collectives"], env=env)
    check(r.returncode == 1, "expected 1\n%s" % r)
    check(r.stderr.startswith("error: distributed launch: RANK, WORLD_SIZE, MASTER_ADDR, "
                              "MASTER_PORT are not set: start the ranks with `snn-run "
                              "--nproc N ...` or with torchrun"), "message\n%s" % r)
    check(r.stderr.count("\n") == 1, "one line\n%s" % r)
    r = run([tool, "collectives"], env=rank_env(0, 2, 1234, {"RANK": "two"}))
    check(r.returncode == 1 and r.stderr == "error: RANK='two' is not an integer (0 to 1 "
          "for WORLD_SIZE=2)\n", "bad RANK\n%s" % r)
    # (Every other invalid value: distributed.unit, Environment.*.)
    r = run([tool, "--nproc", "0", "collectives"])
    check(r.returncode == 1 and r.stderr == "error: --nproc 0: expected a number of "
          "ranks, 1 to 4096\n", "--nproc 0\n%s" % r)
    r = run([tool, "--master-port", "1234", "collectives"])
    check(r.returncode == 1 and "--master-port needs --nproc" in r.stderr, "%s" % r)
    marker = new_marker()
    r = run([tool, "--nproc", "2", "mesh", "--axes", "dp,tp", "--shape", "2,2",
             "--marker", marker])
    check(r.returncode == 1, "expected 1\n%s" % r)
    want = ("error: the artifact's mesh [2, 2] (axes dp, tp) has 4 ranks but this run "
            "has 2 (--nproc / WORLD_SIZE must be 4)\n")
    check(r.stderr.count(want) == 2, "each rank reports the mismatch\n%s" % r)
    expect_no_leftovers(marker)


def case_rendezvous_timeout(tool):
    """Only rank 0 of 2 starts: it names the rank that never joined."""
    r = run([tool, "collectives", "--timeout-ms", "1500"], env=rank_env(0, 2, free_port()))
    check(r.returncode == 1, "expected 1\n%s" % r)
    check(re.search(r"^error: rank 0: rendezvous at 127\.0\.0\.1:\d+ timed out after 1\.5 s: "
                    r"rank 1 of WORLD_SIZE=2 did not join\n$", r.stderr), "message\n%s" % r)
    check(r.seconds < 10, "took %.1f s" % r.seconds)


def case_signals(tool):
    """Ctrl-C reaches the ranks through the launcher; a SIGKILLed launcher
    takes its ranks with it (PR_SET_PDEATHSIG)."""
    marker = new_marker()
    proc = subprocess.Popen([tool, "--nproc", "2", "sleep", "--grace-ms", "3000",
                             "--marker", marker],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while len(leftovers(marker)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    check(len(leftovers(marker)) == 3, "launcher and 2 ranks should be running")
    time.sleep(0.5)
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    took = time.monotonic() - start
    check(proc.returncode == 130, "expected 130 after SIGINT, got %s\n%s" % (proc.returncode, err))
    check(err == "error: interrupted by SIGINT; stopped 2 ranks\n", "message: %r" % err)
    check(took < 3, "SIGINT took %.1f s to stop the ranks" % took)
    expect_no_leftovers(marker)

    marker = new_marker()
    proc = subprocess.Popen([tool, "--nproc", "2", "sleep", "--marker", marker],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while len(leftovers(marker)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    check(len(leftovers(marker)) == 3, "launcher and 2 ranks should be running")
    proc.kill()
    proc.wait()
    expect_no_leftovers(marker, wait=3.0)


def case_manual_environment(tool):
    """Ranks started by hand with the torchrun variables and no agent store:
    rank 0 hosts the store."""
    port = free_port()
    procs = [subprocess.Popen([tool, "collectives", "mesh", "--timeout-ms", "20000"],
                              env=rank_env(rank, 2, port), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for rank in range(2)]
    for rank, proc in enumerate(procs):
        out, err = proc.communicate(timeout=60)
        check(proc.returncode == 0, "rank %d: exit %s\n%s%s" % (rank, proc.returncode, out, err))
        check("rank %d: mesh ok" % rank in out, "rank %d output\n%s" % (rank, out))


def case_torchrun(tool):
    """The real torchrun (agent store, /worker/attempt_0 prefix)."""
    python = os.environ.get("SNN_PYTHON", "/usr/bin/python3")
    probe = subprocess.run([python, "-c", "import torch.distributed.run"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        print("torch.distributed.run is not importable: skipped")
        sys.exit(SKIP)
    env = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    # --redirects/--tee 1: torch 1.13's default "0" fails to parse on Python
    # 3.11 (IntFlag iteration changed).
    r = run([python, "-m", "torch.distributed.run", "--nproc_per_node", "2",
             "--master_port", str(free_port()), "--monitor_interval", "0.1",
             "--redirects", "1", "--tee", "1", "--no_python", tool,
             "collectives", "reducer"], env=env, timeout=120)
    check(r.returncode == 0, "torchrun failed\n%s" % r)
    for rank in range(2):
        check("rank %d: reducer ok" % rank in r.stdout, "rank %d\n%s" % (rank, r))


# --- the launcher's store: loopback, job secret, launcher watch -------------

def start_sleeping_job(extra_args=()):
    """A launcher with 2 ranks in the "sleep" scenario: (proc, marker, rank pids)."""
    marker = new_marker()
    proc = subprocess.Popen([tool_path[0], "--nproc", "2", "sleep", "--marker", marker]
                            + list(extra_args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while len(leftovers(marker)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    ranks = [pid for pid in leftovers(marker) if pid != proc.pid]
    check(len(ranks) == 2, "launcher and 2 ranks should be running")
    return proc, marker, ranks


def process_environment(pid):
    with open("/proc/%d/environ" % pid, "rb") as f:
        entries = f.read().split(b"\0")
    return dict(e.decode().split("=", 1) for e in entries if b"=" in e)


def store_frame(code, items):
    """One message of the store's wire format (StoreWire.h)."""
    body = bytes([code]) + len(items).to_bytes(4, "big")
    for item in items:
        body += len(item).to_bytes(4, "big") + item
    return len(body).to_bytes(4, "big") + body


def store_call(sock, code, items):
    sock.sendall(store_frame(code, items))
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            check(chunk, "the store closed the connection")
            data += chunk
        return data
    body = exactly(int.from_bytes(exactly(4), "big"))
    count, at, items = int.from_bytes(body[1:5], "big"), 5, []
    for _ in range(count):
        size = int.from_bytes(body[at:at + 4], "big")
        items.append(body[at + 4:at + 4 + size])
        at += 4 + size
    return body[0], items


def refused(address, port, first_bytes):
    """Connects and sends `first_bytes`: True when the store closes the
    connection without answering (or refuses the connection)."""
    try:
        with socket.create_connection((address, port), timeout=10) as sock:
            sock.sendall(first_bytes)
            try:
                return sock.recv(1) == b""
            except ConnectionResetError:
                return True
    except ConnectionRefusedError:
        return True


def non_loopback_address():
    """An IPv4 address of this host that is not loopback, or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


SET, GET, CHECK = 1, 3, 6
FAILED_1 = b"/worker/attempt_0/snn/failed/1"


def case_store_auth(tool):
    """The store answers only the job's secret, on loopback only: a client
    without it (or with another job's) reads and writes nothing, and the
    store keeps serving the ranks."""
    proc, marker, ranks = start_sleeping_job()
    try:
        env = process_environment(ranks[0])
        port, secret = int(env["MASTER_PORT"]), env["SNN_JOB_SECRET"].encode()
        check(env["MASTER_ADDR"] == "127.0.0.1", "MASTER_ADDR %r" % env["MASTER_ADDR"])
        check(re.fullmatch(rb"[0-9a-f]{64}", secret), "secret %r" % secret)
        check(process_environment(ranks[1])["SNN_JOB_SECRET"].encode() == secret, "one secret")
        for pid in [proc.pid] + ranks:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                check(secret not in f.read(), "the secret is on a command line")
        attacks = {
            "no handshake, a SET": store_frame(SET, [FAILED_1, b"x"]),
            "another job's secret": b"SNNRDV1 " + b"0" * 64 + store_frame(SET, [FAILED_1, b"x"]),
            "a short secret": b"SNNRDV1 " + secret[:32],
            "a TCPStore query": b"\x00\x00\x00\x00\x00\x00\x00\x01",
        }
        for name, first_bytes in attacks.items():
            check(refused("127.0.0.1", port, first_bytes), "%s was answered" % name)
        outside = non_loopback_address()
        if outside:
            check(refused(outside, port, b"SNNRDV1 " + secret + store_frame(CHECK, [FAILED_1])),
                  "the store answered on %s" % outside)
        else:
            print("no non-loopback IPv4 address: that check skipped")
        # The secret opens it, and nothing above wrote a key.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"SNNRDV1 " + secret)
            check(sock.recv(1) == b"K", "the job's secret was refused")
            check(store_call(sock, CHECK, [FAILED_1]) == (0, [b"0"]), "snn/failed/1 was written")
            check(store_call(sock, SET, [b"probe", b"v"]) == (0, []), "SET failed")
            check(store_call(sock, GET, [b"probe"]) == (0, [b"v"]), "GET failed")
        # A rank of another job (another secret) is refused with one line.
        other = rank_env(0, 2, port, {"TORCHELASTIC_USE_AGENT_STORE": "True",
                                      "TORCHELASTIC_RESTART_COUNT": "0",
                                      "SNN_JOB_SECRET": "ab" * 32})
        r = run([tool, "collectives", "--timeout-ms", "3000"], env=other)
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and
              "refused this process's job secret (SNN_JOB_SECRET of another job?)" in r.stderr,
              "another job's rank\n%s" % r)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    check(proc.returncode == 130 and err == "error: interrupted by SIGINT; stopped 2 ranks\n",
          "the ranks should have run on undisturbed: %s %r" % (proc.returncode, err))
    expect_no_leftovers(marker)


def running(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def case_launcher_stopped(tool):
    """A SIGSTOPped launcher: its ranks exit within the bound (the launcher
    answer timeout, 5 s for --timeout-ms 3000, plus the 1 s ping interval),
    each with one line naming it."""
    proc, marker, ranks = start_sleeping_job(["--timeout-ms", "3000"])
    env = process_environment(ranks[0])
    port, secret = int(env["MASTER_PORT"]), env["SNN_JOB_SECRET"].encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"SNNRDV1 " + secret)
        check(sock.recv(1) == b"K", "the job's secret was refused")
        joined = [b"/worker/attempt_0/snn/join/%d" % r for r in range(2)]
        deadline = time.monotonic() + 30
        while store_call(sock, CHECK, joined) != (0, [b"1"]):
            check(time.monotonic() < deadline, "the ranks did not join")
            time.sleep(0.05)
    time.sleep(0.5)  # the watch starts right after the join
    proc.send_signal(signal.SIGSTOP)
    start = time.monotonic()
    try:
        while any(running(pid) for pid in ranks) and time.monotonic() - start < 30:
            time.sleep(0.05)
        took = time.monotonic() - start
    finally:
        proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=30)
    print("ranks exited %.2f s after SIGSTOP" % took)
    check(4.0 <= took <= 9.0, "ranks exited %.1f s after SIGSTOP of the launcher" % took)
    for rank in range(2):
        line = ("error: rank %d: the launcher (pid %d) stopped answering for 5 s\n"
                % (rank, proc.pid))
        check(err.count(line) == 1, "rank %d line\n%s" % (rank, err))
    check(err.count("\n") == 3 and
          "error: the launcher was stopped for " in err,
          "one line per rank and one from the launcher\n%s" % err)
    check(proc.returncode == 1, "launcher exit %s" % proc.returncode)
    expect_no_leftovers(marker)


def case_numerics(tool, nproc):
    marker = new_marker()
    r = run([tool, "--nproc", str(nproc), "collectives", "autograd", "reducer", "mesh", "ops",
             "p2p", "--timeout-ms", "30000", "--marker", marker], timeout=120)
    check(r.returncode == 0, "expected exit 0\n%s" % r)
    for scenario in ("collectives", "autograd", "reducer", "mesh", "ops", "p2p"):
        for rank in range(nproc):
            check("rank %d: %s ok" % (rank, scenario) in r.stdout,
                  "rank %d %s\n%s" % (rank, scenario, r))
    expect_no_leftovers(marker)


CASES = {
    "numerics.2ranks": lambda tool: case_numerics(tool, 2),
    "numerics.4ranks": lambda tool: case_numerics(tool, 4),
    "launcher.success": case_launcher_success,
    "launcher.exit_code": case_launcher_exit_code,
    "launcher.signals": case_signals,
    "launcher.port_in_use": case_port_in_use,
    "launcher.bad_launch": case_bad_launch,
    "failure.kill_mid_collective": case_kill_mid_collective,
    "failure.kill_rank0": case_kill_rank0,
    "failure.hang": case_hang,
    "failure.p2p_kill": case_p2p_kill,
    "failure.p2p_hang": case_p2p_hang,
    "failure.size_mismatch": case_size_mismatch,
    "rendezvous.timeout": case_rendezvous_timeout,
    "rendezvous.manual_environment": case_manual_environment,
    "rendezvous.torchrun": case_torchrun,
    "rendezvous.store_auth": case_store_auth,
    "rendezvous.launcher_stopped": case_launcher_stopped,
}

# The tool under test, for helpers that start jobs.
tool_path = [None]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tool", required=True)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    args = parser.parse_args()
    try:
        tool_path[0] = os.path.abspath(args.tool)
        CASES[args.case](tool_path[0])
    except Failure as failure:
        print("FAIL %s: %s" % (args.case, failure))
        return 1
    print("PASS %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
