"""NIR graphs as SpikingJelly-style PyTorch modules: ``load(path, dt=...)``.

A NIR file (docs/nir.md) becomes a multi-step ``nn.Module`` on ``[T, N, ...]`` built from
snnexport's layers, so it trains in an ordinary PyTorch loop, goes through
``spikemesh.analyze / plan / apply`` and exports to ONNX like any other model. Its neurons are
stepped by forward Euler with the time step ``dt`` exactly as ``snn-compile --nir-dt`` steps
them: IF with ``dt r = 1`` is ``neuron.IFNode``, a LIF with ``r`` 1 and
``v_leak == v_reset`` is ``neuron.LIFNode(tau=tau / dt)``, every other neuron a
``NirNeuron`` whose description is the one the compiler writes for the file (the same
statements and constants), run eagerly by evaluating those statements with PyTorch ops. A
neuron fed back its output through an Affine or Linear is a ``recurrent.RecurrentNeuron``
around its ``NirNeuron`` (the feedback one step late, as the compiler's
``snn.recurrent_neuron``). Reading needs h5py (Debian's python3-h5py).
"""
from __future__ import annotations

import keyword
import math
import re
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
from torch import nn

from . import described_neurons as _described
from . import functional, layer, neuron
from . import surrogate as _surrogate
from .described_neurons import DescribedNode, description
from .recurrent import RecurrentNeuron

__all__ = ["load", "read", "NirNeuron", "NirGraphModule", "neuron_parts"]

NEURONS = ("IF", "I", "LI", "LIF", "CubaLI", "CubaLIF", "Threshold", "Delay")


def read(path: str) -> Tuple[Dict[str, dict], List[Tuple[str, str]]]:
    """(nodes, edges) of a NIR file: name -> {"type": str, parameter: ndarray or str}."""
    import h5py
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ValueError(f"{path}: not a NIR file ({e})") from None
    with f:
        if "node" not in f or "nodes" not in f["node"]:
            raise ValueError(f"{path}: no NIR graph in it")
        nodes = {}
        for name, group in f["node"]["nodes"].items():
            fields = {}
            for key, dataset in group.items():
                if isinstance(dataset, h5py.Dataset):
                    value = dataset[()]
                    fields[key] = value.decode() if isinstance(value, bytes) else np.asarray(value)
            nodes[name] = fields
        edges = [(a.decode(), b.decode()) for a, b in f["node"]["edges"][()]] \
            if "edges" in f["node"] else []
    return nodes, edges


