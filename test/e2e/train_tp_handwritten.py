"""Tensor-parallel runs on real ranks equal one process on the unsplit model (plan modes tp and
fsdp_tp, docs/distributed.md "Tensor-parallel runs").

The model is tp_case.py's: linear/LIF layers partitioned by hand over a tp axis with every
collective (backward_all_reduce, all_reduce, all_slice, all_gather) and bias_add, after a
replicated linear, BatchNorm (SyncBatchNorm over the dp axis) and Dropout (the global batch's
mask); its unsplit
program is the reference, trained by `snn-run train` in one process on the same global batches
from the same weights. For each partitioned artifact (tp=2 and tp=4 on a mesh [tp]; fsdp_tp on a
mesh [dp=2, tp=2], and tp with ZeRO-1 over that dp axis), trained for 3 steps with
`snn-run --nproc W train`:
  - the per-step losses and accuracies within 1e-4 relative of one process's, and the loss moves;
  - every rank's --save-params (whole tensors) bit-identical to rank 0's, every parameter
    changed by training and within 1e-4 relative of one process's;
  - every neuron layer fires at 5-50% (the unsplit model evaluated in NumPy with BatchNorm's
    batch statistics, before and after training), so the comparison is not between silent
    networks;
  - the communication counters: the step events of every rank's log and of rank 0's --log and
    the --comm-stats table hold, per step, exactly the collectives the program runs:
      all_gather over tp: 2 calls (forward all_gather, all_slice's backward) of [T, n, 20]
      all_reduce over tp: 2 calls (forward all_reduce [T, n, 20], backward_all_reduce's
                          backward [T, n, 24])
    with n the batch of one rank (B over the dp ranks) and 4 bytes per element;
  - a checkpointed run stopped after 2 steps and resumed ends bit-identical to the uninterrupted
    one; the checkpoint is whole (the unsplit model's shapes, no shards.json), so `snn-run eval`
    of the unsplit artifact reads it and agrees with the partitioned eval, and `snn-run export`
    and --export-onnx write the whole trained tensors;
  - `snn-run --nproc W infer` writes the unsplit model's output;
A tp=1 artifact (collectives over an axis of one) trains in one process exactly like the unsplit
program and counts nothing. tp2's checkpoint also resumes on the tp4 artifact (whole checkpoints load into any layout) and
ends within 1e-4 of tp2; and bad input is refused with one error naming the culprit: a split
initializer of the wrong shape, a collective over an axis the mesh lacks, replicated weights that
differ over tp, --params holding a part instead of the whole tensor.

Usage: train_tp_handwritten.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads
import numpy as np  # noqa: I100
import onnx
from onnx import numpy_helper

import tp_case as case

B, STEPS, S = 8, 3, 4 * 8
LAYERS = ("lif0", "lif1", "lif2", "lif3", "if_out")

# name, plan mode, mesh, optimizer flags[, optimizer_strategy]
CONFIGS = [
    ("tp2", "tp", (["tp"], [2]),
     ["--optimizer", "sgd", "--lr", "0.5", "--momentum", "0.9", "--loss", "mse"]),
    ("tp4", "tp", (["tp"], [4]),
     ["--optimizer", "adam", "--lr", "0.01", "--loss", "ce", "--schedule", "cosine"]),
    ("fsdp_tp2x2", "fsdp_tp", (["dp", "tp"], [2, 2]),
     ["--optimizer", "adam", "--lr", "0.01", "--loss", "mse"]),
    ("zero_tp2x2", "tp", (["dp", "tp"], [2, 2]),
     ["--optimizer", "sgd", "--lr", "0.5", "--momentum", "0.9", "--loss", "mse"], "zero"),
]


def expected_comm(per_rank_batch):
    """{(kind, mesh_axis): (calls, bytes)} of one training step."""
    elements = case.T * per_rank_batch
    return {("all_gather", "tp"): (2, 2 * elements * case.H2 * 4),
            ("all_reduce", "tp"): (2, elements * (case.H2 + case.H0) * 4)}


class Runner:
    def __init__(self, bin_dir, work):
        self.snn_run = os.path.join(bin_dir, "snn-run")
        self.work = work
        g = np.random.default_rng(5)
        self.x = g.random((S, case.IN), dtype=np.float32)
        np.save(os.path.join(work, "x.npy"), self.x)
        np.save(os.path.join(work, "y.npy"), g.integers(0, case.C, S).astype(np.int64))
        self.data = ["--data-npy", f"{work}/x.npy,{work}/y.npy", "--repeat-time", case.T]

    def train(self, art, ranks, flags, out, *extra, expect_ok=True):
        launcher = ["--nproc", ranks] if ranks > 1 else []
        return tc.run([self.snn_run, *launcher, "train", art, *self.data, "--steps", STEPS,
                       "--batch-size", B, "--seed", 3, "--threads", 1, "--progress", "none",
                       *flags, "--log", os.path.join(out, "log.jsonl"), *extra],
                      expect_ok=expect_ok)

    def tool(self, ranks, *args, expect_ok=True):
        launcher = ["--nproc", ranks] if ranks > 1 else []
        return tc.run([self.snn_run, *launcher, *args], expect_ok=expect_ok)


def check_rates(weights, x, what):
    spikes = case.numpy_forward(weights, x, batch_statistics=True)
    rates = {layer: float(spikes[layer].mean()) for layer in LAYERS}
    bad = {k: v for k, v in rates.items() if not 0.05 <= v <= 0.5}
    if bad:
        raise tc.Failure(f"{what}: firing rates outside 5-50%: {bad} (all: {rates})")
    print(f"{what}: firing rates " + ", ".join(f"{k} {v:.1%}" for k, v in rates.items()))


def check_losses(got, want, what):
    if len(got) != STEPS or len(want) != STEPS:
        raise tc.Failure(f"{what}: {len(got)} and {len(want)} step events, expected {STEPS}")
    for i, (a, b) in enumerate(zip(got, want)):
        e = abs(a["loss"] - b["loss"]) / max(abs(b["loss"]), 1e-6)
        if not e <= tc.TOL or a["accuracy"] != b["accuracy"]:
            raise tc.Failure(f"{what}: step {i}: loss {a['loss']!r} accuracy {a['accuracy']} vs "
                             f"one process {b['loss']!r} {b['accuracy']} (rel err {e:.3g})")
    losses = [ev["loss"] for ev in want]
    if max(losses) - min(losses) <= 1e-6:
        raise tc.Failure(f"{what}: the loss does not move: {losses}")


def comm_of(event):
    return {(c["kind"], c["mesh_axis"]): (c["calls"], c["bytes"]) for c in event["comm"]}


def check_comm(out, stdout, ranks, want, what):
    """Every rank's step events, rank 0's --log and the --comm-stats table."""
    logs = [os.path.join(out, f"log.rank{r}.jsonl") for r in range(ranks)]
    for path in logs + [os.path.join(out, "log.jsonl")]:
        steps, _ = tc.read_log(path)
        for ev in steps:
            if "comm" not in ev or comm_of(ev) != want:
                raise tc.Failure(f"{what}: {path} step {ev['step']}: comm "
                                 f"{ev.get('comm')}, expected {want}")
    lines = [line.split() for line in stdout.splitlines() if line.strip()]
    if not lines or lines[0] != ["step", "kind", "mesh_axis", "calls", "bytes", "ms"]:
        raise tc.Failure(f"{what}: --comm-stats printed no table header: {stdout!r}")
    rows = {}
    for step, kind, axis, calls, nbytes, ms in lines[1:]:
        if not float(ms) >= 0:
            raise tc.Failure(f"{what}: --comm-stats time {ms!r} ms")
        rows.setdefault(int(step), {})[(kind, axis)] = (int(calls), int(nbytes))
    if rows != {s: want for s in range(STEPS)}:
        raise tc.Failure(f"{what}: --comm-stats table {rows}, expected {want} per step")
    print(f"{what}: every step counted {want}")


def check_rank_events(out, mesh, sharding, what):
    """Each rank's log starts with its place: the sharding over dp and its mesh coordinates."""
    axes, shape = mesh
    for r in range(int(np.prod(shape))):
        first = tc.read_jsonl(os.path.join(out, f"log.rank{r}.jsonl"))[0]
        want = {"axes": axes, "shape": shape,
                "coordinates": [int(c) for c in np.unravel_index(r, shape)]}
        if first.get("event") != "rank" or first.get("mode") != sharding or \
                first.get("mesh") != want:
            raise tc.Failure(f"{what}: rank {r}'s log starts with {first}, expected mode "
                             f"{sharding!r} and mesh {want}")


