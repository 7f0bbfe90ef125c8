"""snn-run train --tensorboard DIR: the event file holds every number of the --log file.

A small CSNN (make_case; its neuron layers fire at 5-50 % on the case input) trains with
`--log` and `--tensorboard`. The event file is read back with this suite's own reader
(tfevents.py: TFRecord framing, both CRC-32C checks, the Event protobuf by hand). Required:
  - one file in DIR named as TensorBoard names its files
    (events.out.tfevents.<10-digit seconds>.<host>.<pid>.0.spikemesh), its first event
    file_version "brain.Event:2", wall times within the run and not decreasing;
  - the scalars are exactly those docs/observability.md derives from the log, tag by tag and
    step by step, each the log's value as float32 (step events: train/loss, train/accuracy,
    train/learning_rate, train/samples_per_s, train/step_seconds, train/comm_share when the
    step lists "comm", firing_rate/<layer> from "firing_rates", grad_norm/<group> from
    "grad_norms", both of which every step event carries); epoch events at the
    step that ended them: epoch/loss, epoch/accuracy, eval/loss, eval/accuracy, and
    epoch/firing_rate/<layer>);
  - the loss moves;
  - a run killed with SIGKILL mid-training leaves a file whose records all pass their CRCs
    (at most a cut last record) and hold every step the log holds but the last;
  - on 2 data-parallel ranks, rank 0 alone writes a file, and it holds the run's log (the
    global batch's numbers);
  - when the `tensorboard` package is importable, its EventAccumulator reads the run's tags
    and every scalar (skipped with a message otherwise).

Usage: train_tensorboard.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import math
import os
import re
import signal
import socket
import struct
import subprocess
import time

import train_common as tc
import tfevents

T, B = 4, 16
FILE_NAME = re.compile(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.0\.spikemesh")
STEP_TAGS = [("loss", "train/loss"), ("accuracy", "train/accuracy"),
             ("lr", "train/learning_rate"), ("samples_per_s", "train/samples_per_s"),
             ("seconds", "train/step_seconds")]
EPOCH_TAGS = [("loss", "epoch/loss"), ("accuracy", "epoch/accuracy"),
              ("eval_loss", "eval/loss"), ("eval_accuracy", "eval/accuracy")]


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def expected_scalars(events):
    """{(tag, step): value} the log's events become (docs/observability.md)."""
    want, last = {}, 0

    def put(tag, step, value):
        if number(value):
            want[(tag, step)] = value

    for ev in events:
        if ev["event"] == "step":
            last = ev["step"]
            for key, tag in STEP_TAGS:
                put(tag, last, ev.get(key))
            if "comm" in ev and number(ev.get("seconds")) and ev["seconds"] > 0:
                put("train/comm_share", last, sum(c["seconds"] for c in ev["comm"]) / ev["seconds"])
            for layer, rate in ev.get("firing_rates", {}).items():
                put(f"firing_rate/{layer}", last, rate)
            for group, norm in ev.get("grad_norms", {}).items():
                put(f"grad_norm/{group}", last, norm)
        elif ev["event"] == "epoch":
            for key, tag in EPOCH_TAGS:
                put(tag, last, ev.get(key))
            for layer, rate in ev.get("firing_rates", {}).items():
                put(f"epoch/firing_rate/{layer}", last, rate)
    return want


def float32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def event_file(directory, what):
    files = sorted(os.listdir(directory))
    if len(files) != 1:
        raise tc.Failure(f"{what}: want one event file in {directory}, found {files}")
    m = FILE_NAME.fullmatch(files[0])
    if not m or m.group(2) != socket.gethostname():
        raise tc.Failure(f"{what}: {files[0]} is not named events.out.tfevents.<10-digit "
                         f"seconds>.{socket.gethostname()}.<pid>.0.spikemesh")
    return os.path.join(directory, files[0]), int(m.group(1))


def scalars_of(events, what):
    """{(tag, step): float32 value} of the events after the file_version one."""
    got = {}
    for ev in events[1:]:
        for tag, value in ev["scalars"]:
            if (tag, ev["step"]) in got:
                raise tc.Failure(f"{what}: {tag} at step {ev['step']} written twice")
            got[(tag, ev["step"])] = value
    return got


def compare(got, want, what):
    if set(got) != set(want):
        raise tc.Failure(f"{what}: tags and steps differ from the log: missing "
                         f"{sorted(set(want) - set(got))[:8]}, extra {sorted(set(got) - set(want))[:8]}")
    bad = [(k, got[k], want[k]) for k in sorted(want) if got[k] != float32(want[k])]
    if bad:
        raise tc.Failure(f"{what}: {len(bad)} scalars differ from the log's value as float32, "
                         f"first {bad[:4]}")


def check_run(directory, log, started, ended, what):
    path, seconds = event_file(directory, what)
    events = tfevents.read_events(path)
    if events[0]["file_version"] != "brain.Event:2":
        raise tc.Failure(f"{what}: first event {events[0]} is not file_version brain.Event:2")
    walls = [e["wall_time"] for e in events]
    if not (started - 1 <= seconds <= ended and started - 1 <= walls[0]
            and walls[-1] <= ended + 1 and walls == sorted(walls)):
        raise tc.Failure(f"{what}: wall times {walls[0]}..{walls[-1]} (file {seconds}) not "
                         f"within the run {started:.0f}..{ended:.0f} or not increasing")
    want = expected_scalars(tc.read_jsonl(log))
    compare(scalars_of(events, what), want, what)
    tags = sorted({t for t, _ in want})
    print(f"{what}: {path}: {len(events)} events, {len(want)} scalars equal to the log's "
          f"(as float32); tags {tags}")
    return path, tags


