"""fx node -> ONNX nodes: walks the traced graph in order and writes each node through the
emitters (modules, neurons, attention, tensor functions), the element-wise Add / Mul and the
means and sums; tracks which values are time-major [T, N, ...]."""
from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.fx
from torch import nn

from .emit_attention import emit_attention
from .emit_neurons import NeuronEmitter
from .emit_tensor import TensorFunctions, Value
from .fold import emit_region
from .graph import Graph, Shape
from .kinds import container_children, describe, module_kind
from .names import INPUT_NAME

_ADD = {operator.add, operator.iadd, torch.add}
_MUL = {operator.mul, operator.imul, torch.mul}


class Translator(TensorFunctions):
    """Writes the fx graph of `gm` into `g`. `env` holds each fx node's value on the example
    input; `input_node` is the placeholder, time-major unless the model repeats it over T."""

    def __init__(self, gm: torch.fx.GraphModule, g: Graph, env: Dict[torch.fx.Node, Any],
                 input_node: torch.fx.Node, input_time_major: bool) -> None:
        self.gm, self.g, self.env = gm, g, env
        self.values: Dict[torch.fx.Node, Value] = {}  # fx node -> (onnx value, time_major)
        self.neurons = NeuronEmitter(g)
        self.input_node, self.input_time_major = input_node, input_time_major
        self.shapes = set()     # fx nodes holding sizes, not tensors
        self.unsqueezed = {}    # x.unsqueeze(0) of the [N, ...] input -> the input

    def arg(self, a: Any, where: str) -> Value:
        """The ONNX value of operand `a`; raises when it is not a tensor of the network."""
        if not isinstance(a, torch.fx.Node) or a not in self.values:
            raise ValueError(f"'{where}': operand {a!r} is not a tensor of the network "
                             "(constants and scalars are unsupported)")
        return self.values[a]

    def run(self) -> Value:
        """Translates every node; returns the output's value."""
        out = None
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                self.values[n] = (INPUT_NAME, self.input_time_major)
            elif n.op == "call_module":
                self.values[n] = self.call_module(n)
            elif n.op in ("call_function", "call_method"):
                value = self.call_function(n)
                if value is not None:
                    self.values[n] = value
            elif n.op == "output":
                out = n.args[0]
            else:
                raise ValueError(f"unsupported operation '{n.op}' ({n.target}) in the forward")
        if not isinstance(out, torch.fx.Node):
            raise ValueError("the model must return exactly one tensor")
        return self.arg(out, "output")

    def call_module(self, n: torch.fx.Node) -> Value:
        """A leaf module call: attention, a neuron, or a multi-step stateless layer."""
        m = self.gm.get_submodule(n.target)
        path, where = n.target, self.g.name(n.target)
        if len(n.args) != 1 or n.kwargs:
            raise ValueError(f"'{where}': a module must be called with exactly one tensor")
        x, tm = self.arg(n.args[0], where)
        if not tm:
            raise ValueError(f"'{where}' ({describe(m)}) is applied to a tensor that is not "
                             "time-major [T, N, ...] (e.g. after the mean readout)")
        kind = module_kind(m)
        if kind == "attention":
            return emit_attention(self.g, self.neurons, path, m, x, self.env[n.args[0]]), True
        if kind == "neuron":
            if getattr(m, "decode", None) == "mean-mem":  # a non-spiking neuron's readout
                v = self.neurons.emit(path, m, x, self.shape_of(n.args[0], True))
                return self.g.node("ReduceMean", [v], self.g.unique(f"{where}/decode"),
                                   self.shape_of(n, False), axes=[0], keepdims=0), False
            return self.neurons.emit(path, m, x, self.shape_of(n, True)), True
        if kind == "encoder":
            raise ValueError(f"'{where}' ({describe(m)}) is random: encode the data before "
                             "the network (the artifact takes the encoded [T, N, ...] input)")
        if getattr(m, "step_mode", "m") != "m":
            raise ValueError(f"'{where}' ({describe(m)}) has step_mode='s'; "
                             "export needs multi-step ('m') modules")
        if isinstance(m, nn.Identity):
            return x, True
        if kind == "container":
            steps = container_children(path, m)
        elif kind == "layer" or isinstance(m, (nn.Linear, nn.Dropout)):
            # A plain nn.Linear / Dropout on [T, N, F] equals its folded per-step form.
            steps = [(path, m)]
        else:
            raise ValueError(f"unsupported module {describe(m)} at '{where}' (wrap per-step "
                             "torch modules in layer.SeqToANNContainer)")
        return emit_region(self.g, path, steps, x, self.env[n.args[0]])[0], True

    def call_function(self, n: torch.fx.Node) -> Optional[Value]:
        """A function or method call; None when its result is not a tensor (a shape)."""
        t = n.target
        name = t if isinstance(t, str) else getattr(t, "__name__", repr(t))
        value, handled = self.tensor_function(n, name)
        if handled:
            return value
        if t in _ADD or t == "add":
            return self.binary(n, "Add", name)
        if t in _MUL or t == "mul":
            return self.binary(n, "Mul", name)
        if t in (torch.mean, "mean"):
            return self.mean(n, name)
        if t in (torch.sum, "sum"):
            return self.sum(n, name)
        raise ValueError(f"unsupported function or method '{name}' (fx node '{n.name}')")

    def binary(self, n: torch.fx.Node, op: str, name: str) -> Value:
        """Add / Mul of two tensors of the same shape."""
        if len(n.args) != 2 or any(k != "alpha" or v != 1 for k, v in n.kwargs.items()):
            raise ValueError(f"'{n.name}': only {name}(a, b) of two tensors is supported")
        (a, tma), (b, tmb) = (self.arg(v, n.name) for v in n.args)
        sa, sb = self.env[n.args[0]].shape, self.env[n.args[1]].shape
        if sa != sb or tma != tmb:
            raise ValueError(f"'{n.name}': {op} needs two tensors of the same shape, "
                             f"got {tuple(sa)} and {tuple(sb)}")
        return self.g.node(op, [a, b], self.g.unique(n.name), self.shape_of(n, tma)), tma

    @staticmethod
    def reduction_args(n: torch.fx.Node) -> Tuple[Any, Any, bool]:
        """(dim, keepdim, well-formed) of x.mean / x.sum / torch.mean / torch.sum."""
        args = list(n.args[1:])
        dim = args[0] if args else n.kwargs.get("dim")
        keepdim = args[1] if len(args) > 1 else n.kwargs.get("keepdim", False)
        extra = set(n.kwargs) - {"dim", "keepdim"}
        return dim, keepdim, not extra and len(args) <= 2

    def over_time(self, n: torch.fx.Node, name: str) -> str:
        """The operand of a readout x.mean(0) / x.sum(0) over T; raises for any other."""
        dim, keepdim, ok = self.reduction_args(n)
        x, tm = self.arg(n.args[0], n.name)
        if dim not in (0, (0,), [0]) or keepdim or not ok or not tm:
            also = ", or a mean over per-step dims (>= 2)" if name == "mean" else ""
            raise ValueError(f"'{n.name}': only the readout x.{name}(0) over T{also} is "
                             "supported")
        return x

    def per_step_axes(self, n: torch.fx.Node) -> Optional[List[int]]:
        """The sorted reduced dims when x.mean(dim[, keepdim]) of a time-major x reduces
        per-step dims only (every one >= 2); None otherwise."""
        dim, keepdim, ok = self.reduction_args(n)
        dims = [dim] if isinstance(dim, int) else dim
        if not ok or not isinstance(keepdim, bool) or not isinstance(dims, (list, tuple)) \
                or not dims or not all(isinstance(d, int) for d in dims):
            return None
        if not self.values.get(n.args[0], (None, False))[1]:
            return None
        rank = len(self.env[n.args[0]].shape)
        axes = sorted({d % rank for d in dims})
        return axes if axes[0] >= 2 else None

    def mean(self, n: torch.fx.Node, name: str) -> Value:
        """A mean over per-step dims (stays time-major) or the readout over T."""
        axes = self.per_step_axes(n)
        if axes is not None:  # stays time-major: [T, N, ...] minus the reduced dims
            x, _ = self.arg(n.args[0], n.name)
            keepdims = int(self.reduction_args(n)[1])
            return self.g.node("ReduceMean", [x], self.g.unique(n.name),
                               self.shape_of(n, True), axes=axes, keepdims=keepdims), True
        return self.g.node("ReduceMean", [self.over_time(n, "mean")], self.g.unique(n.name),
                           self.shape_of(n, False), axes=[0], keepdims=0), False

    def sum(self, n: torch.fx.Node, name: str) -> Value:
        """The readout x.sum(0) over T."""
        x, node = self.over_time(n, "sum"), self.g.unique(n.name)
        axes = self.g.init(node + "/axes", np.array([0], np.int64))  # opset 13: an input
        return self.g.node("ReduceSum", [x, axes], node, self.shape_of(n, False),
                           keepdims=0), False

    def shape_of(self, n: torch.fx.Node, time_major: bool) -> Shape:
        """The ONNX shape of `n`'s value: N symbolic, T fixed."""
        s = list(self.env[n].shape)
        return [s[0], "N"] + s[2:] if time_major else ["N"] + s[1:]
