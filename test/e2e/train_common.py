"""Shared pieces of the training end-to-end tests (train_*.py): running the tools, building a
reference case + artifact, synthetic datasets, reading logs and parameter directories, and the
relative comparison of docs/training.md (max|a - b| / max(max|b|, 1e-6) per tensor)."""
import argparse
import json
import os
import shutil
import subprocess
import sys

# snn-run runs OpenBLAS single-threaded under ATen's OpenMP team (CommandSupport.cpp). The
# in-process reference trainer does the same, so that both sum every GEMM in the same order:
# Adam turns the last-bit differences of a near-zero gradient into visible weight differences.
# Import this module before torch for it to take effect.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

TOL = 1e-4


class Failure(Exception):
    pass


def run(cmd, expect_ok=True, timeout=600):
    """Runs a command, echoes it and its output; returns the CompletedProcess."""
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    try:
        proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                              timeout=timeout)
    except OSError as e:
        raise Failure(f"cannot run {cmd[0]}: {e}") from None
    if proc.stdout.strip():
        sys.stdout.write(_tail(proc.stdout))
    if proc.stderr.strip():
        sys.stdout.write(_tail(proc.stderr))
    sys.stdout.flush()
    if expect_ok and proc.returncode != 0:
        raise Failure(f"{os.path.basename(str(cmd[0]))} exited with {proc.returncode}")
    return proc


def _tail(text, lines=30):
    rows = text.rstrip("\n").splitlines()
    if len(rows) > lines:
        rows = [f"... ({len(rows) - lines} lines)"] + rows[-lines:]
    return "\n".join(rows) + "\n"


def bin_and_work(doc):
    """(BIN, WORK) of a script whose only arguments are --bin (the tools' directory) and
    --work (emptied here); `doc` is the script's docstring, its first line the description."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--bin", required=True, help="directory with snn-compile and snn-run")
    p.add_argument("--work", required=True, help="scratch directory (emptied)")
    args = p.parse_args()
    return args.bin, fresh_dir(args.work)


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def make_artifact(bin_dir, work, model, T=4, N=8, seed=0, tag=None, **kw):
    """make_case (model.onnx + weights.npz + meta.json) into WORK/case_TAG and snn-compile
    into WORK/art_TAG (TAG defaults to the model name); returns (case, art)."""
    tag = tag or model
    case = os.path.join(work, f"case_{tag}")
    cmd = [sys.executable, "-m", "snnexport.make_case", "--model", model, "--out", case,
           "--T", T, "--N", N, "--seed", seed, "--attempts", 1, "--quiet"]
    for k, v in kw.items():
        cmd += [f"--{k}", v]
    run(cmd)
    art = os.path.join(work, f"art_{tag}")
    shutil.rmtree(art, ignore_errors=True)
    run([os.path.join(bin_dir, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art])
    return case, art


def static_images(path_x, path_y, S, shape, classes=10, seed=0):
    """float32 uniform [0, 1) images [S, *shape] and int64 labels."""
    g = np.random.default_rng(seed)
    np.save(path_x, g.random((S, *shape), dtype=np.float32))
    np.save(path_y, g.integers(0, classes, S).astype(np.int64))
    return f"{path_x},{path_y}"


def event_sequences(path_x, path_y, S, T, shape, classes=10, seed=0, p=0.3):
    """Binary DVS-like frames [S, T, *shape] (sample-major, as .npy datasets hold them)."""
    g = np.random.default_rng(seed)
    np.save(path_x, (g.random((S, T, *shape)) < p).astype(np.float32))
    np.save(path_y, g.integers(0, classes, S).astype(np.int32))
    return f"{path_x},{path_y}"


def read_jsonl(path):
    """Every event of a JSONL file, in file order."""
    if not os.path.isfile(path):
        raise Failure(f"{path}: missing")
    events = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                events.append(json.loads(line))
            except ValueError as e:
                raise Failure(f"{path}:{n}: not JSON ({e}): {line[:120]!r}") from None
    return events


def read_log(path):
    """(step events, epoch events) of a --log JSONL file, in file order (other events, such as
    a rank log's 'rank' and 'end', are left out)."""
    steps, epochs = [], []
    for ev in read_jsonl(path):
        if ev.get("event") == "step":
            steps.append(ev)
        elif ev.get("event") == "epoch":
            epochs.append(ev)
    return steps, epochs


def check_same_steps(name, log, reference_log, steps, what):
    """The --log files `log` (a run `what`, e.g. "with --recompute") and `reference_log` (the
    same run without it) hold `steps` step events each, with identical losses and accuracies;
    returns the step events of `reference_log`."""
    (mine, _), (theirs, _) = read_log(log), read_log(reference_log)
    if len(mine) != steps or len(theirs) != steps:
        raise Failure(f"{name}: {len(theirs)} and {len(mine)} step events, expected {steps}")
    for a, b in zip(theirs, mine):
        if a["loss"] != b["loss"] or a["accuracy"] != b["accuracy"]:
            raise Failure(f"{name}: step {a['step']}: loss {b['loss']!r} / accuracy "
                          f"{b['accuracy']} {what}, {a['loss']!r} / {a['accuracy']} without")
    return theirs


def check_fires_and_moves(case, logs):
    """The case's neuron layers fire at 5-50 % (make_case's meta.json measures each on the
    case's input) and the loss of the `logs` (--log files, in order) moved; returns the rates."""
    with open(os.path.join(case, "meta.json")) as f:
        rates = {k: v["firing_rate"] for k, v in json.load(f)["neurons"].items()}
    quiet = {k: r for k, r in rates.items() if not 0.05 <= r <= 0.5}
    if quiet:
        raise Failure(f"neuron layers outside 5-50 % firing: {quiet}")
    losses = [s["loss"] for log in logs for s in read_log(log)[0]]
    if max(losses) - min(losses) < 1e-3 * max(abs(losses[0]), 1e-6):
        raise Failure(f"the loss did not move: {losses[:3]} ... {losses[-3:]}")
    return rates


def load_params(directory):
    """name -> array of a --save-params directory (NAME.npy per parameter and buffer)."""
    if not os.path.isdir(directory):
        raise Failure(f"--save-params wrote no directory {directory}")
    return {f[:-4]: np.load(os.path.join(directory, f)) for f in sorted(os.listdir(directory))
            if f.endswith(".npy")}


def rel_err(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-6))