def check_fires_and_moves(case, log):
    with open(os.path.join(case, "meta.json")) as f:
        rates = {k: v["firing_rate"] for k, v in json.load(f)["neurons"].items()}
    quiet = {k: r for k, r in rates.items() if not 0.05 <= r <= 0.5}
    if quiet:
        raise tc.Failure(f"neuron layers outside 5-50 % firing: {quiet}")
    losses = [s["loss"] for s in tc.read_log(log)[0]]
    if max(losses) - min(losses) < 1e-3 * max(abs(losses[0]), 1e-6):
        raise tc.Failure(f"the loss did not move: {losses[:3]} ... {losses[-3:]}")
    return rates


def timed_run(cmd):
    started = time.time()
    tc.run(cmd)
    return started, time.time()


def killed_run(cmd, log, steps):
    """Starts `cmd`, SIGKILLs it once the log holds `steps` step events."""
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if os.path.exists(log) and sum(1 for _ in open(log)) >= steps:
            break
        time.sleep(0.01)
    if proc.poll() is not None:
        raise tc.Failure(f"the run ended (exit {proc.returncode}) before it was killed")
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def check_killed(directory, log):
    path, _ = event_file(directory, "killed")
    events = tfevents.read_events(path, allow_truncated_tail=True)
    got = scalars_of(events, "killed")
    logged = tc.read_jsonl(log)  # whole lines only: each is flushed as written
    want = expected_scalars(logged)
    last = max(s for _, s in want)
    need = {k: v for k, v in want.items() if k[1] < last}
    missing = sorted(set(need) - set(got))
    if missing or any(got[k] != float32(want[k]) for k in got if k in want):
        raise tc.Failure(f"killed: the event file lacks or differs on {missing[:6]}")
    print(f"killed after step {last}: every record passed its CRCs; the file holds "
          f"{len(events) - 1} events after file_version, every logged step before the last")


def check_accumulator(path, tags, count):
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        print("SKIP (part): the tensorboard package is not importable; its EventAccumulator "
              "was not tried")
        return
    acc = event_accumulator.EventAccumulator(path, size_guidance={"scalars": 0})
    acc.Reload()
    got = sorted(acc.Tags()["scalars"])
    n = sum(len(acc.Scalars(t)) for t in got)
    if got != tags or n != count:
        raise tc.Failure(f"EventAccumulator: tags {got} ({n} scalars), want {tags} ({count})")
    print(f"EventAccumulator reads the tags {got} and {n} scalars")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    w = lambda *n: os.path.join(work, *n)  # noqa: E731
    snn_run = os.path.join(args.bin, "snn-run")
    case, art = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=8)
    data = tc.static_images(w("x.npy"), w("y.npy"), 6 * B, [1, 28, 28], seed=5)
    evals = tc.static_images(w("ex.npy"), w("ey.npy"), 2 * B, [1, 28, 28], seed=6)
    common = ["--batch-size", B, "--optimizer", "adam", "--lr", "0.002", "--loss", "ce",
              "--threads", 1, "--progress", "none"]

    started, ended = timed_run([snn_run, "train", art, "--data-npy", data, "--eval-data-npy",
                                evals, "--epochs", 2, *common, "--log", w("log.jsonl"),
                                "--tensorboard", w("tb", "one")])
    rates = check_fires_and_moves(case, w("log.jsonl"))
    path, tags = check_run(w("tb", "one"), w("log.jsonl"), started, ended, "one process")
    steps = tc.read_log(w("log.jsonl"))[0]
    if not all("firing_rates" in s and "grad_norms" in s for s in steps):
        raise tc.Failure("a step event lacks firing_rates or grad_norms")
    if set(steps[0]["firing_rates"]) != set(rates):
        raise tc.Failure(f"firing_rates layers {list(steps[0]['firing_rates'])}, the model's "
                         f"neuron layers {list(rates)}")
    check_accumulator(path, tags, len(expected_scalars(tc.read_jsonl(w("log.jsonl")))))

    killed_run([snn_run, "train", art, "--data-npy", data, "--steps", 5000, *common,
                "--log", w("killed.jsonl"), "--tensorboard", w("tb", "killed")],
               w("killed.jsonl"), 10)
    check_killed(w("tb", "killed"), w("killed.jsonl"))

    dp_art = w("art_dp2")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o",
            dp_art, "--mode", "dp", "--topology", "dp=2", "--batch-size", B])
    started, ended = timed_run([snn_run, "--nproc", 2, "train", dp_art, "--data-npy", data,
                                "--steps", 6, *common, "--log", w("dp.jsonl"),
                                "--tensorboard", w("tb", "dp")])
    check_run(w("tb", "dp"), w("dp.jsonl"), started, ended, "dp=2, rank 0")
    print(f"PASS: the event files hold the logs' numbers; neuron layers fire at "
          f"{sorted(round(r, 3) for r in rates.values())}")


if __name__ == "__main__":
    tc.main_wrapper(main)
