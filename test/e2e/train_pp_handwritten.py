"""Pipeline-parallel runs on real ranks equal one process accumulating gradients over the same
microbatches (plan mode pp, docs/distributed.md "Pipeline-parallel runs (pp)").

The model is pp_case.py's: an eight-unit spiking MLP (LIF layers, a BatchNorm, a Dropout, a skip
that crosses the first stage boundary as a second slot), written by hand as K = 2, 4 or 8 stage
programs with recv/send nodes. Its weights are calibrated so that every LIF layer fires at about
20% in training mode; the test requires 5-50% on the first training batch, before and after
training (from the PyTorch side). For every schedule (gpipe, gpipe with pp_delay_wgrad, 1f1b,
interleaved_1f1b, zero_bubble) on 2 and 4 ranks (pp, and dp=2 x pp=2), 5 SGD steps of
`snn-run --nproc W train` are compared with pp_case.accumulating_reference, PyTorch in one
process over the same D x M microbatches:
  - per-step losses within 1e-4 relative and the same accuracy; the loss moves (Dropout draws
    one process's masks, whatever the schedule and the ranks);
  - every rank's --save-params (whole weights, gathered over the pp group) bit-identical to
    rank 0's, every parameter changed, within 1e-4 relative of the reference's;
  - each rank log starts with its mesh coordinates and ends with a bubble (the schedule's name,
    the measured and the theoretical share of waiting, both in [0, 1)).
On one configuration (pp=2, 1f1b) also: --trace writes one Chrome trace with every rank's F, B,
send and wait spans for every stage and microbatch of every step; a run stopped after 3 steps
and resumed ends bit-identical to the uninterrupted one; its checkpoint is whole, so the unsplit
program's one-process eval reads it and agrees with the pipeline's eval, and the other way round;
`snn-run --nproc 2 infer` equals the unsplit program's output; --export-onnx and `snn-run export`
write the whole trained weights into one joined program, which `snn-run eval` runs to the same
result. Bad input is refused with one line: --trace on a non-pipeline artifact, a batch that
does not divide into the plan's microbatches, a stage whose recv declares a shape the previous
stage does not send (the sender names both; the receiver names it as its lost peer).

Usage: train_pp_handwritten.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads before torch loads
import numpy as np  # noqa: I100
import onnx
import torch
from onnx import numpy_helper

import pp_case as case

B, STEPS, SEED, LR = 8, 5, 3, 1.0
SAMPLES = B * STEPS

# name, pp ranks S, dp replicas D, stages K, schedule, microbatches M (per replica),
# pp_delay_wgrad, loss
CONFIGS = [
    ("pp2_gpipe", 2, 1, 2, "gpipe", 4, False, "mse"),
    ("pp2_gpipe_delay", 2, 1, 2, "gpipe", 4, True, "ce"),
    ("pp2_1f1b", 2, 1, 2, "1f1b", 4, False, "mse"),
    ("pp2v2_interleaved", 2, 1, 4, "interleaved_1f1b", 4, False, "ce"),
    ("pp2v2_zero_bubble", 2, 1, 4, "zero_bubble", 4, False, "mse"),
    ("pp4_1f1b", 4, 1, 4, "1f1b", 4, False, "ce"),
    ("pp4_zero_bubble", 4, 1, 4, "zero_bubble", 4, False, "mse"),
    ("pp4v2_interleaved", 4, 1, 8, "interleaved_1f1b", 4, False, "mse"),
    ("dp2_pp2_1f1b", 2, 2, 2, "1f1b", 2, False, "mse"),
]


class Runner:
    def __init__(self, bin_dir, work):
        self.snn_run = os.path.join(bin_dir, "snn-run")
        self.work = work
        g = np.random.default_rng(5)
        self.x = g.random((SAMPLES, case.IN), dtype=np.float32)
        self.y = g.integers(0, case.C, SAMPLES).astype(np.int64)
        np.save(os.path.join(work, "x.npy"), self.x)
        np.save(os.path.join(work, "y.npy"), self.y)
        self.data = ["--data-npy", f"{work}/x.npy,{work}/y.npy", "--repeat-time", case.T]

    def train(self, art, ranks, loss, out, *extra, expect_ok=True):
        launcher = ["--nproc", ranks] if ranks > 1 else []
        return tc.run([self.snn_run, *launcher, "train", art, *self.data, "--steps", STEPS,
                       "--batch-size", B, "--seed", SEED, "--threads", 1, "--progress", "none",
                       "--optimizer", "sgd", "--lr", LR, "--momentum", 0.9, "--loss", loss,
                       "--log", os.path.join(out, "log.jsonl"), *extra], expect_ok=expect_ok)

    def tool(self, ranks, *args, expect_ok=True):
        launcher = ["--nproc", ranks] if ranks > 1 else []
        return tc.run([self.snn_run, *launcher, *args], expect_ok=expect_ok)

    def first_batch(self):
        """The first training batch (snn-run's SplitMix64 order), time-major."""
        order = case.tdata.splitmix64_order(SEED, 0, SAMPLES)
        return case.repeat(self.x[order[:B]])


def check_rates(weights, x, what):
    model = case.PipeMLP()
    case.load_state(model, weights)
    rates = case.rates(model, x)
    bad = {k: v for k, v in rates.items() if not 0.05 <= v <= 0.5}
    if bad:
        raise tc.Failure(f"{what}: firing rates outside 5-50%: {bad} (all: {rates})")
    print(f"{what}: firing rates " + ", ".join(f"{k} {v:.0%}" for k, v in rates.items()))


def check_losses(steps, losses, accuracies, what):
    if len(steps) != STEPS:
        raise tc.Failure(f"{what}: {len(steps)} step events, expected {STEPS}")
    for i, (ev, loss, acc) in enumerate(zip(steps, losses, accuracies)):
        e = abs(ev["loss"] - loss) / max(abs(loss), 1e-6)
        if not e <= tc.TOL or ev["accuracy"] != acc:
            raise tc.Failure(f"{what}: step {i}: loss {ev['loss']!r} accuracy {ev['accuracy']} "
                             f"vs the reference's {loss!r} {acc} (rel err {e:.3g})")
    if max(losses) - min(losses) <= 1e-6 * max(abs(v) for v in losses):
        raise tc.Failure(f"{what}: the loss does not move: {losses}")


def check_rank_logs(out, ranks, dp, schedule, what):
    shape = [dp, ranks] if dp > 1 else [ranks]
    for r in range(dp * ranks):
        events = tc.read_jsonl(os.path.join(out, f"log.rank{r}.jsonl"))
        coords = [int(c) for c in np.unravel_index(r, shape)]
        mesh = events[0].get("mesh", {})
        if events[0].get("event") != "rank" or mesh.get("coordinates") != coords:
            raise tc.Failure(f"{what}: rank {r}'s log starts with {events[0]}")
        bubble = events[-1].get("bubble") if events[-1].get("event") == "end" else None
        if not bubble or bubble.get("schedule") != schedule or \
                not 0 <= bubble.get("theoretical", -1) < 1 or \
                not 0 <= bubble.get("pipeline", -1) < 1 or \
                not 0 <= bubble.get("measured", -1) < 1:
            raise tc.Failure(f"{what}: rank {r}'s end event has no valid bubble: {events[-1]}")
        if r == 0:
            print(f"{what}: rank 0 bubble measured {bubble['measured']:.2f}, theoretical "
                  f"{bubble['theoretical']:.2f} (pipeline {bubble['pipeline']:.2f})")


def check_replicas(params, ranks):
    first = tc.load_params(os.path.join(params, "rank0"))
    for r in range(1, ranks):
        tc.compare_params(tc.load_params(os.path.join(params, f"rank{r}")), first,
                          f"rank {r} vs rank 0", exact=True)
    return first


def run_config(runner, weights, config):
    name, ranks, dp, stages, schedule, mbs, delay, loss = config
    work = runner.work
    art = case.write_pipeline(os.path.join(work, f"art_{name}"), weights, ranks, stages,
                              schedule, mbs, delay, dp)
    out = tc.fresh_dir(os.path.join(work, name))
    runner.train(art, dp * ranks, loss, out, "--save-params", os.path.join(out, "params"))
    losses, accuracies, want = case.accumulating_reference(
        weights, runner.x, runner.y, STEPS, B, dp * mbs, LR, 0.9, loss, SEED)
    steps, _ = tc.read_log(os.path.join(out, "log.jsonl"))
    check_losses(steps, losses, accuracies, name)
    got = check_replicas(os.path.join(out, "params"), dp * ranks)
    worst = tc.compare_params(got, want, f"{name}: final weights")
    still = [k for k in weights if "running" not in k and np.array_equal(got[k], weights[k])]
    if still:
        raise tc.Failure(f"{name}: training left {still} unchanged")
    check_rank_logs(out, ranks, dp, schedule, name)
    check_rates(want, runner.first_batch(), f"{name}: trained")
    print(f"{name}: = PyTorch accumulating over {dp * mbs} microbatches (worst rel err "
          f"{worst:.2g})")
    return art, out, got


def check_trace(path, ranks, stages, mbs, what):
    """One Chrome trace: per step, every rank runs F and B of each of its stages and
    microbatches once, and the spans of each rank do not overlap."""
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    for r in range(ranks):
        mine = sorted((e for e in events if e["tid"] == r), key=lambda e: e["ts"])
        if any(e["pid"] != 0 or e["dur"] < 0 for e in mine):
            raise tc.Failure(f"{what}: bad span on rank {r}")
        names = [e["name"] for e in mine]
        for s in range(r, stages, ranks):
            for m in range(mbs):
                for kind in ("F", "B"):
                    n = names.count(f"{kind} s{s} m{m}")
                    if n != STEPS:
                        raise tc.Failure(f"{what}: rank {r} has {n} spans '{kind} s{s} m{m}', "
                                         f"expected {STEPS}")
        if not any(n.startswith("send ") for n in names) or \
                not any(n.startswith("wait ") for n in names):
            raise tc.Failure(f"{what}: rank {r} has no send or wait spans")
        for a, b in zip(mine, mine[1:]):
            if b["ts"] < a["ts"] + a["dur"] - 1.0:
                raise tc.Failure(f"{what}: rank {r}'s spans {a['name']} and {b['name']} overlap")
    print(f"{what}: --trace holds {len(events)} spans of {ranks} ranks")


def eval_line(runner, ranks, art, *weights):
    proc = runner.tool(ranks, "eval", art, *runner.data, "--batch-size", 16, "--threads", 1,
                       *weights)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def onnx_weights(path):
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}