def check_replicas(params, ranks, what):
    first = tc.load_params(os.path.join(params, "rank0"))
    for r in range(1, ranks):
        tc.compare_params(tc.load_params(os.path.join(params, f"rank{r}")), first,
                          f"{what}: rank {r} vs rank 0", exact=True)
    return first


def check_trained(got, reference, initial, what):
    worst = tc.compare_params(got, reference, f"{what} final weights")
    still = [k for k in initial if np.array_equal(got[k], initial[k])]
    if still:
        raise tc.Failure(f"{what}: training left {still} unchanged")
    return worst


def run_config(runner, weights, name, mode, mesh, flags, optimizer="none"):
    work = runner.work
    ranks = int(np.prod(mesh[1]))
    dp = mesh[1][mesh[0].index("dp")] if "dp" in mesh[0] else 1
    art = case.write_artifact(os.path.join(work, f"art_{name}"), weights, mode, mesh,
                              optimizer=optimizer)
    ref = tc.fresh_dir(os.path.join(work, f"ref_{name}"))
    runner.train(os.path.join(work, "art_unsplit"), 1, flags, ref,
                 "--save-params", os.path.join(ref, "params"))
    out = tc.fresh_dir(os.path.join(work, name))
    proc = runner.train(art, ranks, flags, out, "--save-params", os.path.join(out, "params"),
                        "--comm-stats", "--export-onnx", os.path.join(out, "model.onnx"))
    got_steps, _ = tc.read_log(os.path.join(out, "log.jsonl"))
    want_steps, _ = tc.read_log(os.path.join(ref, "log.jsonl"))
    check_losses(got_steps, want_steps, name)
    reference = tc.load_params(os.path.join(ref, "params"))
    params = check_replicas(os.path.join(out, "params"), ranks, name)
    worst = check_trained(params, reference, weights, name)
    check_rates(reference, runner.x, f"{name}: trained unsplit model")
    check_comm(out, proc.stdout, ranks, expected_comm(B // dp), name)
    sharding = "fsdp" if mode == "fsdp_tp" else "zero" if optimizer == "zero" else "replicated"
    check_rank_events(out, mesh, sharding if dp > 1 else "replicated", name)
    check_onnx(os.path.join(out, "model.onnx"), params, f"{name} --export-onnx")
    print(f"{name}: = one process (worst rel err {worst:.3g})")
    return art, ranks, params


def check_onnx(path, params, what):
    model = onnx.load(path)
    got = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    tc.compare_params(got, params, what, exact=True)


def check_resume(runner, art, ranks, flags, full, name):
    """Stop after 2 of 3 steps, resume: bit-identical to the uninterrupted run; the checkpoint
    is the whole model's."""
    out = tc.fresh_dir(os.path.join(runner.work, f"{name}_resume"))
    ck = os.path.join(out, "ck")
    runner.train(art, ranks, flags, out, "--checkpoint", ck, "--stop-after", 2)
    step = os.path.join(ck, "step-00000002")
    if os.path.exists(os.path.join(step, "shards.json")):
        raise tc.Failure(f"{name}: the checkpoint is sharded; a tp run's is whole")
    meta = json.load(open(os.path.join(step, "checkpoint.json")))
    shapes = {e["name"]: e["shape"] for e in meta["model"]["entries"]}
    want = {k: list(v[0]) for k, v in case.PARAMETERS.items()}
    if shapes != want:
        raise tc.Failure(f"{name}: checkpoint shapes {shapes}, expected the whole {want}")
    runner.train(art, ranks, flags, out, "--checkpoint", ck, "--resume",
                 "--save-params", os.path.join(out, "params"))
    resumed = check_replicas(os.path.join(out, "params"), ranks, f"{name} resumed")
    tc.compare_params(resumed, full, f"{name}: resumed vs uninterrupted", exact=True)
    print(f"{name}: resumed from step 2 bit-identical to the uninterrupted run")
    return ck


def check_eval_export(runner, art, ranks, ck, params, name):
    """The whole checkpoint in the unsplit artifact and the partitioned one; export."""
    data = [str(a) for a in runner.data]
    split = runner.tool(ranks, "eval", art, "--checkpoint", ck, *data)
    whole = runner.tool(1, "eval", os.path.join(runner.work, "art_unsplit"), "--checkpoint", ck,
                        *data)
    a, b = json.loads(split.stdout), json.loads(whole.stdout)
    if split.stdout.count("\n") != 1 or abs(a["loss"] - b["loss"]) > 1e-6 * max(b["loss"], 1):
        raise tc.Failure(f"{name}: eval of the checkpoint: {split.stdout!r} vs unsplit "
                         f"{whole.stdout!r}")
    path = os.path.join(runner.work, f"{name}_export.onnx")
    runner.tool(1, "export", art, "--checkpoint", ck, "-o", path)
    check_onnx(path, params, f"{name}: snn-run export")
    print(f"{name}: eval (partitioned {a['loss']:.6g}, unsplit {b['loss']:.6g}) and export of "
          f"the checkpoint agree")


def check_infer(runner, weights, art, ranks, name):
    x = os.path.join(runner.work, "infer_x.npy")
    np.save(x, runner.x[:8])
    out = os.path.join(runner.work, f"{name}_infer.npy")
    if os.path.exists(out):
        os.remove(out)
    runner.tool(ranks, "infer", art, "-i", x, "-o", out, "--repeat-time", case.T)
    want = case.numpy_forward(weights, runner.x[:8])["output"]
    got = np.load(out)
    if got.shape != want.shape or not np.allclose(got, want, atol=1e-6):
        raise tc.Failure(f"{name}: infer output differs from the unsplit model's")
    print(f"{name}: infer on {ranks} ranks = the unsplit model's output")


def expect_error(proc, needle, what):
    first = next((ln for ln in proc.stderr.splitlines() if ln.startswith("error:")), "")
    if proc.returncode == 0 or needle not in first:
        raise tc.Failure(f"{what}: expected a first error line with {needle!r}, got "
                         f"{proc.stderr!r}")
    print(f"{what}: refused: {first}")


def check_other_layout(runner, weights, ck, flags, full):
    """tp2's checkpoint after step 2 resumes on the tp4 artifact (checkpoints are whole, so any
    layout reads them) and ends where tp2 ended, up to the order of the partial sums."""
    d = tc.fresh_dir(os.path.join(runner.work, "tp4_from_tp2"))
    mine = os.path.join(d, "ck")
    os.makedirs(mine)
    step = "step-00000002"
    shutil.copytree(os.path.join(ck, step), os.path.join(mine, step))
    with open(os.path.join(mine, "latest"), "w") as f:
        f.write(step + "\n")
    art = os.path.join(runner.work, "art_tp4")
    runner.train(art, 4, flags, d, "--checkpoint", mine, "--resume",
                 "--save-params", os.path.join(d, "params"))
    got = check_replicas(os.path.join(d, "params"), 4, "tp4 from tp2")
    worst = tc.compare_params(got, full, "tp4 resumed from tp2's checkpoint vs tp2")
    print(f"tp2's checkpoint resumed on tp4 (worst rel err {worst:.3g})")


def check_axis_of_one(runner, weights):
    """A partitioned artifact on a mesh [tp=1], in one process: its collectives are the
    identity and communicate nothing; it trains exactly like the unsplit program."""
    programs = {0: case.build_program(weights, 0, 1, collectives=True)}
    art = case.write_artifact(os.path.join(runner.work, "art_tp1"), weights, "tp",
                              (["tp"], [1]), programs=programs)
    flags = CONFIGS[0][3]
    out = tc.fresh_dir(os.path.join(runner.work, "tp1"))
    proc = runner.train(art, 1, flags, out, "--comm-stats",
                        "--save-params", os.path.join(out, "params"))
    steps, _ = tc.read_log(os.path.join(out, "log.jsonl"))
    if [ev.get("comm") for ev in steps] != [[]] * STEPS or len(proc.stdout.splitlines()) != 1:
        raise tc.Failure(f"tp=1: expected no communication, got {[ev.get('comm') for ev in steps]}"
                         f" and {proc.stdout!r}")
    reference = tc.load_params(os.path.join(runner.work, "ref_tp2", "params"))
    tc.compare_params(tc.load_params(os.path.join(out, "params")), reference,
                      "tp=1 in one process vs the unsplit program", exact=True)
    print("tp=1 in one process: collectives are the identity, nothing counted")


def check_errors(runner, weights, params):
    work = runner.work
    bad = case.build_program(weights, 1, 2)
    for i, init in enumerate(bad.graph.initializer):
        if init.name == "fc1.weight":
            bad.graph.initializer[i].CopyFrom(
                numpy_helper.from_array(weights["fc1.weight"], "fc1.weight"))
    art = case.write_artifact(os.path.join(work, "bad_shape"), weights, "tp", (["tp"], [2]),
                              programs={1: bad})
    flags = ["--optimizer", "sgd", "--lr", "0.1"]
    out = tc.fresh_dir(os.path.join(work, "errors"))
    expect_error(runner.train(art, 2, flags, out, expect_ok=False),
                 "initializer 'fc1.weight' has shape [32, 24], but manifest.json splits its "
                 "shape [32, 24] along dimension 0", "a whole initializer in a tp program")
    programs = {c: case.build_program(weights, c, 2, axis="pp") for c in range(2)}
    art = case.write_artifact(os.path.join(work, "bad_axis"), weights, "tp", (["tp"], [2]),
                              programs=programs)
    expect_error(runner.train(art, 2, flags, out, expect_ok=False),
                 "mesh axis 'pp' is not an axis of the artifact's mesh (axes: tp)",
                 "a collective over an unknown axis")
    other = dict(weights, **{"fc4.bias": weights["fc4.bias"] + 1})
    art = case.write_artifact(os.path.join(work, "bad_replica"), weights, "tp", (["tp"], [2]),
                              programs={1: case.build_program(other, 1, 2)})
    expect_error(runner.train(art, 2, flags, out, expect_ok=False),
                 "'fc4.bias' differs between rank 0 and rank 1 of mesh axis 'tp'",
                 "replicated weights that differ over tp")
    part = tc.fresh_dir(os.path.join(work, "part_params"))
    for name, value in params.items():
        np.save(os.path.join(part, name + ".npy"),
                value[:16] if name == "fc1.weight" else value)
    expect_error(runner.tool(2, "eval", os.path.join(work, "art_tp2"), "--params", part,
                             *[str(a) for a in runner.data], expect_ok=False),
                 "fc1.weight.npy: parameter 'fc1.weight' has shape [16, 24] there, but this "
                 "artifact splits [32, 24]", "weights of another model (a part, not the whole)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    runner = Runner(args.bin, work)
    weights = case.make_weights(0)
    check_rates(weights, runner.x, "initial weights")
    case.write_artifact(os.path.join(work, "art_unsplit"), weights)
    trained = {}
    for name, mode, mesh, flags, *optimizer in CONFIGS:
        print(f"== {name}: {mode} {' '.join(optimizer)} on mesh {mesh}", flush=True)
        art, ranks, params = run_config(runner, weights, name, mode, mesh, flags, *optimizer)
        check_infer(runner, weights, art, ranks, name)
        trained[name] = params
        if name != "tp4":
            ck = check_resume(runner, art, ranks, flags, params, name)
            check_eval_export(runner, art, ranks, ck, params, name)
        if name == "tp2":
            tp2 = (ck, flags)
    check_other_layout(runner, weights, tp2[0], tp2[1], trained["tp2"])
    check_axis_of_one(runner, weights)
    check_errors(runner, weights, trained["tp2"])
    print("PASS: tp and fsdp_tp runs = one process on the unsplit model")


if __name__ == "__main__":
    tc.main_wrapper(main)
