"""Bad input to data-parallel `snn-run`: each case must fail fast with exit code 1 and
one clear `error:` line, before any rank starts where the launcher can tell.

  --nproc 3 on a dp=2 artifact, batch 8   -> the dp axis resized to 3, which 8 does not divide;
                                             no rank started
  --nproc 2 on a single-rank artifact     -> world_size error (no dp axis to resize)
  plain `snn-run train` on a dp=2 artifact -> refused (partitioned for 2 ranks)
  --batch-size 6 with --nproc 4            -> not divisible by the 4 data-parallel ranks
  --keep-last with a short batch of 3 on 2 ranks -> cannot be split evenly
  --master-port P while P is in use        -> port in use
  torchrun-style ranks (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) from different weights
                                           -> names the first differing parameter
and one torchrun-style run that succeeds (the same artifact on both ranks).

Usage: train_dp_errors.py --bin BUILD/bin --work DIR
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import time

import train_common as tc

T, B = 4, 8


def expect_error(cmd, *needles, timeout=120):
    start = time.monotonic()
    proc = tc.run(cmd, expect_ok=False, timeout=timeout)
    took = time.monotonic() - start
    if proc.returncode != 1:
        raise tc.Failure(f"expected exit code 1, got {proc.returncode}: {cmd}")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    if not errors:
        raise tc.Failure(f"no error line from {cmd}")
    for needle in needles:
        if not any(needle in line for line in errors):
            raise tc.Failure(f"no error line mentions {needle!r}: {errors}")
    return errors, took


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_style(snn_run, arts, extra, port):
    """Two ranks started by hand with torchrun's variables, rank 0 hosting the store."""
    procs = []
    for rank, art in enumerate(arts):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        procs.append(subprocess.Popen([snn_run, "train", art, *extra], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        sys.stdout.write(err)
        outs.append((proc.returncode, err))
    return outs


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    snn_run = os.path.join(args.bin, "snn-run")
    compile_ = os.path.join(args.bin, "snn-compile")
    case, art1 = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=8)
    case2, _ = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=8, seed=1, tag="other")
    arts = {}
    for ranks in (2, 4):
        arts[ranks] = os.path.join(work, f"art_dp{ranks}")
        shutil.rmtree(arts[ranks], ignore_errors=True)
        tc.run([compile_, os.path.join(case, "model.onnx"), "--mode", "dp", "--topology",
                f"dp={ranks}", "--batch-size", B, "-o", arts[ranks]])
    other = os.path.join(work, "art_other_dp2")
    shutil.rmtree(other, ignore_errors=True)
    tc.run([compile_, os.path.join(case2, "model.onnx"), "--mode", "dp", "--topology", "dp=2",
            "--batch-size", B, "-o", other])
    data = tc.static_images(os.path.join(work, "x.npy"), os.path.join(work, "y.npy"), 19,
                            [1, 28, 28])
    train = ["--data-npy", data, "--repeat-time", T, "--steps", 2, "--lr", "0.01",
             "--threads", 1, "--progress", "none"]

    errors, _ = expect_error([snn_run, "--nproc", 3, "train", arts[2], *train,
                              "--batch-size", 8], "--batch-size 8 is not divisible by the 3")
    if len(errors) != 1:
        raise tc.Failure(f"--nproc 3: the launcher should fail alone, before any rank: {errors}")
    errors, _ = expect_error([snn_run, "--nproc", 2, "train", art1, *train, "--batch-size", B],
                             "compiled for world_size 1", "no 'dp' axis to resize")
    if len(errors) != 1:
        raise tc.Failure(f"--nproc 2 on one rank's artifact: {errors}")
    expect_error([snn_run, "train", arts[2], *train, "--batch-size", B],
                 "partitioned for 2 ranks")
    errors, _ = expect_error([snn_run, "--nproc", 4, "train", arts[4], *train,
                              "--batch-size", 6], "--batch-size 6 is not divisible by the 4")
    if len(errors) != 1:
        raise tc.Failure(f"--batch-size 6 on 4 ranks: {errors}")
    # 19 samples in batches of 8 keep a last batch of 3: not splittable over 2 ranks.
    expect_error([snn_run, "--nproc", 2, "train", arts[2], *train, "--batch-size", B,
                  "--keep-last"], "last batch of 3 samples")
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        expect_error([snn_run, "--nproc", 2, "--master-port", port, "train", arts[2], *train,
                      "--batch-size", B], f"port {port} is already in use")

    # torchrun's variables: the same artifact trains; different weights are refused.
    ok = torchrun_style(snn_run, [arts[2], arts[2]],
                        [str(a) for a in [*train, "--batch-size", B]], free_port())
    if any(code != 0 for code, _ in ok):
        raise tc.Failure(f"torchrun-style run failed: {ok}")
    bad = torchrun_style(snn_run, [arts[2], other],
                         [str(a) for a in [*train, "--batch-size", B]], free_port())
    if not all(code == 1 for code, _ in bad):
        raise tc.Failure(f"different weights: expected exit code 1 on both ranks: {bad}")
    if "do not start from the same weights: 'conv_fc.0.weight' differs between rank 0 and " \
            "rank 1" not in bad[0][1]:
        raise tc.Failure(f"different weights: rank 0 should name the first parameter: {bad[0][1]}")
    print("PASS: data-parallel bad input fails with one clear error")


if __name__ == "__main__":
    tc.main_wrapper(main)