def check_checkpoints(runner, art, out, got, unsplit, what):
    """Stop after 3 steps, resume to 5: bit-identical; the checkpoint is whole both ways."""
    ck, part = os.path.join(out, "ck"), tc.fresh_dir(os.path.join(out, "resumed"))
    for extra in (["--stop-after", 3], ["--resume"]):
        runner.train(art, 2, "mse", part, "--checkpoint", ck, "--save-params",
                     os.path.join(part, "params"), *extra)
    tc.compare_params(check_replicas(os.path.join(part, "params"), 2), got,
                      f"{what}: resumed after 3 steps vs uninterrupted", exact=True)
    pp = eval_line(runner, 2, art, "--checkpoint", ck)
    one = eval_line(runner, 1, unsplit, "--checkpoint", ck)
    if (pp["loss"], pp["accuracy"]) != (one["loss"], one["accuracy"]):
        raise tc.Failure(f"{what}: eval of the pp checkpoint: pipeline {pp}, one process {one}")
    # An unsplit run's checkpoint (whole, of the same model) loads into the pipeline.
    ref = tc.fresh_dir(os.path.join(out, "unsplit_ck"))
    runner.train(unsplit, 1, "mse", ref, "--checkpoint", os.path.join(ref, "ck"))
    pp = eval_line(runner, 2, art, "--checkpoint", os.path.join(ref, "ck"))
    one = eval_line(runner, 1, unsplit, "--checkpoint", os.path.join(ref, "ck"))
    if (pp["loss"], pp["accuracy"]) != (one["loss"], one["accuracy"]):
        raise tc.Failure(f"{what}: eval of a one-process checkpoint: pipeline {pp}, one "
                         f"process {one}")
    print(f"{what}: resumed bit-identically; checkpoints load both ways (eval {pp})")
    return ck


