"""Checkpoints under bad conditions (docs/checkpoints.md): saves in the background, a full disk,
two jobs on one directory, NaN and infinite values.

Two small models, T = 4, batches of 8 static images repeated over T:
  csnn     the CSNN (8 channels) on 28 x 28 images: BatchNorm, spiking output;
  readout  an MLP whose output is not spikes: a LIF hidden layer and a linear path from the
           input, so that a NaN input or a diverging readout reaches the loss (spikes stop both).
Cases:
  background  a run saving in the background and one with --checkpoint-sync write the same
              checkpoints (tensors.bin byte for byte) and the same weights; every step event
              has checkpoint_seconds and checkpoint_writing; the summary line compares the
              step times with a save and without.
  full disk   writes fail past a file-size limit (RLIMIT_FSIZE: any machine, one process and
              fsdp on 2 ranks), and on a tmpfs with room for one checkpoint and a half (a real
              ENOSPC: needs root and mount, else skipped saying why): exit 1 with one error line
              naming the directory and the cause, the earlier checkpoint still `latest` and
              loadable, no .tmp directory left; with --checkpoint-errors continue a warning per
              failed save and the run finishes.
  two jobs    a second job on the same --checkpoint directory exits 1 naming it and the first
              job's pid; once the first is SIGKILLed (its flock goes with it), a --resume job
              runs.
  non-finite  a NaN input leaves the CSNN's loss finite but would make its weights NaN: the
              save after it is refused naming the parameter, the earlier checkpoint stays;
              --skip-nonfinite-steps skips that step and finishes with finite weights. The
              readout diverges under a huge learning rate: exit 1 naming the step, no checkpoint
              of it, the last one finite; --skip-nonfinite-steps finishes, the skipped steps
              logged and counted. On dp = 2 with the NaN in rank 1's half of a batch, the error
              names rank 1.
Every run that trains logs a loss that moves; the models' neuron layers fire at 5-50 % on the
first batch.

Usage: train_checkpoint_faults.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

import train_common as tc  # first: it sets the BLAS threads before torch loads
import numpy as np  # noqa: I100
import torch
from snnexport import reference, train as tr
from snnexport import export_onnx, functional, layer, neuron, surrogate

T, B, STEPS, EVERY = 4, 8, 6, 2
RATES = (0.05, 0.5)
CSNN_FLAGS = ["--optimizer", "sgd", "--lr", "0.02", "--momentum", "0.9", "--loss", "mse",
              "--seed", 3, "--threads", 1, "--progress", "lines", "--no-shuffle"]


class Readout(torch.nn.Module):
    """A LIF hidden layer read out by a Linear, plus a Linear from the input to the output."""

    def __init__(self):
        super().__init__()
        self.flat = layer.Flatten()
        self.fc1 = layer.Linear(64, 32)
        self.lif = neuron.LIFNode(tau=2.0, v_threshold=0.2, surrogate_function=surrogate.ATan())
        self.fc2 = layer.Linear(32, 10)
        self.skip = layer.Linear(64, 10)

    def forward(self, x):
        x = self.flat(x)
        return self.fc2(self.lif(self.fc1(x))) + self.skip(x)


class Setup:
    def __init__(self, args):
        self.bin, self.work = args.bin, tc.fresh_dir(args.work)
        self.snn_run = os.path.join(args.bin, "snn-run")

    def w(self, *names):
        return os.path.join(self.work, *names)

    def compile(self, onnx, out, *flags):
        shutil.rmtree(out, ignore_errors=True)
        tc.run([os.path.join(self.bin, "snn-compile"), onnx, "-o", out, *flags])
        return out


def run(cmd, expect_rc=0, fsize=None):
    """Runs cmd (with RLIMIT_FSIZE `fsize` bytes when given); checks the exit code."""
    print("+ " + ("ulimit -f %d; " % (fsize // 512) if fsize else "") +
          " ".join(str(c) for c in cmd), flush=True)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300,
                          preexec_fn=limit if fsize else None)
    sys.stdout.write(tc._tail(proc.stdout + proc.stderr) if (proc.stdout + proc.stderr).strip()
                     else "")
    if proc.returncode != expect_rc:
        raise tc.Failure(f"{os.path.basename(str(cmd[0]))} exited with {proc.returncode}, "
                         f"expected {expect_rc}")
    return proc


def error_lines(proc):
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def one_error(proc, pattern, what, ranks=1):
    """One process: its only error line matches `pattern`. Several ranks: each prints its
    line (and the launcher its own); one of them matches."""
    lines = error_lines(proc)
    if ranks == 1 and len(lines) != 1:
        raise tc.Failure(f"{what}: expected one error line, got {lines}")
    match = next((m for m in (re.fullmatch(pattern, line) for line in lines) if m), None)
    if not match:
        raise tc.Failure(f"{what}: no error line matches {pattern!r}: {lines}")
    print(f"{what}: {match.group(0)}")
    return match


def latest(ck):
    with open(os.path.join(ck, "latest")) as f:
        return f.read().strip()


def checkpoint_arrays(path):
    """The tensors of a checkpoint directory (or of each rank<R>/ of a sharded one)."""
    if os.path.exists(os.path.join(path, "shards.json")):
        out = {}
        for rank in sorted(d for d in os.listdir(path) if d.startswith("rank")):
            out.update({f"{rank}/{k}": v
                        for k, v in checkpoint_arrays(os.path.join(path, rank)).items()})
        return out
    meta = json.load(open(os.path.join(path, "checkpoint.json")))
    blob = open(os.path.join(path, "tensors.bin"), "rb").read()
    return {e["key"]: np.frombuffer(blob, e["dtype"], count=int(np.prod(e["shape"], dtype=int)),
                                    offset=e["offset"]) for e in meta["tensors"]}


def check_left(ck, want_latest, what):
    """`latest` names want_latest, its values are finite, no .tmp directory is left."""
    got = latest(ck)
    if got != want_latest:
        raise tc.Failure(f"{what}: latest is {got}, expected {want_latest}")
    temps = [d for d in os.listdir(ck) if d.endswith(".tmp")]
    if temps:
        raise tc.Failure(f"{what}: temporary directories left: {temps}")
    bad = [k for k, v in checkpoint_arrays(os.path.join(ck, got)).items()
           if v.dtype.kind == "f" and not np.isfinite(v).all()]
    if bad:
        raise tc.Failure(f"{what}: {got} holds non-finite values in {bad}")


def check_moves(log, what):
    losses = [s["loss"] for s in tc.read_log(log)[0] if s["loss"] is not None and
              not s.get("skipped")]
    if len(losses) < 2 or max(losses) - min(losses) <= 1e-6 * max(abs(v) for v in losses):
        raise tc.Failure(f"{what}: the loss does not move: {losses}")


def check_rates(rates, what):
    bad = {k: r for k, r in rates.items() if not RATES[0] <= r <= RATES[1]}
    if bad:
        raise tc.Failure(f"{what}: neuron layers fire outside 5-50 %: {bad}")
    print(f"{what}: firing rates " + ", ".join(f"{k} {r:.1%}" for k, r in rates.items()))


def make_csnn(s):
    case, art = tc.make_artifact(s.bin, s.work, "csnn", T=T, N=B, width=8)
    x, y = s.w("csnn_x.npy"), s.w("csnn_y.npy")
    tc.static_images(x, y, 4 * B, [1, 28, 28], seed=5)
    model, _ = tr.model_from_case(case)
    first, _ = tr.load_npy(x, y, static=True).batch(range(B), T)
    check_rates({p: st["firing_rate"] for p, st in reference.run_reference(model, first)[1]
                 .items()}, "csnn, first batch")
    fsdp = s.compile(os.path.join(case, "model.onnx"), s.w("art_csnn_fsdp2"), "--mode", "fsdp",
                     "--topology", "dp=2", "--batch-size", B)
    return art, fsdp, x, y


def make_readout(s):
    torch.manual_seed(0)
    net = Readout().eval()
    functional.set_step_mode(net, "m")
    x, y = s.w("readout_x.npy"), s.w("readout_y.npy")
    tc.static_images(x, y, 8 * B, [1, 8, 8], seed=2)
    first = torch.from_numpy(np.load(x)[:B]).unsqueeze(0).repeat(T, 1, 1, 1, 1)
    export_onnx(net, first, s.w("readout.onnx"))
    with torch.no_grad():
        functional.reset_net(net)
        check_rates({"lif": float(net.lif(net.fc1(net.flat(first))).mean())},
                    "readout, first batch")
    art = s.compile(s.w("readout.onnx"), s.w("art_readout"))
    dp = s.compile(s.w("readout.onnx"), s.w("art_readout_dp2"), "--mode", "dp", "--topology",
                   "dp=2", "--batch-size", B)
    return art, dp, x, y


def csnn_cmd(s, art, x, y, ck, *extra, ranks=1):
    launch = ["--nproc", ranks] if ranks > 1 else []
    return [s.snn_run, *launch, "train", art, "--data-npy", f"{x},{y}", "--repeat-time", T,
            "--steps", STEPS, "--batch-size", B, *CSNN_FLAGS, "--checkpoint", ck,
            "--checkpoint-every", EVERY, *extra]


def background(s, csnn):
    art, _, x, y = csnn
    runs = {}
    for mode, extra in (("background", []), ("sync", ["--checkpoint-sync"])):
        ck, log = s.w(f"bg_{mode}"), s.w(f"bg_{mode}.jsonl")
        shutil.rmtree(ck, ignore_errors=True)
        proc = run(csnn_cmd(s, art, x, y, ck, "--keep-checkpoints", 5, "--log", log,
                            "--save-params", s.w(f"bg_{mode}_params"), *extra))
        steps, _ = tc.read_log(log)
        if any("checkpoint_seconds" not in e or "checkpoint_writing" not in e for e in steps):
            raise tc.Failure(f"{mode}: step events without checkpoint_seconds/_writing")
        summary = [line for line in proc.stderr.splitlines() if "checkpoints:" in line]
        saved = "(background)" if mode == "background" else "(synchronous)"
        if not summary or saved not in summary[0] or "with a save" not in summary[0]:
            raise tc.Failure(f"{mode}: no checkpoint summary line ({saved}) on stderr")
        check_moves(log, mode)
        runs[mode] = {d: open(os.path.join(ck, d, "tensors.bin"), "rb").read()
                      for d in sorted(os.listdir(ck)) if d.startswith("step-")}
    if list(runs["background"]) != [f"step-{n:08d}" for n in range(EVERY, STEPS + 1, EVERY)]:
        raise tc.Failure(f"background: checkpoints {list(runs['background'])}")
    if runs["background"] != runs["sync"]:
        raise tc.Failure("the background saves differ from the synchronous ones")
    tc.compare_params(tc.load_params(s.w("bg_background_params")),
                      tc.load_params(s.w("bg_sync_params")), "background vs sync weights",
                      exact=True)
    print("background: the same checkpoints and weights as --checkpoint-sync")


def full_disk_limited(s, csnn, ranks):
    """RLIMIT_FSIZE below tensors.bin: every save of the resumed run fails."""
    art = csnn[0] if ranks == 1 else csnn[1]
    x, y = csnn[2], csnn[3]
    what = f"full disk (file-size limit, {ranks} rank{'s' * (ranks > 1)})"
    ck = s.w(f"fsize{ranks}")
    shutil.rmtree(ck, ignore_errors=True)
    run(csnn_cmd(s, art, x, y, ck, "--stop-after", EVERY, "--log", s.w(f"fsize{ranks}.jsonl"),
                 ranks=ranks))
    check_moves(s.w(f"fsize{ranks}.jsonl"), what)
    first = latest(ck)
    sizes = [os.path.getsize(os.path.join(r, "tensors.bin"))
             for r, _, files in os.walk(os.path.join(ck, first)) if "tensors.bin" in files]
    limit = min(sizes) // 2
    proc = run(csnn_cmd(s, art, x, y, ck, "--resume", ranks=ranks), expect_rc=1, fsize=limit)
    one_error(proc, rf"error: --checkpoint {re.escape(ck)}: cannot save step-0000000{2 * EVERY}: "
              r"(rank \d: )?.*tensors\.bin: cannot write: File too large", what, ranks)
    check_left(ck, first, what)
    run([s.snn_run, "eval", csnn[0], "--data-npy", f"{x},{y}", "--repeat-time", T,
         "--checkpoint", ck])
    proc = run(csnn_cmd(s, art, x, y, ck, "--resume", "--checkpoint-errors", "continue",
                        "--log", s.w(f"fsize{ranks}_continue.jsonl"), ranks=ranks), fsize=limit)
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    if len(warnings) != (STEPS - EVERY) // EVERY or error_lines(proc):
        raise tc.Failure(f"{what}, continue: warnings {warnings}, errors {error_lines(proc)}")
    if f"step {STEPS} of {STEPS}" not in proc.stderr:
        raise tc.Failure(f"{what}, continue: the run did not finish")
    check_moves(s.w(f"fsize{ranks}_continue.jsonl"), what)
    check_left(ck, first, f"{what}, continue")
    print(f"{what}: stop and continue leave {first} the latest")


def full_disk_tmpfs(s, csnn):
    """A tmpfs with room for 1.5 checkpoints: the second save runs out of space."""
    art, _, x, y = csnn
    if os.geteuid() != 0:
        print("SKIP full disk (tmpfs): not root, cannot mount a tmpfs")
        return
    probe = s.w("probe")
    shutil.rmtree(probe, ignore_errors=True)
    run(csnn_cmd(s, art, x, y, probe, "--stop-after", EVERY))
    one = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(probe) for f in fs)
    mnt = tc.fresh_dir(s.w("tmpfs"))
    size = (one * 3 // 2 // 4096 + 2) * 4096
    try:
        mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt],
                               capture_output=True, text=True)
        failed = mount.stderr.strip() if mount.returncode != 0 else None
    except OSError as e:
        failed = str(e)
    if failed is not None:
        print(f"SKIP full disk (tmpfs): cannot mount a tmpfs: {failed}")
        return
    try:
        for policy in ("stop", "continue"):
            what = f"full disk (tmpfs of {size} bytes, {policy})"
            ck = os.path.join(mnt, policy)
            proc = run(csnn_cmd(s, art, x, y, ck, "--checkpoint-errors", policy),
                       expect_rc=1 if policy == "stop" else 0)
            if policy == "stop":
                one_error(proc, rf"error: --checkpoint {re.escape(ck)}: cannot save "
                          rf"step-0000000{2 * EVERY}: .*No space left on device", what)
            elif len([ln for ln in proc.stderr.splitlines() if "No space left" in ln]) != 2:
                raise tc.Failure(f"{what}: expected a warning for each of 2 failed saves")
            check_left(ck, f"step-0000000{EVERY}", what)
            shutil.rmtree(ck)
        print("full disk (tmpfs): ENOSPC leaves the earlier checkpoint the latest")
    finally:
        subprocess.run(["umount", mnt])


def two_jobs(s, csnn):
    art, _, x, y = csnn
    ck = s.w("shared")
    shutil.rmtree(ck, ignore_errors=True)
    long_run = [s.snn_run, "train", art, "--data-npy", f"{x},{y}", "--repeat-time", T,
                "--steps", 100000, "--batch-size", B, *CSNN_FLAGS, "--checkpoint", ck,
                "--checkpoint-every", EVERY]
    print("+ " + " ".join(str(c) for c in long_run), flush=True)
    first = subprocess.Popen([str(c) for c in long_run], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not os.path.exists(os.path.join(ck, "latest")):
            if first.poll() is not None or time.time() > deadline:
                raise tc.Failure("the first job saved no checkpoint")
            time.sleep(0.05)
        proc = run(long_run + ["--resume"], expect_rc=1)
        one_error(proc, rf"error: --checkpoint {re.escape(ck)} is in use by another job "
                  rf"\(pid {first.pid}\)", "two jobs")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    log = s.w("after_kill.jsonl")
    run(long_run + ["--resume", "--stop-after", EVERY, "--log", log])
    steps, _ = tc.read_log(log)
    print(f"two jobs: after SIGKILL, --resume ran steps {[e['step'] for e in steps]}")
    check_moves(log, "two jobs")


def nan_input(s, csnn):
    """A NaN in batch 3: the CSNN's loss stays finite, its gradients do not."""
    art, _, x, y = csnn
    xs = np.load(x)
    xs[3 * B + 1, 0, 5, 5] = np.nan
    xn = s.w("csnn_x_nan.npy")
    np.save(xn, xs)
    ck, log = s.w("nan_stop"), s.w("nan_stop.jsonl")
    shutil.rmtree(ck, ignore_errors=True)
    proc = run(csnn_cmd(s, art, xn, y, ck, "--log", log), expect_rc=1)
    one_error(proc, r"error: parameter '[^']+' is not finite after step 4: no checkpoint of it "
              r"is written", "NaN input")
    check_left(ck, "step-00000002", "NaN input")
    check_moves(log, "NaN input")
    ck, log = s.w("nan_skip"), s.w("nan_skip.jsonl")
    shutil.rmtree(ck, ignore_errors=True)
    proc = run(csnn_cmd(s, art, xn, y, ck, "--log", log, "--skip-nonfinite-steps"))
    skipped = [e["step"] for e in tc.read_log(log)[0] if e.get("skipped")]
    if skipped != [3] or "1 skipped" not in proc.stderr:
        raise tc.Failure(f"NaN input, skipped: steps {skipped} (expected [3])")
    check_left(ck, f"step-{STEPS:08d}", "NaN input, skipped")
    check_moves(log, "NaN input, skipped")
    print("NaN input: refused at the save without the flag, skipped with it")


