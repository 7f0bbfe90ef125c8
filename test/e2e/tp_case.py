"""A hand-written tensor-parallel model for the tp end-to-end tests (train_tp_handwritten.py).

The model, T time steps of a static [N, 16] input (direct encoding), as one unsplit program
(plan mode none) and as partitioned programs over a tp axis of W members (Megatron style, every
collective of docs/artifact-format.md "Partitioned programs"):

    unsplit                              rank at tp coordinate c (parts of W)
    fc0 linear 16->24 (no bias), bn0,    the same (replicated; SyncBatchNorm and the
    lif0, dropout p=0.2                  global batch's Dropout mask over the dp axis)
                                         backward_all_reduce                 (f)
    fc1 linear 24->32, lif1              fc1 column part: weight/bias split along 0
    fc2 linear 32->20 (no bias)          fc2 row part: weight split along 1 -> partial sums
                                         all_reduce                          (g)
    bias_add fc2.bias, lif2              the same (replicated bias, added once)
                                         all_slice axis 2 -> [T, N, 20/W]
    bias_add fc3.bias, lif3              fc3.bias split along 0 (this part's features)
                                         all_gather axis 2 -> [T, N, 20]
    fc4 linear 20->10, if_out, mean_time the same (replicated)

`numpy_forward` evaluates the unsplit model in eval mode (BatchNorm with its running statistics,
Dropout the identity; SpikingJelly's multi-step LIF/IF, hard reset to 0) and returns every neuron
layer's spikes, for the firing-rate checks.
"""
import json
import os
import shutil

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
from snnexport.export.names import DOMAIN, MESH_COORDINATE_KEY

T, IN, H0, H1, H2, C = 4, 16, 24, 32, 20, 10
# The global batch a planned manifest records as planned for (snn-run requires one, uses none).
PLANNED_BATCH = 8
TAU, DROPOUT, BN_EPS = 2.0, 0.2, 1e-5

# name -> (shape, split dim over tp or None); BUFFERS are BatchNorm's running statistics
PARAMETERS = {
    "fc0.weight": ((H0, IN), None),
    "bn0.weight": ((H0,), None), "bn0.bias": ((H0,), None),
    "bn0.running_mean": ((H0,), None), "bn0.running_var": ((H0,), None),
    "fc1.weight": ((H1, H0), 0), "fc1.bias": ((H1,), 0),
    "fc2.weight": ((H2, H1), 1), "fc2.bias": ((H2,), None),
    "fc3.bias": ((H2,), 0),
    "fc4.weight": ((C, H2), None), "fc4.bias": ((C,), None),
}
BUFFERS = ("bn0.running_mean", "bn0.running_var")


def make_weights(seed=0):
    """float32 weights whose layers fire at 5-50% on uniform [0, 1) inputs."""
    g = np.random.default_rng(seed)

    def normal(shape, mean, std):
        return (mean + std * g.standard_normal(shape)).astype(np.float32)
    return {
        "fc0.weight": normal((H0, IN), 0.12, 0.25),
        "bn0.weight": normal((H0,), 1.0, 0.1), "bn0.bias": normal((H0,), 0.6, 0.1),
        "bn0.running_mean": normal((H0,), 0.85, 0.3),
        "bn0.running_var": np.full((H0,), 0.1, np.float32),
        "fc1.weight": normal((H1, H0), 0.15, 0.35), "fc1.bias": normal((H1,), 0.3, 0.1),
        "fc2.weight": normal((H2, H1), 0.12, 0.35), "fc2.bias": normal((H2,), 0.3, 0.1),
        "fc3.bias": normal((H2,), 0.6, 0.1),
        "fc4.weight": normal((C, H2), 0.12, 0.45), "fc4.bias": normal((C,), 0.3, 0.1),
    }


def part(name, value, coordinate, members):
    dim = PARAMETERS[name][1]
    if dim is None or members == 1:
        return value
    return np.split(value, members, axis=dim)[coordinate]


class _Program:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def init(self, name, value):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value, np.float32), name))
        return name

    def node(self, op, inputs, name, output=None, **attrs):
        out = output or f"v{self.count}"
        self.count += 1
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, domain=DOMAIN,
                                           **attrs))
        return out

    def lif(self, x, name):
        return self.node("lif_node", [x], name, v_threshold=1.0, v_reset=0.0, detach_reset=0,
                         surrogate="sigmoid", alpha=4.0, tau=TAU, decay_input=1)

    def model(self):
        x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [T, "N", IN])
        y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", C])
        graph = helper.make_graph(self.nodes, "program", [x], [y], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid(DOMAIN, 1)],
                                 ir_version=8, producer_name="tp_case")


def build_program(weights, coordinate=0, members=1, axis="tp", collectives=None):
    """The program of tp coordinate `coordinate` of `members` (members 1: the unsplit model,
    without collectives unless `collectives`)."""
    p = _Program()
    w = {k: p.init(k, part(k, v, coordinate, members)) for k, v in weights.items()}
    split = members > 1 if collectives is None else collectives
    v = p.node("linear", ["input", w["fc0.weight"]], "fc0")
    v = p.node("batch_norm", [v, w["bn0.weight"], w["bn0.bias"], w["bn0.running_mean"],
                              w["bn0.running_var"]], "bn0", eps=BN_EPS, momentum=0.1)
    v = p.lif(v, "lif0")
    v = p.node("dropout", [v], "drop0", p=DROPOUT)
    if split:
        v = p.node("backward_all_reduce", [v], "tp_enter", mesh_axis=axis)
    v = p.node("linear", [v, w["fc1.weight"], w["fc1.bias"]], "fc1")
    v = p.lif(v, "lif1")
    v = p.node("linear", [v, w["fc2.weight"]], "fc2")
    if split:
        v = p.node("all_reduce", [v], "fc2_sum", mesh_axis=axis)
    v = p.node("bias_add", [v, w["fc2.bias"]], "fc2_bias", axis=2)
    v = p.lif(v, "lif2")
    if split:
        v = p.node("all_slice", [v], "lif3_part", mesh_axis=axis, axis=2)
    v = p.node("bias_add", [v, w["fc3.bias"]], "fc3_bias", axis=2)
    v = p.lif(v, "lif3")
    if split:
        v = p.node("all_gather", [v], "lif3_whole", mesh_axis=axis, axis=2)
    v = p.node("linear", [v, w["fc4.weight"], w["fc4.bias"]], "fc4")
    v = p.node("if_node", [v], "if_out", v_threshold=1.0, v_reset=0.0, detach_reset=0,
               surrogate="sigmoid", alpha=4.0)
    p.node("mean_time", [v], "readout", output="output")
    return p.model()