def check_exports(runner, art, out, got, unsplit, ck, what):
    """--export-onnx and `snn-run export`: one joined program with the whole trained weights;
    as the program of the unsplit artifact it evaluates like the pipeline with those weights."""
    onnx_path, exported = os.path.join(out, "model.onnx"), os.path.join(out, "exported.onnx")
    runner.tool(1, "export", art, "--checkpoint", ck, "-o", exported)
    for path in (onnx_path, exported):
        tc.compare_params(onnx_weights(path), got, f"{what}: {os.path.basename(path)}",
                          exact=True)
    joined = os.path.join(out, "joined")
    shutil.copytree(unsplit, joined, dirs_exist_ok=True)
    shutil.copy(onnx_path, os.path.join(joined, "program_0.onnx"))
    pp = eval_line(runner, 2, art, "--params", os.path.join(out, "params", "rank0"))
    one = eval_line(runner, 1, joined)
    if (pp["loss"], pp["accuracy"]) != (one["loss"], one["accuracy"]):
        raise tc.Failure(f"{what}: the joined program evaluates to {one}, the pipeline {pp}")
    x = os.path.join(out, "infer_x.npy")
    np.save(x, runner.x[:6])
    outputs = []
    for ranks, artifact in ((2, art), (1, unsplit)):
        y = os.path.join(out, f"infer_{ranks}.npy")
        runner.tool(ranks, "infer", artifact, "--input", x, "--output", y, "--repeat-time",
                    case.T, "--threads", 1)
        outputs.append(np.load(y))
    if not np.array_equal(outputs[0], outputs[1]) or not outputs[1].any():
        raise tc.Failure(f"{what}: infer on 2 ranks {outputs[0]} vs one process {outputs[1]}")
    print(f"{what}: export, joined program, eval and infer agree with one process")


