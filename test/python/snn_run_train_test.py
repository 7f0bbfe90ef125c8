#!/usr/bin/env python3
"""`snn-run train` and `snn-run eval` through the command line, on tiny artifacts and
datasets written here with the onnx package and NumPy (no compiler, no torch needed).

Checks the JSON-lines log, --save-params, --export-onnx, checkpoints and --resume (bit-
identical to a straight run), eval with --params and --checkpoint, Fashion-MNIST IDX gzip
input (a small fake directory), and that bad input gives one `error:` line and exit code 1.
Exits 77 (ctest "skipped") if numpy or onnx is missing.
"""
import argparse
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

T, B = 4, 4
FAILURES = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message, flush=True)
    if not condition:
        FAILURES.append(message)


# ------------------------------------------------------------------ artifacts
def node(op_type, inputs, output, **attrs):
    return helper.make_node(op_type, inputs, [output], name=f"{op_type}_{output}",
                            domain="spikemesh", **attrs)


def write_artifact(path, nodes, params, buffers, in_shape, out_shape, out_time_major):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    tensors = {**params, **buffers}
    graph = helper.make_graph(
        nodes, "program",
        [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("output", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in tensors.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("spikemesh", 1)])
    onnx.save(model, os.path.join(path, "program_0.onnx"))
    entries = [{"name": k, "shape": list(v.shape), "kind": "parameter"}
               for k, v in params.items()]
    entries += [{"name": k, "shape": list(v.shape), "kind": "buffer"}
                for k, v in buffers.items()]
    manifest = {
        "format": "spikemesh-artifact", "version": 1, "producer": "test", "source": "test",
        "world_size": 1, "mesh": {"axes": [], "shape": []},
        "programs": [{"file": "program_0.onnx", "ranks": [0]}],
        "input": {"name": "input", "shape": in_shape, "time_major": True},
        "output": {"name": "output", "shape": out_shape, "time_major": out_time_major},
        "parameters": entries, "plan": {"mode": "none"},
    }
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def mlp_artifact(path, features=6, hidden=8, classes=3, seed=0):
    """linear -> batch_norm -> dropout -> lif -> linear -> plif -> mean_time: [T, N, F] -> [N, C]."""
    g = np.random.default_rng(seed)
    f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
    params = {
        "fc1.weight": f32(g.uniform(-0.8, 0.8, (hidden, features))),
        "fc1.bias": f32(g.uniform(-0.2, 0.2, hidden)),
        "bn.weight": f32(g.uniform(0.8, 1.6, hidden)),
        "bn.bias": f32(g.uniform(0.0, 0.5, hidden)),
        "fc2.weight": f32(g.uniform(-1.0, 1.5, (classes, hidden))),
        "sn2.w": f32(0.0),
    }
    buffers = {"bn.running_mean": np.zeros(hidden, np.float32),
               "bn.running_var": np.ones(hidden, np.float32)}
    nodes = [
        node("linear", ["input", "fc1.weight", "fc1.bias"], "v0"),
        node("batch_norm", ["v0", "bn.weight", "bn.bias", "bn.running_mean",
                            "bn.running_var"], "v1", eps=1e-5, momentum=0.1),
        node("dropout", ["v1"], "v2", p=0.25),
        node("lif_node", ["v2"], "v3", v_threshold=1.0, v_reset=0.0, tau=2.0,
             detach_reset=0, surrogate="sigmoid", alpha=4.0, decay_input=1),
        node("linear", ["v3", "fc2.weight"], "v4"),
        node("plif_node", ["v4", "sn2.w"], "v5", v_threshold=0.5, detach_reset=1,
             surrogate="atan", alpha=2.0, decay_input=1),
        node("mean_time", ["v5"], "output"),
    ]
    write_artifact(path, nodes, params, buffers, [T, -1, features], [-1, classes], False)


def image_artifact(path, classes=10, seed=1):
    """flatten -> linear -> if_node, time-major output [T, N, C] (rate = mean over T)."""
    g = np.random.default_rng(seed)
    # Per-class mean input 0.1 to 1.2 per step: the classes fire at different rates.
    means = np.linspace(0.0003, 0.003, classes)[:, None]
    params = {"fc.weight": (means + g.normal(0, 0.004, (classes, 784))).astype(np.float32)}
    nodes = [node("flatten", ["input"], "v0"),
             node("linear", ["v0", "fc.weight"], "v1"),
             node("if_node", ["v1"], "output", v_threshold=1.0, v_reset=0.0, detach_reset=0,
                  surrogate="sigmoid", alpha=4.0)]
    write_artifact(path, nodes, params, {}, [T, -1, 1, 28, 28], [T, -1, classes], True)


def readout_artifact(path, features=6, classes=3):
    """linear -> mean_time: no neuron, so a NaN input reaches the loss."""
    params = {"fc.weight": np.full((classes, features), 0.1, np.float32)}
    nodes = [node("linear", ["input", "fc.weight"], "v0"), node("mean_time", ["v0"], "output")]
    write_artifact(path, nodes, params, {}, [T, -1, features], [-1, classes], False)


# ------------------------------------------------------------------ data
def write_idx_gz(path, array):
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
    header += b"".join(struct.pack(">I", d) for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def fake_fashion_mnist(directory, train=24, test=10):
    os.makedirs(directory, exist_ok=True)
    g = np.random.default_rng(3)
    for split, count in (("train", train), ("t10k", test)):
        write_idx_gz(os.path.join(directory, f"{split}-images-idx3-ubyte.gz"),
                     g.integers(0, 256, (count, 28, 28)))
        write_idx_gz(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz"),
                     g.integers(0, 10, count))


# ------------------------------------------------------------------ running snn-run
class Runner:
    def __init__(self, snn_run):
        self.snn_run = snn_run

    def run(self, *args):
        cmd = [self.snn_run] + [str(a) for a in args]
        print("+ " + " ".join(cmd), flush=True)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    def ok(self, what, *args):
        proc = self.run(*args)
        check(proc.returncode == 0, f"{what}: exit 0 (got {proc.returncode}: "
              f"{proc.stderr.strip()[-300:]})")
        return proc

    def error(self, what, needle, *args):
        """Exit code 1, nothing on stdout, the last stderr line `error: ...` naming needle."""
        proc = self.run(*args)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        last = lines[-1] if lines else ""
        good = (proc.returncode == 1 and proc.stdout == "" and last.startswith("error: ")
                and needle in last)
        check(good, f"{what}: exit 1 with an error naming {needle!r} (got "
              f"{proc.returncode}: {last!r})")
        return last


def read_log(path):
    with open(path) as f:
        events = [json.loads(line) for line in f if line.strip()]
    return ([e for e in events if e["event"] == "step"],
            [e for e in events if e["event"] == "epoch"])


def load_params(directory):
    return {f[:-4]: np.load(os.path.join(directory, f))
            for f in sorted(os.listdir(directory)) if f.endswith(".npy")}


def same_arrays(a, b):
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and
        a[k].tobytes() == b[k].tobytes() for k in a)


# ------------------------------------------------------------------ cases
def train_outputs(r, w, art, data, common):
    r.ok("train mlp", "train", art, "--data-npy", data, "--steps", 6, *common,
         "--log", w("log.jsonl"), "--save-params", w("params"), "--export-onnx",
         w("trained.onnx"))
    steps, epochs = read_log(w("log.jsonl"))
    check([s["step"] for s in steps] == list(range(6)), "log: steps 0..5, 0-based")
    check([s["epoch"] for s in steps] == [0, 0, 0, 0, 1, 1],
          f"log: 4 batches per epoch (18 samples, drop-last) "
          f"(got {[s['epoch'] for s in steps]})")
    check(all(list(s) == ["event", "epoch", "step", "loss", "accuracy", "lr",
                          "samples_per_s", "seconds", "firing_rates", "grad_norms"]
              for s in steps), "log: step event fields")
    check(len({s["loss"] for s in steps}) > 2, "log: the loss changes")
    check([e["epoch"] for e in epochs] == [0, 1] and
          all("eval_loss" in e and "eval_accuracy" in e for e in epochs),
          "log: an epoch event per epoch (the last one partial), with eval fields")
    check(abs(epochs[0]["loss"] - sum(s["loss"] for s in steps[:4]) / 4) < 1e-12,
          "log: epoch loss is the mean of its step losses")
    params = load_params(w("params"))
    check(sorted(params) == sorted(["fc1.weight", "fc1.bias", "bn.weight", "bn.bias",
                                    "fc2.weight", "sn2.w", "bn.running_mean",
                                    "bn.running_var"]),
          f"--save-params: one NAME.npy per parameter and buffer (got {sorted(params)})")
    check(params["sn2.w"].shape == () and params["sn2.w"] != 0.0,
          "--save-params: the PLIF w is trained")
    check(not np.all(params["bn.running_mean"] == 0), "--save-params: running stats moved")
    exported = {t.name: numpy_helper.to_array(t)
                for t in onnx.load(w("trained.onnx")).graph.initializer}
    check(same_arrays(exported, params), "--export-onnx: initializers equal --save-params")
    return params


def resume_cases(r, w, art, data, common):
    run = ["train", art, "--data-npy", data, "--steps", 7, *common]
    r.ok("straight 7 steps", *run, "--log", w("straight.jsonl"), "--save-params",
         w("straight"))
    r.ok("first 3 steps", *run, "--stop-after", 3, "--checkpoint", w("ck"),
         "--checkpoint-every", 2, "--log", w("first.jsonl"))
    check(sorted(os.listdir(w("ck"))) == [".lock", "latest", "step-00000002", "step-00000003"],
          f"checkpoints at step 2 and 3 plus `latest` and the job lock "
          f"(got {sorted(os.listdir(w('ck')))})")
    r.error("checkpoint dir in use", "--resume", *run, "--checkpoint", w("ck"))
    at = run.index("--seed")
    reseeded = run[:at + 1] + [99] + run[at + 2:]
    r.error("resume with another seed", "--seed", *reseeded, "--checkpoint", w("ck"),
            "--resume")
    r.ok("resume to 7", *run, "--checkpoint", w("ck"), "--resume", "--log",
         w("resumed.jsonl"), "--save-params", w("resumed"), "--checkpoint-every", 2)
    check(same_arrays(load_params(w("resumed")), load_params(w("straight"))),
          "resume: weights and buffers bit-identical to the straight run")
    straight, _ = read_log(w("straight.jsonl"))
    split = read_log(w("first.jsonl"))[0] + read_log(w("resumed.jsonl"))[0]
    key = lambda s: (s["epoch"], s["step"], s["loss"], s["accuracy"], s["lr"])  # noqa: E731
    check([key(s) for s in straight] == [key(s) for s in split],
          "resume: the step log continues identically")
    check(sorted(os.listdir(w("ck"))) == [".lock", "latest", "step-00000006", "step-00000007"],
          f"--keep-checkpoints 2 keeps the newest two (got {sorted(os.listdir(w('ck')))})")
    with open(w("ck", "latest")) as f:
        check(f.read().strip() == "step-00000007", "`latest` names the final checkpoint")


def eval_cases(r, w, art, data, common):
    a = r.ok("eval --params", "eval", art, "--data-npy", data, "--params", w("resumed"),
             "--batch-size", 5, "--log", w("eval.jsonl"), "--threads", 1)
    b = r.ok("eval --checkpoint", "eval", art, "--data-npy", data, "--checkpoint", w("ck"),
             "--batch-size", 5, "--threads", 1)
    try:
        ea, eb = json.loads(a.stdout), json.loads(b.stdout)
    except ValueError:
        check(False, f"eval prints one JSON line (got {a.stdout!r})")
        return
    check(ea["samples"] == 18 and 0 <= ea["accuracy"] <= 1, "eval: all 18 samples")
    check((ea["loss"], ea["accuracy"]) == (eb["loss"], eb["accuracy"]),
          "eval: --params and --checkpoint of the same weights agree")
    with open(w("eval.jsonl")) as f:
        check(json.loads(f.read())["loss"] == ea["loss"], "eval: --log holds the result")
    c = r.ok("eval initial", "eval", art, "--data-npy", data, "--batch-size", 5)
    check(json.loads(c.stdout)["loss"] != ea["loss"], "eval: trained weights differ")


def checkpoint_errors(r, w, art, data, common):
    other = w("art_other")
    mlp_artifact(other, hidden=9)
    r.error("resume another model", "fc1.weight", "train", other, "--data-npy", data,
            "--steps", 9, *common, "--checkpoint", w("ck"), "--resume")
    r.error("eval another model's checkpoint", "step-00000007", "eval", other,
            "--data-npy", data, "--checkpoint", w("ck"))
    newest = w("ck", "step-00000007")
    before = open(w("ck", "step-00000006", "tensors.bin"), "rb").read()
    blob = bytearray(open(os.path.join(newest, "tensors.bin"), "rb").read())
    blob[len(blob) // 3] ^= 1
    open(os.path.join(newest, "tensors.bin"), "wb").write(bytes(blob))
    r.error("corrupt checkpoint", "checksum", "train", art, "--data-npy", data, "--steps", 9,
            *common, "--checkpoint", w("ck"), "--resume")
    open(os.path.join(newest, "tensors.bin"), "wb").write(bytes(blob[:-5]))
    r.error("truncated checkpoint", "truncated", "eval", art, "--data-npy", data,
            "--checkpoint", w("ck"))
    check(open(w("ck", "step-00000006", "tensors.bin"), "rb").read() == before,
          "the previous checkpoint is intact")
    shutil.rmtree(newest)
    proc = r.ok("resume from the previous checkpoint", "train", art, "--data-npy", data,
                "--steps", 7, *common, "--checkpoint", w("ck"), "--resume", "--save-params",
                w("again"))
    check(same_arrays(load_params(w("again")), load_params(w("straight"))),
          "resuming from the previous checkpoint reaches the straight run's weights")


def data_errors(r, w, art, common):
    g = np.random.default_rng(5)
    np.save(w("x.npy"), g.random((10, 6), dtype=np.float32))
    np.save(w("y9.npy"), np.zeros(9, np.int64))
    np.save(w("y.npy"), np.zeros(10, np.int64))
    np.save(w("x64.npy"), g.random((10, 6)))
    np.save(w("yf.npy"), np.zeros(10, np.float32))
    np.save(w("xshape.npy"), g.random((10, 7), dtype=np.float32))
    np.save(w("ybig.npy"), np.full(10, 3, np.int64))
    base = ["train", art, "--steps", 2, *common]
    r.error("missing X", "nothere.npy", *base, "--data-npy", f"{w('nothere.npy')},{w('y.npy')}")
    r.error("X/Y lengths", "10 samples but Y 9 labels", *base, "--data-npy",
            f"{w('x.npy')},{w('y9.npy')}")
    r.error("X dtype", "'<f8'", *base, "--data-npy", f"{w('x64.npy')},{w('y.npy')}")
    r.error("Y dtype", "'<f4'", *base, "--data-npy", f"{w('x.npy')},{w('yf.npy')}")
    r.error("sample shape", "samples have shape [7]", *base, "--data-npy",
            f"{w('xshape.npy')},{w('y.npy')}")
    r.error("label range", "label 3", *base, "--data-npy", f"{w('x.npy')},{w('ybig.npy')}")
    r.error("bad pair", "--data-npy takes X.npy,Y.npy", *base, "--data-npy", w("x.npy"))
    r.error("no data", "no data", *base)
    r.error("steps and epochs", "--epochs", *base, "--epochs", 1, "--data-npy",
            f"{w('x.npy')},{w('y.npy')}")
    r.error("bad optimizer", "--optimizer", *base, "--optimizer", "rmsprop", "--data-npy",
            f"{w('x.npy')},{w('y.npy')}")
    r.error("step schedule", "--step-size", *base, "--schedule", "step", "--data-npy",
            f"{w('x.npy')},{w('y.npy')}")
    r.error("resume without dir", "--resume needs --checkpoint", *base, "--resume",
            "--data-npy", f"{w('x.npy')},{w('y.npy')}")
    r.error("too few samples", "give no batch of 16", "train", art, "--steps", 2, "--lr", 0.1,
            "--batch-size", 16, "--data-npy", f"{w('x.npy')},{w('y.npy')}")
    with open(w("bad.gz"), "wb") as f:
        f.write(gzip.compress(b"\0\0\x08\x03" + b"\0" * 40)[:-12])
    os.makedirs(w("fm_bad"), exist_ok=True)
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"):
        shutil.copyfile(w("bad.gz"), w("fm_bad", name))
    r.error("corrupt gzip", "train-images-idx3-ubyte.gz", *base, "--data",
            f"fashion-mnist:{w('fm_bad')}")
    r.error("unknown dataset", "mnist", *base, "--data", "mnist")


def nan_case(r, w, common):
    art = w("art_readout")
    readout_artifact(art)
    x = np.random.default_rng(6).random((12, 6), dtype=np.float32)
    x[2 * B + 1, 3] = np.nan
    np.save(w("nan_x.npy"), x)
    np.save(w("nan_y.npy"), np.zeros(12, np.int64))
    r.error("nan loss", "loss is nan at step 2 (epoch 0)", "train", art, "--data-npy",
            f"{w('nan_x.npy')},{w('nan_y.npy')}", "--steps", 3, "--no-shuffle",
            "--log", w("nan.jsonl"), *common)
    steps, _ = read_log(w("nan.jsonl"))
    check([s["step"] for s in steps] == [0, 1], "nan loss: the log holds steps 0 and 1")


def fashion_case(r, w):
    art = w("art_image")
    image_artifact(art)
    fake_fashion_mnist(w("fmnist"))
    r.ok("train fashion-mnist", "train", art, "--data", f"fashion-mnist:{w('fmnist')}",
         "--epochs", 2, "--batch-size", 8, "--lr", 0.5, "--loss", "ce", "--optimizer",
         "adamw", "--schedule", "cosine", "--log", w("fm.jsonl"), "--threads", 1)
    steps, epochs = read_log(w("fm.jsonl"))
    check(len(steps) == 6 and [e["epoch"] for e in epochs] == [0, 1],
          "fashion-mnist: 3 steps per epoch, 2 epochs")
    check(all("eval_accuracy" in e for e in epochs), "fashion-mnist: t10k is the eval split")
    check(steps[-1]["lr"] < steps[0]["lr"], "cosine schedule decays")
    check(len({s["loss"] for s in steps}) > 2, "fashion-mnist: the loss changes")
    proc = r.ok("eval fashion-mnist", "eval", art, "--data", f"fashion-mnist:{w('fmnist')}")
    check(json.loads(proc.stdout)["samples"] == 10, "eval fashion-mnist: t10k")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snn-run", required=True)
    p.add_argument("--work-dir", required=True)
    args = p.parse_args()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    w = lambda *n: os.path.join(args.work_dir, *n)  # noqa: E731
    r = Runner(args.snn_run)

    art = w("art")
    mlp_artifact(art)
    g = np.random.default_rng(2)
    np.save(w("seq_x.npy"), g.random((18, T, 6), dtype=np.float32))
    np.save(w("seq_y.npy"), g.integers(0, 3, 18).astype(np.int32))
    data = f"{w('seq_x.npy')},{w('seq_y.npy')}"
    common = ["--batch-size", B, "--lr", 0.05, "--optimizer", "adam", "--schedule", "step",
              "--step-size", 3, "--gamma", 0.5, "--seed", 3, "--threads", 2,
              "--eval-data-npy", data]
    train_outputs(r, w, art, data, common)
    resume_cases(r, w, art, data, common)
    eval_cases(r, w, art, data, common)
    checkpoint_errors(r, w, art, data, common)
    data_errors(r, w, art, ["--batch-size", B, "--lr", 0.1, "--repeat-time", T])
    nan_case(r, w, ["--batch-size", B, "--lr", 0.1, "--repeat-time", T])
    fashion_case(r, w)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
