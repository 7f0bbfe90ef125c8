"""Runs a script under Debian's torchrun on a free loopback port; exits as torchrun.

    run_torchrun.py --nproc 2 [--timeout 600] SCRIPT [ARGS...]

Debian 12's torchrun (torch 1.13 on Python 3.11) cannot parse its own default ``--redirects 0
--tee 0`` (Python 3.11 no longer lists a Flag enum's zero member), so the ranks' stdout is
teed with ``--redirects 1 --tee 1``, as docs/python-api.md tells users to do.
"""
import argparse
import os
import socket
import subprocess
import sys


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--torchrun", default="/usr/bin/torchrun")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    cmd = [args.torchrun, "--redirects", "1", "--tee", "1", "--nproc_per_node",
           str(args.nproc), "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           os.path.abspath(args.script), *args.args]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        done = subprocess.run(cmd, cwd=os.path.dirname(os.path.abspath(args.script)), env=env,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"error: torchrun did not finish within {args.timeout:.0f} s", file=sys.stderr)
        return 1
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
