"""Walking the module tree: puts the model in multi-step form, traces it with torch.fx
(neurons, layers, containers and attention are leaves) while computing every node's value on
the example input, drops the dead nodes that shape checks leave, and reruns the graph to get
each node's value."""
from __future__ import annotations

import operator
from collections import OrderedDict
from typing import Any, Dict, Iterator, Tuple

import torch
import torch.fx
from torch import nn

from ..functional import reset_net
from .emit_attention import check_attention
from .kinds import module_kind, named
from .names import strip_prefix


def prepare(net: nn.Module) -> None:
    """Puts the private copy in multi-step form: every MultiStepContainer becomes a plain
    Sequential and every step_mode becomes 'm' (SeqToANNContainer children excepted). A
    single-step model run over T steps by a loop or functional.multi_step_forward and the
    same model in multi-step mode compute the same values (SpikingJelly's step modes differ
    in how the loop is written, not in what is computed), so both export as one program."""
    for name, child in list(net.named_children()):
        if named(child, "MultiStepContainer"):
            child = nn.Sequential(OrderedDict(child.named_children()))
            setattr(net, name, child)
        if not named(child, "SeqToANNContainer"):
            prepare(child)
    if getattr(net, "step_mode", None) == "s":
        net.step_mode = "m"


class _ValueProxy(torch.fx.Proxy):
    """A proxy that knows the value its node takes on the example input, so that Python code
    on shapes takes the branch that input takes: `if x.ndim != 5: raise ...`, `len(x.shape)`,
    `range(x.shape[0])`, `T, N, C, L = x.shape`, an f-string of `x.shape`."""

    def _value(self) -> Any:
        return self.tracer.values[self.node]

    def __len__(self) -> int:
        return len(self._value())

    def __index__(self) -> int:
        return operator.index(self._value())

    def __int__(self) -> int:
        return int(self._value())

    def __iter__(self) -> Iterator[torch.fx.Proxy]:
        # fx's own __iter__ reads the caller's bytecode to count the targets of an unpacking,
        # which Python 3.11's instruction caches break; the value knows its length.
        return self.tracer.iter(self)

    def __format__(self, spec: str) -> str:
        return format(self._value(), spec)

    def __getattr__(self, k: str) -> "_ValueAttribute":
        return _ValueAttribute(self, k)


class _ValueAttribute(_ValueProxy, torch.fx.proxy.Attribute):
    """fx's lazily created attribute proxy (x.shape, x.ndim), with a value as above."""


def _fetch_attr(root: nn.Module, target: str) -> Any:
    obj = root
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv,
                       operator.ifloordiv, operator.imod, operator.ipow, operator.iand,
                       operator.ior, operator.ixor, operator.setitem}


def _mutates(node: torch.fx.Node) -> bool:
    """An in-place op (x.add_(y), x += y, x[i] = y): dropping it when its result is unused
    would drop the change it makes."""
    if node.op == "call_method":
        return node.target.endswith("_") and not node.target.startswith("__")
    if node.op == "call_function":
        return node.target in _IN_PLACE_OPERATORS or \
            getattr(node.target, "__name__", "").endswith("_")
    return False


class _ValueTracer(torch.fx.Tracer):
    """torch.fx tracing that also computes, node by node, the value each node takes on the
    example input (a placeholder's value is the input; a module call runs the module; a
    function, method or attribute evaluates on its arguments' values). Proxies use these
    values where Python needs a real one (bool, len, iteration, an index), so the forward's
    shape checks run as they do in eager mode; the graph keeps only tensor ops."""

    def __init__(self, example_input: torch.Tensor, prefix: str = "") -> None:
        super().__init__()
        self.pending_input = example_input
        self.prefix = prefix
        self.values: Dict[torch.fx.Node, Any] = {}  # fx node -> its value on the example input
        self.evaluating = False

    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return module_kind(m) is not None or super().is_leaf_module(m, qualname)

    # fx patches nn.Module.__call__ and __getattr__ while it traces; a value is computed
    # eagerly, so the modules and parameters it reaches must be the real ones.
    def call_module(self, m, forward, args, kwargs):
        if self.evaluating:
            return forward(*args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        if self.evaluating:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def proxy(self, node: torch.fx.Node) -> torch.fx.Proxy:
        return _ValueProxy(node, self)

    def to_bool(self, obj: torch.fx.Proxy) -> bool:
        return bool(self.values[obj.node])

    def iter(self, obj: torch.fx.Proxy) -> Iterator[torch.fx.Proxy]:
        return iter([obj[i] for i in range(len(self.values[obj.node]))])

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        self.evaluating = True
        try:
            self.values[node] = self._evaluate(node)
        finally:
            self.evaluating = False
        return node

    def _evaluate(self, node: torch.fx.Node) -> Any:
        if node.op == "placeholder":
            if self.pending_input is None:  # a second input: only its default has a value
                if not node.args:
                    raise ValueError("the model's forward must take exactly one tensor")
                return node.args[0]
            x, self.pending_input = self.pending_input, None
            return x
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), self.values.__getitem__)
        if node.op == "call_module":
            m = self.root.get_submodule(node.target)
            if module_kind(m) == "attention":  # refuse here, before its own forward fails on it
                check_attention(strip_prefix(node.target, self.prefix), m,
                                args[0] if args else None)
            return m(*args, **kwargs)
        if node.op == "call_function":
            return node.target(*args, **kwargs)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        if node.op == "get_attr":
            return _fetch_attr(self.root, node.target)
        return None  # output


def _remove_dead_code(gm: torch.fx.GraphModule) -> None:
    """Drops the nodes nothing uses (graph.eliminate_dead_code's rule, in-place ops kept):
    the shape checks of a forward (x.ndim, the comparison) leave such nodes behind."""
    for node in reversed(gm.graph.nodes):
        if not node.users and not node.is_impure() and not _mutates(node):
            gm.graph.erase_node(node)
    gm.recompile()


def trace(model: nn.Module,
          example_input: torch.Tensor) -> Tuple[torch.fx.GraphModule, str]:
    """The fx graph module of `model` on `example_input`, and the prefix of module paths
    (non-empty when `model` itself is a leaf and was traced inside a wrapper)."""
    prefix = ""
    if module_kind(model) is not None:  # a bare neuron / layer: trace it as the child of a wrapper
        model, prefix = nn.Sequential(model), "0."
    tracer = _ValueTracer(example_input.clone(), prefix)  # clone: in-place ops must not reach it
    try:
        with torch.no_grad():
            graph = tracer.trace(model)
    except Exception as e:  # fx raises many types; report them uniformly
        raise ValueError(f"cannot trace {type(model).__name__} with torch.fx: {e}") from None
    finally:
        reset_net(model)  # the values were computed by running the neurons
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise ValueError(f"the model's forward must take exactly one tensor, "
                         f"got {len(placeholders)} inputs")
    gm = torch.fx.GraphModule(model, graph)
    _remove_dead_code(gm)
    return gm, prefix


def run_example(gm: torch.fx.GraphModule,
                example_input: torch.Tensor) -> Dict[torch.fx.Node, Any]:
    """Every node's value when `gm` runs on `example_input`."""
    interp = torch.fx.Interpreter(gm, garbage_collect_values=False)
    with torch.no_grad():
        interp.run(example_input)
    return interp.env