# Learning-rate factors of the multi-rank checks. Spikformer's 0.02-std convs each feed a
# BatchNorm, so a gradient scales with 1 / |w| and an SGD step at lr 0.01-0.05 moves a weight
# 25-100 times its size: a gradient that is a sum of 16k terms which cancel (BatchNorm's
# backward has zero mean per channel) then differs by its float32 bound between the ranks' and
# one process's summation orders (6e-4 measured on fsdp2), and a spike flips within 3 steps of
# tp2 (the losses equal to 8 digits before), and so does one process's first convolution,
# whose repeated input's gradient it sums over T before convolving (6e-4 measured after 5 SGD
# steps). At a hundredth of the rate the steps are about a quarter of the weights and the
# checks mean what they do for the other models.
LR_SCALE = {"spikformer": 0.01}

# The event-driven kernels (snn-run's default for a Linear or conv2d fed spikes at most its
# crossover density) add in another order than PyTorch's GEMMs and convolutions, and which
# layers take them depends on the machine's crossovers. The Spikformer (above) flips a spike
# within a few steps under any other order, so its trajectory checks run the dense kernels, as
# do the checks that need PyTorch's own arithmetic (sj_port's NCHW steps); the event kernels'
# trajectories are checked on the CSNN and the VGG (train_trajectory.py).
DENSE_KERNELS = ["--spike-linear-density", "0", "--spike-conv-density", "0"]


def kernel_flags(model):
    """snn-run's kernel flags for a trajectory check of `model`."""
    return DENSE_KERNELS if model in LR_SCALE else []


def compare_params(got, want, what, tol=TOL, exact=False, noise=None):
    """Every entry of `want` must be in `got` with the same shape (up to dims of size 1) and
    within `tol` (or bit-equal when `exact`). Returns the worst relative error; raises Failure
    listing all.

    `noise` maps names whose exact-arithmetic gradient is zero (so both runs hold only their
    own roundoff, and a relative error means nothing) to a float32 bound on |got - want|;
    those are checked against it instead."""
    problems, worst = [], 0.0
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    if extra:
        problems.append(f"unexpected {', '.join(extra)}")
    for k in sorted(set(want) & set(got)):
        a, b = got[k], want[k]
        if a.shape != b.shape and a.size == b.size and \
                [d for d in a.shape if d != 1] == [d for d in b.shape if d != 1]:
            a = a.reshape(b.shape)  # a Conv1d weight as the artifact holds it, [O, C, 1, k]
        if a.shape != b.shape:
            problems.append(f"{k}: shape {list(a.shape)} != {list(b.shape)}")
            continue
        if a.dtype != np.float32:
            problems.append(f"{k}: dtype {a.dtype} is not float32")
        if exact:
            n = int(np.count_nonzero(a.view(np.uint32) != b.astype(np.float32).view(np.uint32)))
            if n:
                problems.append(f"{k}: {n} of {a.size} values differ "
                                f"(rel err {rel_err(a, b):.3g})")
            continue
        if noise and k in noise:
            d = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
            if not d <= noise[k]:
                problems.append(f"{k}: |diff| {d:.3g} beyond the roundoff bound "
                                f"{noise[k]:.3g} of its zero gradient")
            continue
        e = rel_err(a, b)
        worst = max(worst, e)
        if not e <= tol:
            problems.append(f"{k}: rel err {e:.3g} > {tol}")
    if problems:
        raise Failure(f"{what}: " + "; ".join(problems))
    return worst


def rank_processes(launcher):
    """{rank: pid} of the live children of process `launcher` that are ranks: named "snn-run
    rank R" (each rank names itself), or with RANK in the environment they were started with
    (torchrun's workers, before they name themselves)."""
    ranks = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                name, rest = f.read().split("(", 1)[1].rsplit(")", 1)
            fields = rest.split()
            if int(fields[1]) != launcher or fields[0] == "Z":
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
        except (OSError, ValueError, IndexError):
            continue
        if name.startswith("snn-run rank "):
            ranks[int(name.split()[-1])] = int(entry)
        elif b"RANK" in env:
            ranks[int(env[b"RANK"])] = int(entry)
    return ranks


def main_wrapper(fn):
    """Runs fn(); prints PASS/FAIL lines and exits 1 on Failure."""
    try:
        fn()
    except Failure as e:
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)