def _param(node: dict, name: str, key: str, default: Optional[float] = None):
    """A per-neuron parameter: one float for all neurons, or a list of one value per channel
    (dim 0 of the neurons' shape) where it is the same over each channel's plane."""
    where = f"NIR node '{name}' ({node['type']})"
    if key not in node:
        if default is None:
            raise ValueError(f"{where}: has no parameter '{key}'")
        return float(default)
    values = np.asarray(node[key], dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{where}: parameter '{key}' is not a finite number")
    if np.unique(values).size == 1:
        return float(values.reshape(-1)[0])
    planes = values.reshape(values.shape[0] if values.ndim else 1, -1)
    if not np.all(planes == planes[:, :1]):
        raise ValueError(f"{where}: parameter '{key}' differs within a channel (one value per "
                         "channel, dim 0 of the neurons' shape, is supported)")
    return planes[:, 0].tolist()


# The constant each parameter gives a description, and how (the compiler's table).
_SOURCES = {"k": ("r", lambda v, dt: dt * v), "tau_syn": ("tau_syn", lambda v, dt: v / dt),
            "r": ("r", None), "w_in": ("w_in", None), "v_threshold": ("v_threshold", None),
            "v_reset": ("v_reset", None), "threshold": ("threshold", None)}


def neuron_parts(kind: str, node: dict, dt: float, name: str = "") -> dict:
    """The description snn-compile --nir-dt writes for NIR neuron `node` (docs/nir.md):
    the same statements, the same constants, the same per-channel operands
    (lib/NIR/NIRNeurons.cpp is the compiler's)."""
    raw = {key: _param(node, name, key) for key, value in node.items()
           if key != "type" and not isinstance(value, str)}
    varying = {key for key, value in raw.items() if isinstance(value, list)}
    for start in ("v_leak",) + (("v_reset",) if kind == "IF" else ()):
        if start in varying:
            raise ValueError(f"NIR node '{name}' ({kind}): parameter '{start}' differs between "
                             "channels, but the membrane starts at it (one value is supported)")
    first = dict(node, **{k: (v[0] if isinstance(v, list) else v) for k, v in raw.items()})
    parts = _uniform_parts(kind, first, dt, name, varying)
    sources = dict(_SOURCES, tau=("tau_mem" if kind.startswith("Cuba") else "tau",
                                  lambda v, dt: v / dt))
    for constant in list(parts["constants"]):
        param, transform = sources.get(constant, (None, None))
        if param in varying:
            parts["constants"].pop(constant)
            parts["operands"].append(constant)
            parts["values"] = parts.get("values", []) + [
                [transform(v, dt) if transform else v for v in raw[param]]]
    return parts


def _uniform_parts(kind: str, node: dict, dt: float, name: str, varying: set) -> dict:
    """neuron_parts with one value per parameter; `varying` forces the general forms."""
    p = lambda key, default=None: float(_param(node, name, key, default))  # noqa: E731
    fires = kind in ("IF", "LIF", "CubaLIF")
    if kind == "Delay":
        return _delay_parts(name, p("delay"), dt, "delay" in varying)
    if kind == "Threshold":
        return description({"v": 0.0}, {"threshold": p("threshold")}, ["h = x"],
                           fire="h - threshold", reset="none")
    if kind in ("IF", "I"):
        gain, v_reset = dt * p("r"), p("v_reset", 0.0) if fires else 0.0
        unit = gain == 1.0 and "r" not in varying
        constants = {} if unit else {"k": gain}
        charge = ["h = v + x" if unit else "h = v + k * x"]
        if not fires:
            return description({"v": 0.0}, constants, charge, fire="", reset="none", output="h")
        constants.update(v_threshold=p("v_threshold"), v_reset=v_reset)
        return description({"v": v_reset}, constants, charge)
    cuba = kind.startswith("Cuba")
    tau = p("tau_mem" if cuba else "tau") / dt
    r, v_leak = p("r"), p("v_leak")
    states, constants, charge = {"v": v_leak}, {}, []
    if cuba:
        states["i"] = 0.0
        constants.update(tau_syn=p("tau_syn") / dt, w_in=p("w_in", 1.0))
        charge.append("i = i + (w_in * x - i) / tau_syn")
    v_reset = p("v_reset", 0.0) if fires else None
    canonical = (not cuba and r == 1.0 and fires and v_leak == v_reset and
                 not varying & {"r", "v_reset"})
    charge.append("h = v + (x - (v - v_reset)) / tau" if canonical else
                  f"h = v + (r * {'i' if cuba else 'x'} - (v - v_leak)) / tau")
    constants["tau"] = tau
    if not canonical:
        constants.update(r=r, v_leak=v_leak)
    if not fires:
        return description(states, constants, charge, fire="", reset="none", output="h")
    constants.update(v_threshold=p("v_threshold"), v_reset=v_reset)
    return description(states, constants, charge)


def _delay_parts(name: str, delay: float, dt: float, varies: bool) -> dict:
    """A Delay of K = delay / dt whole steps: the input into state m, along d1 .. dK one step
    each; the output reads dK before it moves (the compiler's description)."""
    steps = delay / dt
    if varies or not steps >= 0 or abs(steps - round(steps)) > 1e-6 * max(1.0, round(steps)) \
            or round(steps) > 256:
        raise ValueError(f"NIR node '{name}' (Delay): the delay must be one whole number of "
                         f"steps of dt (up to 256) for all neurons, got {delay!r} over {dt!r}")
    k = int(round(steps))
    states = {"m": 0.0, **{f"d{i}": 0.0 for i in range(1, k + 1)}}
    update = ([f"o = d{k}"] if k else []) + [f"d{i} = d{i - 1}" if i > 1 else "d1 = m"
                                               for i in range(k, 0, -1)]
    return description(states, {}, ["h = x"], fire="", reset="none", update=update,
                       output="o" if k else "h")


class NirNeuron(DescribedNode):
    """A NIR neuron stepped by forward Euler: its description's statements evaluated with
    PyTorch ops (PyTorch's float32 evaluation of the same Python expressions, as the
    compiler's evaluator defines it), the spike through the sigmoid surrogate (alpha 4)."""

    def __init__(self, kind: str, parts: dict, step_mode: str = "s") -> None:
        self.kind, self.parts = kind, parts
        constants = parts["constants"]
        super().__init__(constants.get("v_threshold", constants.get("threshold", 1.0)),
                         constants.get("v_reset", 0.0), _surrogate.Sigmoid(alpha=4.0),
                         False, step_mode)
        # Per-channel values: frozen [C] parameters under the names the statements use.
        for operand, values in zip(parts["operands"], parts.get("values", [])):
            if operand in self.__dict__:
                delattr(self, operand)
            self.register_parameter(operand, nn.Parameter(
                torch.tensor(values, dtype=torch.float32), requires_grad=False))

    def reset(self) -> None:
        self.state: Optional[Dict[str, torch.Tensor]] = None
        self.v = 0.0
        self.v_seq = None

    def neuron_description(self) -> dict:
        return self.parts

    def _run(self, statements: List[str], names: dict) -> None:
        for statement in statements:
            target, expression = (part.strip() for part in statement.split("=", 1))
            names[target] = eval(expression, {"__builtins__": {}}, names)  # our own statements

    def single_step_forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.state is None:
            self.state = {k: torch.full_like(x, v) for k, v in self.parts["states"].items()}
        names = dict(self.parts["constants"], **self.state, x=x)
        for operand in self.parts["operands"]:  # [C] on the channel dim of a step's [N, C, ...]
            names[operand] = getattr(self, operand).reshape(-1, *[1] * (x.dim() - 2))
        self._run(self.parts["charge"], names)
        h = names["h"]
        self._log_h(h)
        if self.parts["fire"]:
            names["s"] = self.surrogate_function(eval(self.parts["fire"], {"__builtins__": {}},
                                                      names))
        membrane = next(iter(self.parts["states"]))
        if self.parts["reset"] == "hard":
            names[membrane] = names["s"] * names["v_reset"] + (1.0 - names["s"]) * h
        else:
            names[membrane] = h
        self._run(self.parts["update"], names)
        self.state = {k: names[k] for k in self.parts["states"]}
        self.v = self.state[membrane]
        return eval(self.parts["output"], {"__builtins__": {}}, names)


def _pair(node: dict, key: str, default) -> Tuple[int, int]:
    value = np.asarray(node.get(key, default)).reshape(-1)
    return int(value[0]), int(value[-1])


def _padding(name: str, node: dict) -> Tuple[int, int]:
    """A Conv2d's padding: numbers, "valid" or "same" (stride 1, half the dilated kernel's
    extra span on each side), as the compiler reads it."""
    value = node.get("padding", 0)
    if not isinstance(value, str):
        return _pair(node, "padding", 0)
    if value == "valid":
        return 0, 0
    kernel = np.asarray(node["weight"]).shape[2:]
    dilation, stride = _pair(node, "dilation", 1), _pair(node, "stride", 1)
    spans = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if value != "same" or stride != (1, 1) or any(s % 2 for s in spans):
        raise ValueError(f"NIR node '{name}' (Conv2d): padding {value!r} is not supported "
                         "(numbers, 'valid', or 'same' with stride 1 and an even span)")
    return spans[0] // 2, spans[1] // 2


def _frozen(module: nn.Module, weight: np.ndarray) -> nn.Module:
    module.weight.data.copy_(torch.from_numpy(np.array(weight, np.float32)))
    module.weight.requires_grad_(False)
    return module


def _layer(name: str, node: dict, shape: Tuple[int, ...], dt: float) -> Tuple[nn.Module, tuple]:
    """The module of one NIR node on a per-sample input of `shape`, and its output shape."""
    kind = node["type"]
    if kind in ("Affine", "Linear"):
        w = np.asarray(node["weight"], np.float32)
        m = layer.Linear(w.shape[1], w.shape[0], bias=kind == "Affine")
        m.weight.data.copy_(torch.from_numpy(w))
        if kind == "Affine":
            m.bias.data.copy_(torch.from_numpy(np.asarray(node["bias"], np.float32)))
        return m, (w.shape[0],)
    if kind == "Conv2d":
        w = np.asarray(node["weight"], np.float32)
        m = layer.Conv2d(w.shape[1] * int(node.get("groups", 1)), w.shape[0], w.shape[2:],
                         _pair(node, "stride", 1), _padding(name, node),
                         _pair(node, "dilation", 1), int(node.get("groups", 1)),
                         bias="bias" in node)
        m.weight.data.copy_(torch.from_numpy(w))
        if "bias" in node:
            m.bias.data.copy_(torch.from_numpy(np.asarray(node["bias"], np.float32)))
    elif kind == "SumPool2d":
        k = _pair(node, "kernel_size", None)
        m = _frozen(layer.Conv2d(shape[0], shape[0], k, _pair(node, "stride", k),
                                 _pair(node, "padding", 0), groups=shape[0], bias=False),
                    np.ones((shape[0], 1, *k)))
    elif kind == "AvgPool2d":
        k = _pair(node, "kernel_size", None)
        m = layer.AvgPool2d(k, _pair(node, "stride", k), _pair(node, "padding", 0))
    elif kind == "Flatten":
        start, end = int(node.get("start_dim", 0)), int(node.get("end_dim", -1))
        m = layer.Flatten(start % len(shape) + 1, end % len(shape) + 1)
    elif kind == "Scale":
        scale = np.broadcast_to(np.asarray(node["scale"], np.float32), shape)
        if len(shape) == 1:
            m = _frozen(layer.Linear(shape[0], shape[0], bias=False), np.diag(scale))
        else:
            m = _frozen(layer.Conv2d(shape[0], shape[0], 1, groups=shape[0], bias=False),
                        scale.reshape(shape[0], -1)[:, :1].reshape(shape[0], 1, 1, 1))
    elif kind in NEURONS:
        return _neuron(name, node, dt), shape
    else:
        raise ValueError(f"NIR node '{name}' ({kind}): the primitive is not supported")
    with torch.no_grad():
        out = m(torch.zeros(1, *shape)).shape[1:]
    return m, tuple(out)


def _stepped_parts(name: str, node: dict, dt: Optional[float]) -> dict:
    """neuron_parts of `node`, which needs `dt` unless it is a Threshold."""
    kind = node["type"]
    if dt is None and kind != "Threshold":
        raise ValueError(f"NIR node '{name}' ({kind}): needs the time step its equations are "
                         "stepped by, which the file does not give: pass dt=SECONDS")
    return neuron_parts(kind, node, dt or 1.0, name)


def _neuron(name: str, node: dict, dt: Optional[float]) -> nn.Module:
    kind, parts = node["type"], _stepped_parts(name, node, dt)
    c = parts["constants"]
    sigmoid = _surrogate.Sigmoid(alpha=4.0)
    if parts["operands"]:
        return NirNeuron(kind, parts)
    if parts["charge"] == ["h = v + x"] and parts["reset"] == "hard":
        return neuron.IFNode(c["v_threshold"], c["v_reset"], sigmoid)
    if parts["charge"] == ["h = v + (x - (v - v_reset)) / tau"] and c["tau"] > 1.0:
        return neuron.LIFNode(c["tau"], True, c["v_threshold"], c["v_reset"], sigmoid)
    return NirNeuron(kind, parts)


def _feedback(nodes: Dict[str, dict], edges: List[Tuple[str, str]]) -> Dict[str, str]:
    """neuron -> the Affine or Linear that reads only it and feeds only it back (the loops
    the compiler takes as recurrent neurons)."""
    found: Dict[str, str] = {}
    for name, node in nodes.items():
        src = [a for a, b in edges if b == name]
        dst = [b for a, b in edges if a == name]
        if (node["type"] in ("Affine", "Linear") and len(src) == 1 and dst == src and
                nodes[src[0]]["type"] in NEURONS and src[0] not in found):
            found[src[0]] = name
    return found


def _recurrent(name: str, node: dict, rec_name: str, rec: dict, shape: Tuple[int, ...],
               dt: Optional[float]) -> nn.Module:
    """Neuron `name` fed back through `rec_name` as a RecurrentNeuron."""
    if len(shape) != 1:
        raise ValueError(f"NIR node '{name}' ({node['type']}): is fed back through "
                         f"'{rec_name}', which needs neurons of one dimension, not {list(shape)}")
    w = np.asarray(rec.get("weight", np.zeros(0)), np.float32)
    if w.shape != (shape[0], shape[0]):
        raise ValueError(f"NIR node '{rec_name}' ({rec['type']}): feeds '{name}' back into "
                         f"itself, so its 'weight' must be [{shape[0]}, {shape[0]}]")
    affine = rec["type"] == "Affine"
    if affine and np.asarray(rec.get("bias", np.zeros(0))).size != shape[0]:
        raise ValueError(f"NIR node '{rec_name}' ({rec['type']}): needs a 'bias' of "
                         f"{shape[0]} values")
    cell = NirNeuron(node["type"], _stepped_parts(name, node, dt))
    m = RecurrentNeuron(cell, shape[0], bias=affine)
    with torch.no_grad():
        m.recurrent.weight.copy_(torch.from_numpy(w))
        if affine:
            m.recurrent.bias.copy_(torch.from_numpy(np.asarray(rec["bias"], np.float32)))
    return m


def _module_names(nodes: List[str]) -> Dict[str, str]:
    """A submodule name for each node: its name with every character that cannot stand in a
    Python name written '_', a keyword ('if') followed by '_', a clash numbered."""
    names: Dict[str, str] = {}
    for node in nodes:
        name = re.sub(r"[^0-9A-Za-z_]", "_", node)
        name = name + "_" if keyword.iskeyword(name) else name
        base, k = name, 1
        while name in names.values():
            name, k = f"{base}_{k}", k + 1
        names[node] = name
    return names


class NirGraphModule(nn.Module):
    """A NIR graph's nodes in an order where each follows its inputs; edges into one node add
    up. Submodules are named after the nodes (_module_names)."""

    def __init__(self, order: List[str], sources: Dict[str, List[str]], input_name: str,
                 output_source: List[str], modules: Dict[str, nn.Module]) -> None:
        super().__init__()
        self.order, self.sources = order, sources
        self.input_name, self.output_source = input_name, output_source
        self.names = _module_names(order)
        self.nodes = nn.ModuleDict({self.names[k]: m for k, m in modules.items()})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values = {self.input_name: x}
        for name in self.order:
            inputs = [values[s] for s in self.sources[name]]
            total = inputs[0]
            for other in inputs[1:]:
                total = total + other
            values[name] = self.nodes[self.names[name]](total)
        out = [values[s] for s in self.output_source]
        total = out[0]
        for other in out[1:]:
            total = total + other
        return total


def load(path: str, *, dt: Optional[float] = None) -> NirGraphModule:
    """The NIR file `path` as a multi-step module on [T, N, ...], its neurons stepped by `dt`
    (the unit of the file's time constants; needed unless the only neuron is Threshold).
    A neuron fed back its output through an Affine or Linear is a RecurrentNeuron. Raises
    ValueError naming the node for what the compiler would refuse: another cycle of edges, a
    primitive it does not support, a parameter that differs within a channel."""
    if dt is not None and not (isinstance(dt, (int, float)) and dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt must be a number > 0, got {dt!r}")
    nodes, edges = read(path)
    inputs = [n for n, v in nodes.items() if v["type"] == "Input"]
    outputs = [n for n, v in nodes.items() if v["type"] == "Output"]
    if len(inputs) != 1 or len(outputs) != 1:
        raise ValueError(f"{path}: a graph of one Input and one Output is supported")
    feedback = _feedback(nodes, edges)
    loops = set(feedback.values())
    sources: Dict[str, List[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a not in loops and b not in loops:
            sources[b].append(a)
    order, shapes, modules = [], {inputs[0]: tuple(int(d) for d in nodes[inputs[0]]["shape"])}, {}
    pending = [n for n in nodes if n not in inputs + outputs and n not in loops]
    while pending:
        ready = [n for n in pending if sources[n] and all(s in shapes for s in sources[n])]
        if not ready:
            raise ValueError(f"NIR node '{pending[0]}' ({nodes[pending[0]]['type']}): has no "
                             "input or is on a cycle of edges (the cycles supported are a "
                             "neuron's output fed back to it through one Affine or Linear)")
        for name in ready:
            shape = shapes[sources[name][0]]
            if name in feedback:
                modules[name] = _recurrent(name, nodes[name], feedback[name],
                                           nodes[feedback[name]], shape, dt)
                shapes[name] = shape
            else:
                modules[name], shapes[name] = _layer(name, nodes[name], shape, dt)
            order.append(name)
            pending.remove(name)
    model = NirGraphModule(order, {n: sources[n] for n in order}, inputs[0],
                           sources[outputs[0]], modules)
    functional.set_step_mode(model, "m")
    return model


# The exporter writes a NirNeuron as the Neuron node of its description, like the described
# classes of described_neurons.py.
_described.DESCRIBED[NirNeuron.__name__] = NirNeuron.neuron_description
