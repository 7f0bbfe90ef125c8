"""Hand-written pipeline artifacts for the pp end-to-end test (train_pp_handwritten.py).

A spiking MLP of eight units, T time steps of a static [N, 16] input (direct encoding), written
as one program (plan mode none) or cut into K logical stage programs with explicit recv/send
nodes (plan mode pp, docs/artifact-format.md "Pipeline programs"), K = 2, 4 or 8:

    unit 0  fc.0 linear 16->24, lif0         sends fc.0's output (slot 0) and lif0 (slot 1)
    unit 1  fc.1 linear 24->24 (no bias) + fc.0's output, lif1
    unit 2  fc.2 linear 24->24 (no bias), bn2 (BatchNorm over T*N), lif2
    unit 3-6  fc.k linear 24->24, lif_k (unit 4: then Dropout p=0.2)
    unit 7  fc.7 linear 24->10, lif7, mean_time -> output [N, 10]

`PipeMLP` is the same network in PyTorch (snnexport's multi-step Linear / BatchNorm1d and LIF
neurons), `calibrate` sets its weights so that every neuron layer fires at about 20% in training
mode, and `accumulating_reference` is the trajectory a pipeline must follow: one process,
gradient accumulation over the same microbatches (docs/training.md, "Microbatches").
"""
import json
import os
import shutil

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper, TensorProto
from snnexport import functional, layer, neuron
from snnexport.export.names import DOMAIN, MESH_COORDINATE_KEY
from snnexport.training import data as tdata
from snnexport.training import loop

T, IN, H, C, UNITS = 4, 16, 24, 10, 8
# The global batch a planned manifest records as planned for (snn-run requires one, uses none).
PLANNED_BATCH = 8
BN_EPS, BN_MOMENTUM, DROPOUT = 1e-5, 0.1, 0.2


class PipeMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        widths = [(IN, H)] + [(H, H)] * 6 + [(H, C)]
        self.fc = torch.nn.ModuleList(
            [layer.Linear(i, o, bias=k not in (1, 2)) for k, (i, o) in enumerate(widths)])
        self.bn2 = layer.BatchNorm1d(H, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.drop4 = layer.Dropout(DROPOUT)
        self.sn = torch.nn.ModuleList([neuron.LIFNode(tau=2.0) for _ in range(UNITS)])
        functional.set_step_mode(self, "m")  # SpikingJelly's default is single-step

    def forward(self, x, spikes=None):
        def fire(k, v):
            s = self.sn[k](v)
            if spikes is not None:
                spikes[f"lif{k}"] = s.detach()
            return s
        pre0 = self.fc[0](x)
        s = fire(0, pre0)
        s = fire(1, self.fc[1](s) + pre0)
        s = fire(2, self.bn2(self.fc[2](s)))
        for k in range(3, UNITS):
            s = fire(k, self.fc[k](s))
            if k == 4:
                s = self.drop4(s)
        return s.mean(0)


def state(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()
            if not k.endswith("num_batches_tracked")}


def load_state(model, arrays):
    with torch.no_grad():
        for k, v in model.state_dict().items():
            if k in arrays:
                v.copy_(torch.from_numpy(arrays[k]))


def rates(model, x):
    """{layer: firing rate} of a training-mode forward (BatchNorm with batch statistics) on
    x [T, N, 16], leaving the model's buffers as they were."""
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    spikes = {}
    model.train()
    functional.reset_net(model)
    with torch.no_grad():
        model(x, spikes)
    functional.reset_net(model)
    model.load_state_dict(saved)
    return {k: float(v.mean()) for k, v in spikes.items()}


def _shift_until(model, x, k, param, target=0.2, lo=-2.0, hi=2.0):
    """Bisects an additive shift of `param` until layer k fires at about `target` (firing
    rises with the shift: the layer's inputs are spikes or in [0, 1))."""
    base = param.detach().clone()
    for _ in range(30):
        mid = (lo + hi) / 2
        with torch.no_grad():
            param.copy_(base + mid)
        if rates(model, x)[f"lif{k}"] < target:
            lo = mid
        else:
            hi = mid


def _running_statistics(model, x):
    """bn2's running statistics: those of fc.2's output on x, so that eval mode (infer,
    eval) fires about as training does."""
    seen = []
    hook = model.fc[2].register_forward_hook(lambda m, i, o: seen.append(o.detach()))
    functional.reset_net(model)
    with torch.no_grad():
        model(x)
    hook.remove()
    functional.reset_net(model)
    h = seen[0].flatten(0, 1)
    with torch.no_grad():
        model.bn2.running_mean.copy_(h.mean(0))
        model.bn2.running_var.copy_(h.var(0))


def calibrate(x, seed=0):
    """A PipeMLP whose layers fire at about 20% on x (training mode)."""
    torch.manual_seed(seed)
    model = PipeMLP()
    for k in range(UNITS):
        if k == 2:
            _running_statistics(model, x)
        # bn2 normalises away a shift of fc.2; its bias sets the rate instead.
        param = model.bn2.bias if k == 2 else model.fc[k].weight
        _shift_until(model, x, k, param, lo=-2.0 if k == 2 else -0.5, hi=3.0 if k == 2 else 0.5)
    return model


def repeat(x_static):
    return torch.from_numpy(np.repeat(x_static[None], T, axis=0))


# ------------------------------------------------------------------ programs
class _Program:
    def __init__(self, stage):
        self.nodes, self.inits, self.infos, self.count, self.stage = [], [], [], 0, stage

    def node(self, op, inputs, name, outputs=None, **attrs):
        out = [f"v{self.count}"] if outputs is None else outputs
        self.count += 1
        self.nodes.append(helper.make_node(op, inputs, out, name=name, domain=DOMAIN,
                                           **attrs))
        return out[0] if out else None

    def lif(self, x, k):
        return self.node("lif_node", [x], f"sn.{k}", v_threshold=1.0, v_reset=0.0,
                         detach_reset=0, surrogate="sigmoid", alpha=4.0, tau=2.0,
                         decay_input=1)

    def recv(self, slot):
        v = self.node("recv", [], f"recv{slot}", peer=self.stage - 1, slot=slot)
        self.infos.append(helper.make_tensor_value_info(v, TensorProto.FLOAT, [T, "N", H]))
        return v

    def send(self, value, slot):
        self.node("send", [value], f"send{slot}", outputs=[], peer=self.stage + 1, slot=slot)


def _unit(p, k, values, weights):
    """Unit k on `values` (the previous unit's hand-over); returns its hand-over."""
    w = {name: name for name in weights}
    if k == 0:
        pre = p.node("linear", [values[0], w["fc.0.weight"], w["fc.0.bias"]], "fc.0")
        return [pre, p.lif(pre, 0)]           # defined in this order: slots 0, 1
    if k == 1:
        v = p.node("linear", [values[1], w["fc.1.weight"]], "fc.1")
        return [p.lif(p.node("add", [v, values[0]], "add1"), 1)]
    bias = [w[f"fc.{k}.bias"]] if k != 2 else []  # none before the BatchNorm
    v = p.node("linear", [values[0], w[f"fc.{k}.weight"], *bias], f"fc.{k}")
    if k == 2:
        v = p.node("batch_norm", [v, "bn2.weight", "bn2.bias", "bn2.running_mean",
                                  "bn2.running_var"], "bn2", eps=BN_EPS, momentum=BN_MOMENTUM)
    s = p.lif(v, k)
    if k == 4:
        s = p.node("dropout", [s], "drop4", p=DROPOUT)
    if k == UNITS - 1:
        p.node("mean_time", [s], "readout", outputs=["output"])
        return []
    return [s]


def unit_of(name):
    if name.startswith("bn2"):
        return 2
    return int(name.split(".")[1])


def stage_program(weights, first, last, stage, stages):
    p = _Program(stage)
    for name, value in weights.items():
        if first <= unit_of(name) < last:
            p.inits.append(numpy_helper.from_array(np.ascontiguousarray(value, np.float32), name))
    values = ["input"] if first == 0 else [p.recv(s) for s in range(2 if first == 1 else 1)]
    for k in range(first, last):
        values = _unit(p, k, values, weights)
    for slot, value in enumerate(values):
        p.send(value, slot)
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [T, "N", IN])] \
        if first == 0 else []
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", C])] \
        if last == UNITS else []
    graph = helper.make_graph(p.nodes, f"stage{stage}", inputs, outputs, p.inits,
                              value_info=p.infos)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(DOMAIN, 1)],
                             ir_version=8, producer_name="pp_case")


