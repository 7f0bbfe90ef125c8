"""Runs torchrun_worker.py under Debian's torchrun on a free loopback port; exits as torchrun.

    run_torchrun.py --nproc 2 --mode dp [--timeout 600]

Debian 12's torchrun (torch 1.13 on Python 3.11) cannot parse its own default ``--redirects 0
--tee 0`` (Python 3.11 no longer lists a Flag enum's zero member), so the ranks' stdout is
teed with ``--redirects 1 --tee 1``, as docs/python-api.md tells users to do.
"""
import argparse
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, required=True)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--topology", default="", help="the worker's (default: dp=NPROC)")
    parser.add_argument("--schedule", default="", help="the worker's (a pipeline's schedule)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--torchrun", default="/usr/bin/torchrun")
    args = parser.parse_args()
    cmd = [args.torchrun, "--redirects", "1", "--tee", "1", "--nproc_per_node",
           str(args.nproc), "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           os.path.join(HERE, "torchrun_worker.py"), "--mode", args.mode]
    if args.topology:
        cmd += ["--topology", args.topology]
    if args.schedule:
        cmd += ["--schedule", args.schedule]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        done = subprocess.run(cmd, cwd=HERE, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"error: torchrun did not finish within {args.timeout:.0f} s", file=sys.stderr)
        return 1
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
