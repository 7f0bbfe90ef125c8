"""`snn-run calibrate` through its command line: the device profile it writes, its
progress and summary, bad flags, and a rank that dies during the communication measurement.

  calibrate --quick --ranks 2 --out F  -> exit 0; F is a profile (format, version, this machine,
                                          threads 1, gloo, the hypervisor's steal share
                                          while measuring where /proc/stat has it), every compute kind with >= 4 ascending
                                          points, all_reduce / all_gather / reduce_scatter /
                                          send_recv on 2 ranks, each with its CPU per call
                                          at every size; GEMM FLOP/s grow from the
                                          smallest size to the largest (a property of BLAS); a
                                          summary row per curve on stdout, progress on stderr
  --ranks 1, --ranks 2,2, --threads 0, --out in a missing directory, --out in /proc, --out a
  directory, --nproc 2 calibrate, calibrate-ranks by hand
                                       -> exit 1, exactly one `error:` line naming the problem,
                                          before measuring anything, no profile written
  rank 1 killed (SIGKILL) as soon as it starts
                                       -> non-zero exit, one `error:` line naming rank 1, no
                                          profile, no rank left running

Usage: snn_run_calibrate_test.py --snn-run BUILD/bin/snn-run --work-dir DIR
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

COMPUTE_KINDS = ["gemm", "conv2d", "neuron", "batch_norm", "max_pool", "elementwise"]
COMMUNICATION_KINDS = ["all_reduce", "all_gather", "reduce_scatter", "send_recv"]


class Failure(Exception):
    pass


def run(cmd, timeout=120, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def check_points(points, where):
    if not points:
        raise Failure(f"{where}: no points")
    for before, after in zip(points, points[1:]):
        if not after["size"] > before["size"]:
            raise Failure(f"{where}: sizes not ascending: {points}")
    for p in points:
        if not (p["size"] > 0 and p["seconds"] > 0):
            raise Failure(f"{where}: not positive: {p}")


def has_steal_accounting():
    try:
        with open("/proc/stat") as f:
            return len(f.readline().split()) >= 9  # "cpu" and 8 times, steal the eighth
    except OSError:
        return False


def check_profile(path):
    with open(path) as f:
        profile = json.load(f)
    if profile["format"] != "spikemesh-device-profile" or profile["version"] != 1:
        raise Failure(f"not a device profile: {profile.get('format')} {profile.get('version')}")
    machine = profile["machine"]
    if (machine["threads"], machine["backend"]) != (1, "gloo"):
        raise Failure(f"machine: {machine}")
    if machine["logical_cpus"] != os.cpu_count():
        raise Failure(f"logical_cpus {machine['logical_cpus']}, os says {os.cpu_count()}")
    if has_steal_accounting() and not 0 <= machine.get("steal", -1) <= 1:
        raise Failure(f"machine.steal: {machine.get('steal')} (a share; /proc/stat has steal)")
    kinds = [c["kind"] for c in profile["compute"]]
    if kinds != COMPUTE_KINDS:
        raise Failure(f"compute kinds {kinds}")
    for curve in profile["compute"]:
        check_points(curve["points"], curve["kind"])
        if len(curve["points"]) < 4:
            raise Failure(f"{curve['kind']}: fewer than 4 sizes")
    found = sorted((c["kind"], c["ranks"]) for c in profile["communication"])
    if found != sorted((kind, r) for kind in COMMUNICATION_KINDS for r in (2, 4)):
        raise Failure(f"communication curves {found}")
    # Measured on each even job (2 and 4 ranks), its ranks in pairs: the waits in a pair's
    # all_reduce of 16 KiB after GEMMs of about 0.125 .. 8 ms, and each pair as a two-stage
    # pipeline of 16 KiB messages whose ticks compute as long, what a tick took beyond its
    # compute (its message, the peer's wake) under the tick plus 50 ms (a stalled host).
    for key in ("waits_between_computes", "pipeline_messages"):
        curves = profile.get(key, [])
        if sorted((c["ranks"], c["bytes"]) for c in curves) != [(2, 16384), (4, 16384)]:
            raise Failure(f"{key} {curves}")
        for c in curves:
            where = f"{key} on {c['ranks']}"
            check_points(c["points"], where)
            computes = [p["size"] for p in c["points"]]
            if not (len(computes) >= 3 and computes[0] < 0.5e-3 and 4e-3 < computes[-1] < 16e-3):
                raise Failure(f"{where}: computes {computes} (about 0.125 .. 8 ms)")
            if any(not p["seconds"] < p["size"] + 0.05 for p in c["points"]):
                raise Failure(f"{where}: {c['points']}")
        # The pipelines' messages also say what CPU a message took from its two ranks beyond
        # their compute, at every point's tick: some, less than 50 ms.
        for c in curves if key == "pipeline_messages" else []:
            cpu = c.get("cpu_points", [])
            if [p["size"] for p in cpu] != [p["size"] for p in c["points"]] or any(
                    not 0 < p["seconds"] < 0.05 for p in cpu):
                raise Failure(f"{key} on {c['ranks']}: cpu_points {cpu}")
    for curve in profile["communication"]:
        check_points(curve["points"], f"{curve['kind']} on {curve['ranks']}")
        # The CPU a call costs its ranks (what a pipeline's compute loses to it): at every
        # point's size, some CPU at the largest (16 MiB are copied, and reduced, on CPUs).
        cpu = curve.get("cpu_points")
        what = f"{curve['kind']} on {curve['ranks']}"
        if not cpu or [p["size"] for p in cpu] != [p["size"] for p in curve["points"]]:
            raise Failure(f"{what}: cpu_points {cpu} do not match its points")
        if not all(p["seconds"] >= 0 for p in cpu) or not cpu[-1]["seconds"] > 0:
            raise Failure(f"{what}: cpu_points {cpu}")
    gemm = profile["compute"][0]["points"]
    small, large = (p["size"] / p["seconds"] for p in (gemm[0], gemm[-1]))
    if not large > small:
        raise Failure(f"GEMM throughput does not grow with size: {small:.3g} FLOP/s at "
                      f"{gemm[0]['size']:.3g}, {large:.3g} at {gemm[-1]['size']:.3g}")
    return profile


def check_calibrate(snn_run, work):
    out = os.path.join(work, "profile.json")
    start = time.monotonic()
    proc = run([snn_run, "calibrate", "--quick", "--ranks", "2,4", "--out", out,
                "--progress", "lines"])
    took = time.monotonic() - start
    if proc.returncode != 0:
        raise Failure(f"calibrate failed ({proc.returncode}):\n{proc.stderr}")
    check_profile(out)
    rows = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    for kind in COMPUTE_KINDS + COMMUNICATION_KINDS + ["waits_between_computes",
                                                        "pipeline_messages"]:
        if kind not in rows:
            raise Failure(f"no summary row for {kind}:\n{proc.stdout}")
    if has_steal_accounting() and "steal while measuring: " not in proc.stdout:
        raise Failure(f"no steal line in the summary:\n{proc.stdout}")
    if "calibrate: gemm" not in proc.stderr or "all_reduce, all_gather and reduce_scatter on 2 ranks" not in proc.stderr:
        raise Failure(f"no progress lines on stderr:\n{proc.stderr}")
    if "error" in proc.stderr:
        raise Failure(f"error output from a good run:\n{proc.stderr}")
    leftovers = [n for n in os.listdir(work) if n.startswith(".snn-calibrate")]
    if leftovers:
        raise Failure(f"probe or temporary files left in the --out directory: {leftovers}")
    print(f"calibrate --quick --ranks 2,4: ok in {took:.1f} s")


def expect_error(cmd, needle, env=None):
    start = time.monotonic()
    proc = run(cmd, timeout=60, env=env)
    took = time.monotonic() - start
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    if proc.returncode != 1 or len(errors) != 1 or needle not in errors[0]:
        raise Failure(f"{cmd}: expected exit 1 and one error line with {needle!r}, got "
                      f"{proc.returncode}:\n{proc.stderr}")
    # The flags are checked before the measurement starts.
    if took > 10:
        raise Failure(f"{cmd}: the error took {took:.1f} s")
    print(f"{' '.join(cmd[1:])}: {errors[0]}")


def check_bad_flags(snn_run, work):
    out = os.path.join(work, "bad.json")
    base = [snn_run, "calibrate", "--quick"]
    expect_error(base + ["--ranks", "1", "--out", out], "--ranks")
    expect_error(base + ["--ranks", "2,2", "--out", out], "twice")
    expect_error(base + ["--threads", "0", "--out", out], "--threads")
    expect_error(base + ["--out", os.path.join(work, "missing", "p.json")], "does not exist")
    expect_error(base + ["--out", "/proc/device-profile.json"], "cannot create a file")
    expect_error(base + ["--out", work], "is a directory")
    expect_error([snn_run, "--nproc", "2", "calibrate", "--out", out], "drop --nproc")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    expect_error([snn_run, "calibrate-ranks", "--result", out], "snn-run calibrate", env=env)
    if os.path.exists(out):
        raise Failure("a refused calibrate wrote its --out")


def rank_processes(parent):
    """{rank: pid} of the calibrate-ranks children of `parent`."""
    ranks = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
            ranks[int(env[b"RANK"])] = int(pid)
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return ranks


def check_killed_rank(snn_run, work):
    out = os.path.join(work, "killed.json")
    proc = subprocess.Popen([snn_run, "calibrate", "--quick", "--ranks", "2", "--out", out,
                             "--progress", "none", "--dist-timeout", "10"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    ranks = {}
    while 1 not in ranks and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
        ranks = rank_processes(proc.pid)
    if 1 not in ranks:
        proc.kill()
        raise Failure("rank 1 of calibrate never started")
    os.kill(ranks[1], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=60)
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    if proc.returncode == 0 or len(errors) != 1 or "rank 1" not in errors[0]:
        raise Failure(f"killed rank 1: expected a failure and one error line naming rank 1, "
                      f"got {proc.returncode}:\n{stderr}")
    if os.path.exists(out):
        raise Failure("a failed calibrate wrote its --out")
    alive = [pid for pid in ranks.values() if os.path.exists(f"/proc/{pid}")]
    for pid in alive:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                raise Failure(f"rank process {pid} still running")
    print(f"rank 1 killed: {errors[0]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--snn-run", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        check_bad_flags(args.snn_run, work)
        check_calibrate(args.snn_run, work)
        check_killed_rank(args.snn_run, work)
    except (Failure, subprocess.TimeoutExpired) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print("calibrate: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