def _plan(mode, partitioned, axes, optimizer):
    return {"mode": mode, "objective": "speed", "optimizer_strategy": optimizer,
            "partitioned": partitioned, "memopt_level": 0,
            "batch_size": 0 if mode == "none" else PLANNED_BATCH,
            "dp_mesh_dim": axes.index("dp") if "dp" in axes else -1,
            "tp_mesh_dim": axes.index("tp") if "tp" in axes else -1, "pp_mesh_dim": -1,
            "pp_microbatches": 0, "pp_schedule": "none", "pp_virtual_stages": 0,
            "pp_layout": [], "pp_memopt_stages": [], "pp_delay_wgrad": False,
            "pp_stage_units": [], "tensor_parallel_pairs": [], "decided_by": "tp_case",
            "rationale": []}


def write_artifact(out, weights, mode="none", mesh=None, programs=None, optimizer="none"):
    """Writes an artifact directory. mode none: the unsplit program on one rank. mode tp or
    fsdp_tp: `mesh` = (axes, shape) with a 'tp' axis; one program per tp coordinate, ranks
    numbered row-major over the mesh. `programs` overrides the ONNX models (tests of bad
    input); `optimizer` is the plan's optimizer_strategy (none or zero)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    axes, shape = mesh or ([], [])
    world = int(np.prod(shape)) if shape else 1
    partitioned = mode != "none"
    members = shape[axes.index("tp")] if partitioned else 1
    ranks = {c: [] for c in range(members)}
    for r in range(world):
        coords = np.unravel_index(r, shape) if shape else ()
        ranks[int(coords[axes.index("tp")]) if partitioned else 0].append(r)
    entries = []
    for c in range(members):
        model = (programs or {}).get(c) or build_program(weights, c, members)
        if partitioned:  # as snn-compile does: whose program it is
            helper.set_model_props(model, {MESH_COORDINATE_KEY: f"tp={c}"})
        onnx.save(model, os.path.join(out, f"program_{c}.onnx"))
        entries.append({"file": f"program_{c}.onnx", "ranks": ranks[c]})
    params = []
    for name, (pshape, dim) in PARAMETERS.items():
        entry = {"name": name, "shape": list(pshape),
                 "kind": "buffer" if name in BUFFERS else "parameter", "sharding": "replicated"}
        if partitioned and dim is not None:
            entry.update(sharding="split", split_dim=dim, mesh_axis="tp")
        params.append(entry)
    manifest = {
        "format": "spikemesh-artifact", "version": 2, "producer": "tp_case",
        "source": "tp_case.py", "world_size": world, "mesh": {"axes": axes, "shape": shape},
        "programs": entries,
        "input": {"name": "input", "shape": [T, -1, IN], "time_major": True},
        "output": {"name": "output", "shape": [-1, C], "time_major": False},
        "parameters": params, "plan": _plan(mode, partitioned, axes, optimizer)}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
    return out


def _neuron(x, tau=None):
    """SpikingJelly's multi-step LIF (decay_input, hard reset to 0) or IF (tau None) over
    x [T, ...]: the spikes."""
    v = np.zeros_like(x[0])
    spikes = []
    for t in range(x.shape[0]):
        h = v + (x[t] - v) / np.float32(tau) if tau else v + x[t]
        s = (h >= 1.0).astype(np.float32)
        v = h * (1.0 - s)
        spikes.append(s)
    return np.stack(spikes)


def numpy_forward(weights, x_static, batch_statistics=False):
    """The unsplit model on a static batch [N, 16]: {layer: spikes [T, N, ...]}, and 'output'.
    `batch_statistics`: BatchNorm normalises with the batch's statistics over T*N, as in
    training (Dropout stays the identity)."""
    w = weights
    x = np.repeat(x_static[None].astype(np.float32), T, axis=0)
    h = x @ w["fc0.weight"].T
    mean, var = w["bn0.running_mean"], w["bn0.running_var"]
    if batch_statistics:
        mean, var = h.reshape(-1, H0).mean(axis=0), h.reshape(-1, H0).var(axis=0)
    h = (h - mean) / np.sqrt(var + np.float32(BN_EPS))
    s0 = _neuron(h * w["bn0.weight"] + w["bn0.bias"], TAU)
    s1 = _neuron(s0 @ w["fc1.weight"].T + w["fc1.bias"], TAU)
    s2 = _neuron(s1 @ w["fc2.weight"].T + w["fc2.bias"], TAU)
    s3 = _neuron(s2 + w["fc3.bias"], TAU)
    out = _neuron(s3 @ w["fc4.weight"].T + w["fc4.bias"])
    return {"lif0": s0, "lif1": s1, "lif2": s2, "lif3": s3, "if_out": out,
            "output": out.mean(axis=0)}