def _plan(mode, schedule=None, microbatches=0, virtual=0, delay=False, dp=1):
    pp = mode == "pp"
    return {"mode": mode, "objective": "speed", "optimizer_strategy": "none",
            "partitioned": False, "memopt_level": 0,
            "batch_size": 0 if mode == "none" else PLANNED_BATCH,
            "dp_mesh_dim": 0 if pp and dp > 1 else -1, "tp_mesh_dim": -1,
            "pp_mesh_dim": (1 if dp > 1 else 0) if pp else -1,
            "pp_microbatches": microbatches, "pp_schedule": schedule or "none",
            "pp_virtual_stages": virtual, "pp_layout": [], "pp_memopt_stages": [],
            "pp_delay_wgrad": delay, "pp_stage_units": [], "tensor_parallel_pairs": [],
            "communication": [], "decided_by": "pp_case", "rationale": []}


def _parameters(weights, stages):
    entries = []
    for name, value in weights.items():
        kind = "buffer" if "running" in name else "parameter"
        entry = {"name": name, "shape": list(value.shape), "kind": kind, "sharding": "replicated"}
        if stages:
            entry["stage"] = unit_of(name) * stages // UNITS
        entries.append(entry)
    return entries


def _manifest(world, mesh, programs, parameters, plan):
    return {"format": "spikemesh-artifact", "version": 2, "producer": "pp_case",
            "source": "pp_case.py", "world_size": world,
            "mesh": {"axes": mesh[0], "shape": mesh[1]}, "programs": programs,
            "input": {"name": "input", "shape": [T, -1, IN], "time_major": True},
            "output": {"name": "output", "shape": [-1, C], "time_major": False},
            "parameters": parameters, "plan": plan}


def write_pipeline(out, weights, ranks, stages, schedule, microbatches, delay=False, dp=1):
    """K = `stages` stage programs over a pp axis of `ranks` (and a dp axis of `dp`)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    per = UNITS // stages
    programs = []
    for k in range(stages):
        model = stage_program(weights, k * per, (k + 1) * per, k, stages)
        # As snn-compile does: the pp coordinate that runs stage k.
        helper.set_model_props(model, {MESH_COORDINATE_KEY: f"pp={k % ranks}"})
        onnx.save(model, os.path.join(out, f"program_{k}.onnx"))
        members = [d * ranks + k % ranks for d in range(dp)]
        programs.append({"file": f"program_{k}.onnx", "ranks": members, "stage": k})
    mesh = (["dp", "pp"], [dp, ranks]) if dp > 1 else (["pp"], [ranks])
    plan = _plan("pp", schedule, microbatches, stages // ranks, delay, dp)
    manifest = _manifest(dp * ranks, mesh, programs, _parameters(weights, stages), plan)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
    return out


def write_unsplit(out, weights):
    """The same network as one program (plan mode none)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    model = stage_program(weights, 0, UNITS, 0, 1)
    onnx.save(model, os.path.join(out, "program_0.onnx"))
    programs = [{"file": "program_0.onnx", "ranks": [0]}]
    manifest = _manifest(1, ([], []), programs, _parameters(weights, 0), _plan("none"))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
    return out


# ------------------------------------------------------------------ the reference
def accumulating_reference(weights, x, y, steps, batch, microbatches, lr, momentum, loss,
                           seed):
    """SGD on PipeMLP from `weights` over the SplitMix64 order of (x, y) (snn-run's with
    --seed `seed`, which also seeds Dropout), each global batch of `batch` cut into `microbatches` chunks along N: fresh
    neurons and BatchNorm batch statistics per chunk, (loss_m / M).backward(), one step per
    batch; BatchNorm's running statistics updated by every chunk in order (a dp x pp run
    combines its replicas' updates into the same). Returns (losses, accuracies, final
    state)."""
    model = PipeMLP()
    load_state(model, weights)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    torch.manual_seed(seed)  # as snn-run: immediately before the first step (Dropout)
    order = tdata.splitmix64_order(seed, 0, len(x))
    losses, accuracies = [], []
    for step in range(steps):
        idx = order[step * batch:(step + 1) * batch]
        xb, yb = repeat(x[idx]), torch.from_numpy(y[idx])
        opt.zero_grad(set_to_none=True)
        chunk_losses, correct = [], 0
        for xm, ym in zip(xb.chunk(microbatches, 1), yb.chunk(microbatches)):
            functional.reset_net(model)
            rate = loop.firing_rate(model(xm))
            value = loop.loss_of(rate, ym, loss)
            (value / microbatches).backward()
            chunk_losses.append(float(value.detach()))
            correct += loop.correct_of(rate.detach(), ym)
        opt.step()
        functional.reset_net(model)
        losses.append(sum(chunk_losses) / microbatches)
        accuracies.append(correct / batch)
    return losses, accuracies, state(model)