def divergence(s, readout):
    art, dp, x, y = readout
    cmd = [s.snn_run, "train", art, "--data-npy", f"{x},{y}", "--repeat-time", T,
           "--steps", 12, "--batch-size", B, "--lr", 1000, "--no-shuffle", "--threads", 1,
           "--progress", "lines", "--checkpoint-every", 1]
    ck, log = s.w("diverge"), s.w("diverge.jsonl")
    shutil.rmtree(ck, ignore_errors=True)
    proc = run(cmd + ["--checkpoint", ck, "--log", log], expect_rc=1)
    k = int(one_error(proc, r"error: loss is (nan|inf) at step (\d+) \(epoch 0\)",
                      "divergence").group(2))
    steps, _ = tc.read_log(log)
    if [e["step"] for e in steps] != list(range(k)):
        raise tc.Failure(f"divergence: logged steps {[e['step'] for e in steps]}, not 0..{k - 1}")
    check_left(ck, f"step-{k:08d}", "divergence")
    check_moves(log, "divergence")
    ck, log = s.w("diverge_skip"), s.w("diverge_skip.jsonl")
    shutil.rmtree(ck, ignore_errors=True)
    proc = run(cmd + ["--checkpoint", ck, "--log", log, "--skip-nonfinite-steps"])
    skipped = [e["step"] for e in tc.read_log(log)[0] if e.get("skipped")]
    if not skipped or skipped[0] != k or f"{len(skipped)} skipped" not in proc.stderr:
        raise tc.Failure(f"divergence, skipped: steps {skipped}, the first should be {k}")
    check_left(ck, "step-00000012", "divergence, skipped")
    # dp = 2, a NaN in rank 1's half of batch 1 (--no-shuffle: rank r holds positions
    # r*B/2 .. (r+1)*B/2 - 1 of each batch).
    xs = np.load(x)
    xs[B + B // 2 + 1, 0, 3, 3] = np.nan
    xn = s.w("readout_x_nan.npy")
    np.save(xn, xs)
    proc = run([s.snn_run, "--nproc", 2, "train", dp, "--data-npy", f"{xn},{y}",
                "--repeat-time", T, "--steps", 4, "--batch-size", B, "--lr", 0.1,
                "--no-shuffle", "--threads", 1, "--progress", "none"], expect_rc=1)
    one_error(proc, r"error: loss is nan at step 1 \(epoch 0\) on rank 1", "dp = 2, NaN on rank 1",
              ranks=2)
    print(f"divergence: stopped at step {k} without its checkpoint; skipped {skipped}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    s = Setup(args)
    csnn = make_csnn(s)
    readout = make_readout(s)
    background(s, csnn)
    full_disk_limited(s, csnn, 1)
    full_disk_limited(s, csnn, 2)
    full_disk_tmpfs(s, csnn)
    two_jobs(s, csnn)
    nan_input(s, csnn)
    divergence(s, readout)
    print("PASS: checkpoints survive bad conditions")


if __name__ == "__main__":
    tc.main_wrapper(main)