def check_errors(runner, art_pp, art_pp4, unsplit):
    out = tc.fresh_dir(os.path.join(runner.work, "errors"))
    proc = runner.train(unsplit, 1, "mse", out, "--trace", os.path.join(out, "t.json"),
                        expect_ok=False)
    if proc.returncode == 0 or "error: --trace records a pipeline's schedule; this " \
            "artifact's plan mode is 'none', not 'pp'" not in proc.stderr:
        raise tc.Failure(f"--trace on a non-pipeline artifact: {proc.stderr!r}")
    proc = tc.run([runner.snn_run, "--nproc", 2, "train", art_pp, *runner.data, "--steps", 1,
                   "--batch-size", 6, "--lr", 0.1], expect_ok=False)
    want = "error: --batch-size 6 over 1 data-parallel replica(s) gives batches of 6 samples " \
           "per pipeline, which do not divide into the plan's 4 microbatches"
    if proc.returncode == 0 or want not in proc.stderr:
        raise tc.Failure(f"a batch that does not divide into microbatches: {proc.stderr!r}")
    # Stage 1 of 4 declares a recv of another width: the ranks compare their send/recv plans
    # before the first collective, and every rank refuses naming both ends.
    bad = os.path.join(runner.work, "art_bad_shape")
    shutil.copytree(art_pp4, bad, dirs_exist_ok=True)
    model = onnx.load(os.path.join(bad, "program_1.onnx"))
    for info in model.graph.value_info:
        info.type.tensor_type.shape.dim[2].dim_value = case.H + 1
    onnx.save(model, os.path.join(bad, "program_1.onnx"))
    proc = tc.run([runner.snn_run, "--nproc", 4, "train", bad, *runner.data, "--steps", 1,
                   "--batch-size", B, "--lr", 0.1, "--dist-timeout", 20], expect_ok=False)
    want = "error: the ranks' programs do not agree, refused before the first collective: " \
           "rank 0's stage 0 has send of slot 0 to stage 1 of [4, N, 24] (node 'send0' of "
    other = "but rank 1's stage 1 has recv of slot 0 from stage 0 of [4, N, 25] (node 'recv0'"
    if proc.returncode != 1 or want not in proc.stderr or other not in proc.stderr:
        raise tc.Failure(f"a recv shape the sender does not send: {proc.stderr!r}")
    print("bad input refused: --trace without a pipeline, a batch that does not divide, a recv "
          "shape the previous stage does not send")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    runner = Runner(args.bin, tc.fresh_dir(args.work))
    model = case.calibrate(runner.first_batch())
    weights = case.state(model)
    check_rates(weights, runner.first_batch(), "initial weights, first training batch")
    unsplit = case.write_unsplit(os.path.join(runner.work, "art_unsplit"), weights)
    results = {}
    for config in CONFIGS:
        results[config[0]] = run_config(runner, weights, config)
    art, out, got = results["pp2_1f1b"]
    traced = tc.fresh_dir(os.path.join(runner.work, "traced"))
    runner.train(art, 2, "mse", traced, "--trace", os.path.join(traced, "trace.json"),
                 "--export-onnx", os.path.join(out, "model.onnx"))
    check_trace(os.path.join(traced, "trace.json"), 2, 2, 4, "pp2_1f1b")
    ck = check_checkpoints(runner, art, out, got, unsplit, "pp2_1f1b")
    check_exports(runner, art, out, got, unsplit, ck, "pp2_1f1b")
    check_errors(runner, art, results["pp4_1f1b"][0], unsplit)
    print("PASS: " + ", ".join(c[0] for c in CONFIGS) + " = one process accumulating")


if __name__ == "__main__":
    tc.main_wrapper(main)
