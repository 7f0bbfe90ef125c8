#!/usr/bin/env python3
"""snn-run against eager PyTorch, on artifacts written with the onnx package.

Spikes must be bit-identical to the per-step SpikingJelly-style reference
(docs/semantics.md); bad input must give one `error:` line, exit code 1
and no output file. Exits 77 (ctest "skipped") if torch or onnx is missing.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

# Bit-identical spikes need the same GEMMs on both sides: the in-process reference runs BLAS
# with one thread, as snn-run does (set before torch is imported; test/e2e does the same).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    import numpy as np
    import onnx
    import torch
    import torch.nn.functional as F
    from onnx import helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL:", message)


# --------------------------------------------------------------------------
# Artifacts
# --------------------------------------------------------------------------

def node(op_type, inputs, output, name, **attrs):
    return helper.make_node(op_type, inputs, [output], name=name,
                            domain="spikemesh", **attrs)


def write_artifact(path, nodes, initializers, in_shape, out_shape, out_time_major):
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    graph = helper.make_graph(
        nodes, "program",
        [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("output", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.detach().numpy(), k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("spikemesh", 1)])
    onnx.save(model, os.path.join(path, "program_0.onnx"))
    manifest = {
        "format": "spikemesh-artifact", "version": 1, "producer": "test",
        "source": "test", "world_size": 1, "mesh": {"axes": [], "shape": []},
        "programs": [{"file": "program_0.onnx", "ranks": [0]}],
        "input": {"name": "input", "shape": in_shape, "time_major": True},
        "output": {"name": "output", "shape": out_shape, "time_major": out_time_major},
        "parameters": [{"name": k, "shape": list(v.shape), "kind": "parameter",
                        "sharding": "replicated"} for k, v in initializers.items()],
        "plan": {"mode": "none"},
    }
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def neuron_attrs(kind, v_reset, v_th, tau, decay_input):
    attrs = dict(v_threshold=v_th, detach_reset=0, surrogate="sigmoid", alpha=4.0)
    if v_reset is not None:
        attrs["v_reset"] = v_reset
    if kind == "lif_node":
        attrs["tau"] = tau
    if kind != "if_node":
        attrs["decay_input"] = int(decay_input)
    return attrs


# --------------------------------------------------------------------------
# PyTorch reference (SpikingJelly's per-step float32 expressions)
# --------------------------------------------------------------------------

def reference_neuron(x, kind, v_reset, v_th, tau=2.0, decay_input=True, w=None):
    vr = 0.0 if v_reset is None else v_reset
    v = torch.full_like(x[0], vr)
    spikes = []
    for t in range(x.shape[0]):
        xt = x[t]
        if kind == "if_node":
            h = v + xt
        elif kind == "lif_node":
            h = v + (xt - (v - vr)) / tau if decay_input else v - (v - vr) / tau + xt
        else:
            k = w.sigmoid()
            h = v + (xt - (v - vr)) * k if decay_input else v - (v - vr) * k + xt
        s = (h - v_th >= 0).to(x)
        v = v_reset * s + (1.0 - s) * h if v_reset is not None else h - s * v_th
        spikes.append(s)
    return torch.stack(spikes)


def seq(x, fn):
    """SpikingJelly's SeqToANNContainer: fold [T, N, ...], apply, unfold."""
    y = fn(x.flatten(0, 1))
    return y.view(x.shape[0], x.shape[1], *y.shape[1:])


# --------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------

def run(snn_run, args):
    return subprocess.run([snn_run] + args, capture_output=True, text=True)


def run_ok(snn_run, artifact, x, work, extra=()):
    np.save(os.path.join(work, "x.npy"), x.numpy())
    out = os.path.join(work, "y.npy")
    if os.path.exists(out):
        os.remove(out)
    result = run(snn_run, ["infer", artifact, "--input", os.path.join(work, "x.npy"),
                           "--output", out, *extra])
    check(result.returncode == 0, f"{artifact}: exit {result.returncode}: {result.stderr}")
    check(result.stdout == "", f"{artifact}: unexpected stdout {result.stdout!r}")
    return torch.from_numpy(np.load(out)) if result.returncode == 0 else None


def expect_error(snn_run, args, needle, out):
    result = run(snn_run, args)
    lines = result.stderr.splitlines()
    check(result.returncode == 1, f"{args}: want exit 1, got {result.returncode}")
    check(len(lines) == 1 and lines[0].startswith("error: "),
          f"{args}: want one error line, got {result.stderr!r}")
    check(needle in result.stderr, f"{args}: {needle!r} not in {result.stderr!r}")
    check(not os.path.exists(out), f"{args}: left {out} behind")


def test_neurons(snn_run, work):
    torch.manual_seed(0)
    x = torch.rand(8, 3, 257) * 3 - 1
    w = torch.tensor(-0.4)
    for kind in ["if_node", "lif_node", "plif_node"]:
        for decay_input in ([True] if kind == "if_node" else [True, False]):
            for v_reset in [-0.1, None]:
                label = f"{kind}_decay{int(decay_input)}_{'soft' if v_reset is None else 'hard'}"
                artifact = os.path.join(work, label)
                inputs = ["input"] + (["sn.w"] if kind == "plif_node" else [])
                write_artifact(artifact,
                               [node(kind, inputs, "output", "sn",
                                     **neuron_attrs(kind, v_reset, 0.7, 1.7, decay_input))],
                               {"sn.w": w} if kind == "plif_node" else {},
                               [8, -1, 257], [8, -1, 257], True)
                got = run_ok(snn_run, artifact, x, work, ["--threads", "2"])
                want = reference_neuron(x, kind, v_reset, 0.7, 1.7, decay_input, w)
                if got is not None:
                    check(torch.equal(got, want), f"{label}: spikes differ from PyTorch "
                          f"({(got != want).sum().item()} of {want.numel()})")
                    rate = want.mean().item()
                    check(0.05 < rate < 0.95, f"{label}: degenerate firing rate {rate}")


def conv_net(work):
    torch.manual_seed(1)
    p = {
        "conv.weight": torch.randn(6, 1, 3, 3) * 0.6, "conv.bias": torch.randn(6) * 0.1,
        "bn.weight": torch.rand(6) + 0.5, "bn.bias": torch.randn(6) * 0.1,
        "bn.running_mean": torch.randn(6) * 0.1, "bn.running_var": torch.rand(6) + 0.5,
        "fc.weight": torch.randn(10, 6 * 4 * 4) * 0.2, "fc.bias": torch.randn(10) * 0.1,
        "sn2.w": torch.tensor(0.25),
    }
    nodes = [
        node("conv2d", ["input", "conv.weight", "conv.bias"], "v0", "conv",
             stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1),
        node("batch_norm", ["v0", "bn.weight", "bn.bias", "bn.running_mean",
                            "bn.running_var"], "v1", "bn", eps=1e-5, momentum=0.1),
        node("lif_node", ["v1"], "v2", "sn1", **neuron_attrs("lif_node", 0.0, 1.0, 2.0, True)),
        node("max_pool2d", ["v2"], "v3", "pool", kernel_size=[2, 2], stride=[2, 2],
             padding=[0, 0], dilation=[1, 1], ceil_mode=0),
        node("flatten", ["v3"], "v4", "flat"),
        node("dropout", ["v4"], "v5", "drop", p=0.5),
        node("linear", ["v5", "fc.weight", "fc.bias"], "v6", "fc"),
        node("plif_node", ["v6", "sn2.w"], "v7", "sn2",
             **neuron_attrs("plif_node", None, 0.5, 2.0, True)),
        node("mean_time", ["v7"], "output", "readout"),
    ]
    artifact = os.path.join(work, "convnet")
    write_artifact(artifact, nodes, p, [4, -1, 1, 8, 8], [-1, 10], False)

    def reference(image):
        x = image.unsqueeze(0).repeat(4, 1, 1, 1, 1)
        y = seq(x, lambda z: F.batch_norm(F.conv2d(z, p["conv.weight"], p["conv.bias"], 1, 1),
                                          p["bn.running_mean"], p["bn.running_var"],
                                          p["bn.weight"], p["bn.bias"], False, 0.1, 1e-5))
        y = reference_neuron(y, "lif_node", 0.0, 1.0, 2.0, True)
        y = seq(y, lambda z: F.max_pool2d(z, 2, 2)).flatten(2)
        y = seq(y, lambda z: F.linear(z, p["fc.weight"], p["fc.bias"]))
        y = reference_neuron(y, "plif_node", None, 0.5, w=p["sn2.w"])
        return y.mean(0)

    return artifact, reference


def test_conv_net(snn_run, work):
    artifact, reference = conv_net(work)
    image = torch.rand(5, 1, 8, 8) * 2
    with torch.no_grad():
        want = reference(image)
    got = run_ok(snn_run, artifact, image, work, ["--repeat-time", "4"])
    if got is not None:
        check(torch.equal(got, want), f"convnet: output differs, max "
              f"{(got - want).abs().max().item()}")
        check(want.sum().item() > 0, "convnet: no spikes at the readout")
    # The same input already repeated gives the same result.
    got = run_ok(snn_run, artifact, image.unsqueeze(0).repeat(4, 1, 1, 1, 1), work)
    if got is not None:
        check(torch.equal(got, want), "convnet: [T, N, ...] input differs")


def test_errors(snn_run, work):
    artifact, _ = conv_net(work)
    out = os.path.join(work, "err.npy")
    x = os.path.join(work, "bad_shape.npy")
    np.save(x, np.zeros((4, 2, 1, 9, 8), np.float32))
    expect_error(snn_run, ["infer", artifact, "-i", x, "-o", out],
                 "input has shape [4, 2, 1, 9, 8], the artifact expects [4, ?, 1, 8, 8]", out)
    np.save(x, np.zeros((3, 2, 1, 8, 8), np.float32))
    expect_error(snn_run, ["infer", artifact, "-i", x, "-o", out, "--repeat-time", "3"],
                 "--repeat-time 3 does not match the artifact's T = 4", out)
    np.save(x, np.zeros((4, 2, 1, 8, 8), np.float64))
    expect_error(snn_run, ["infer", artifact, "-i", x, "-o", out],
                 "dtype '<f8' is not supported", out)
    np.save(x, np.zeros((4, 2, 1, 8, 8), np.float32))

    program = os.path.join(artifact, "program_0.onnx")
    data = open(program, "rb").read()
    with open(program, "wb") as f:
        f.write(data[: len(data) // 2])
    expect_error(snn_run, ["infer", artifact, "-i", x, "-o", out], program, out)

    model = onnx.load_from_string(data)
    model.graph.node[4].op_type = "unflatten"
    onnx.save(model, program)
    expect_error(snn_run, ["infer", artifact, "-i", x, "-o", out],
                 "node 'flat' has unknown op_type 'unflatten'", out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--snn-run", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    if os.path.exists(args.work_dir):
        shutil.rmtree(args.work_dir)
    os.makedirs(args.work_dir)
    test_neurons(args.snn_run, args.work_dir)
    test_conv_net(args.snn_run, args.work_dir)
    test_errors(args.snn_run, args.work_dir)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("all snn-run reference checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
