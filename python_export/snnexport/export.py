"""PyTorch SNN -> ONNX, exactly the profile of docs/onnx-profile.md.

The model is traced with torch.fx (neurons and multi-step layers are leaves), run once on the
example input to learn every shape, and each fx node becomes ONNX nodes.
"""
from __future__ import annotations

import copy
import math
import operator
import os
from collections import OrderedDict
from typing import Any, Dict, List, Tuple, Union

import numpy as np
import onnx
import torch
import torch.fx
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from . import encoding as _encoding
from . import layer as _layer
from . import neuron as _neuron
from .export_attention import check_attention, emit_attention
from .export_tensor import TensorFunctions, direct_encoding_steps
from .functional import reset_net

IR_VERSION = 8
OPSET = 13
DOMAIN = "spikemesh"
FROZEN_KEY = "spikemesh.frozen"  # model metadata: comma-separated frozen initializer names
NEURON_TYPES = ("IFNode", "LIFNode", "ParametricLIFNode")
_SURROGATES = {"Sigmoid": "sigmoid", "ATan": "atan"}
_ADD = {operator.add, operator.iadd, torch.add}
_MUL = {operator.mul, operator.imul, torch.mul}

PathLike = Union[str, "os.PathLike[str]"]
Dim = Union[int, str]  # an ONNX dimension: a size, or a symbolic name such as "N"


# ---------------------------------------------------------------- module classification
def _sj_module(m, part):
    """True when `m` comes from SpikingJelly's `part` (neuron / layer / encoding) module or
    package: `spikingjelly.activation_based.layer` and its submodules (`...layer.misc`)."""
    mod = type(m).__module__
    return mod.startswith("spikingjelly.") and f".{part}." in mod + "."


def _named(m, *names):
    """snnexport's or SpikingJelly's class of one of these names."""
    mod = type(m).__module__
    return type(m).__name__ in names and (mod.startswith("spikingjelly") or
                                          mod.startswith(__name__.rsplit(".", 1)[0]))


def _kind(m):
    """'neuron', 'container', 'layer' (multi-step stateless), 'attention' (Spikformer's
    SpikingSelfAttention), 'encoder' or None (trace through / torch)."""
    if _named(m, "SpikingSelfAttention"):
        return "attention"
    if isinstance(m, _neuron.BaseNode) or _sj_module(m, "neuron"):
        return "neuron"
    if _named(m, "SeqToANNContainer"):
        return "container"
    if _named(m, "MultiStepContainer"):
        return None  # replaced by a Sequential before tracing (_prepare)
    if isinstance(m, _encoding.PoissonEncoder) or _sj_module(m, "encoding"):
        return "encoder"
    if isinstance(m, _layer._StepLayer) or _named(m, "VotingLayer") or _sj_module(m, "layer"):
        return "layer"
    return None


def _prepare(net: nn.Module) -> None:
    """Puts the private copy in multi-step form: every MultiStepContainer becomes a plain
    Sequential and every step_mode becomes 'm' (SeqToANNContainer children excepted). A
    single-step model run over T steps by a loop or functional.multi_step_forward and the
    same model in multi-step mode compute the same values (SpikingJelly's step modes differ
    in how the loop is written, not in what is computed), so both export as one program."""
    for name, child in list(net.named_children()):
        if _named(child, "MultiStepContainer"):
            child = nn.Sequential(OrderedDict(child.named_children()))
            setattr(net, name, child)
        if not _named(child, "SeqToANNContainer"):
            _prepare(child)
    if getattr(net, "step_mode", None) == "s":
        net.step_mode = "m"


class _ValueProxy(torch.fx.Proxy):
    """A proxy that knows the value its node takes on the example input, so that Python code
    on shapes takes the branch that input takes: `if x.ndim != 5: raise ...`, `len(x.shape)`,
    `range(x.shape[0])`, `T, N, C, L = x.shape`, an f-string of `x.shape`."""

    def _value(self):
        return self.tracer.values[self.node]

    def __len__(self):
        return len(self._value())

    def __index__(self):
        return operator.index(self._value())

    def __int__(self):
        return int(self._value())

    def __iter__(self):
        # fx's own __iter__ reads the caller's bytecode to count the targets of an unpacking,
        # which Python 3.11's instruction caches break; the value knows its length.
        return self.tracer.iter(self)

    def __format__(self, spec):
        return format(self._value(), spec)

    def __getattr__(self, k):
        return _ValueAttribute(self, k)


class _ValueAttribute(_ValueProxy, torch.fx.proxy.Attribute):
    """fx's lazily created attribute proxy (x.shape, x.ndim), with a value as above."""


def _fetch_attr(root, target):
    obj = root
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv,
                       operator.ifloordiv, operator.imod, operator.ipow, operator.iand,
                       operator.ior, operator.ixor, operator.setitem}


def _mutates(node):
    """An in-place op (x.add_(y), x += y, x[i] = y): dropping it when its result is unused
    would drop the change it makes."""
    if node.op == "call_method":
        return node.target.endswith("_") and not node.target.startswith("__")
    if node.op == "call_function":
        return node.target in _IN_PLACE_OPERATORS or \
            getattr(node.target, "__name__", "").endswith("_")
    return False


class _Tracer(torch.fx.Tracer):
    """torch.fx tracing that also computes, node by node, the value each node takes on the
    example input (a placeholder's value is the input; a module call runs the module; a
    function, method or attribute evaluates on its arguments' values). Proxies use these
    values where Python needs a real one (bool, len, iteration, an index), so the forward's
    shape checks run as they do in eager mode; the graph keeps only tensor ops."""

    def __init__(self, example_input, prefix=""):
        super().__init__()
        self.pending_input = example_input
        self.prefix = prefix
        self.values = {}  # fx node -> its value on the example input
        self.evaluating = False

    def is_leaf_module(self, m, qualname):
        return _kind(m) is not None or super().is_leaf_module(m, qualname)

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

    def proxy(self, node):
        return _ValueProxy(node, self)

    def to_bool(self, obj):
        return bool(self.values[obj.node])

    def iter(self, obj):
        return iter([obj[i] for i in range(len(self.values[obj.node]))])

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        self.evaluating = True
        try:
            self.values[node] = self._evaluate(node)
        finally:
            self.evaluating = False
        return node

    def _evaluate(self, node):
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
            if _kind(m) == "attention":  # refuse here, before its own forward fails on it
                check_attention(_strip_prefix(node.target, self.prefix), m,
                                args[0] if args else None)
            return m(*args, **kwargs)
        if node.op == "call_function":
            return node.target(*args, **kwargs)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        if node.op == "get_attr":
            return _fetch_attr(self.root, node.target)
        return None  # output


def _describe(m):
    return f"{type(m).__module__}.{type(m).__name__}"


def _pair(v):
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


# ---------------------------------------------------------------- ONNX graph builder
def _strip_prefix(path, prefix):
    """The name of module `path` in the file: `prefix` is the wrapper of a bare leaf."""
    if prefix and (path + ".").startswith(prefix):
        path = path[len(prefix):]
    return path or "model"


class _Graph:
    def __init__(self, T, prefix):
        self.T = T
        self.prefix = prefix  # stripped from names when the root module itself is a leaf
        self.nodes, self.inits, self.infos = [], {}, {}
        self.used_names = {}

    def name(self, path):
        return _strip_prefix(path, self.prefix)

    def unique(self, base):
        """Node names must be unique; a module called twice gets '#1', '#2', ..."""
        k = self.used_names.get(base, 0)
        self.used_names[base] = k + 1
        return base if k == 0 else f"{base}#{k}"

    def init(self, name, array):
        array = np.asarray(array)
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        if name not in self.inits:
            self.inits[name] = numpy_helper.from_array(array, name)
        return name

    def param(self, path, tensor_name, tensor):
        return self.init(self.name(f"{path}.{tensor_name}"), tensor.detach().cpu().numpy())

    def node(self, op, inputs, name, shape, domain="", **attrs):
        """Adds one node whose single output value is named like the node; returns the name."""
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, domain=domain, **attrs))
        self.infos[name] = shape
        return name


# ---------------------------------------------------------------- per-step (folded) ops
def _run_per_step(m, x):
    """Runs a stateless module on a folded [T*N, ...] tensor whatever its step_mode."""
    mode = getattr(m, "step_mode", None)
    if mode is not None:
        m.step_mode = "s"
    try:
        return m(x)
    finally:
        if mode is not None:
            m.step_mode = mode


def _conv_name(m):
    return "Conv1d" if isinstance(m, nn.Conv1d) else "Conv2d"


def _conv_pads(path, m):
    """The begin pads of each spatial dim (the end pads are the same)."""
    if m.padding_mode != "zeros":
        raise ValueError(f"{path}: {_conv_name(m)} padding_mode={m.padding_mode!r} is "
                         "unsupported")
    if isinstance(m.padding, str):
        if m.padding == "valid":
            return [0] * len(m.kernel_size)
        total = [d * (k - 1) for d, k in zip(m.dilation, m.kernel_size)]
        if any(t % 2 for t in total):
            raise ValueError(f"{path}: {_conv_name(m)} padding='same' with asymmetric pads "
                             "is unsupported")
        return [t // 2 for t in total]
    return list(m.padding)


def _emit_conv(g, path, m, x, shape):
    pads = _conv_pads(path, m)
    ins = [x, g.param(path, "weight", m.weight)]
    if m.bias is not None:
        ins.append(g.param(path, "bias", m.bias))
    return g.node("Conv", ins, g.unique(g.name(path)), shape, kernel_shape=list(m.kernel_size),
                  strides=list(m.stride), pads=pads * 2, dilations=list(m.dilation),
                  group=m.groups)


def _emit_conv1d(g, path, m, x, shape):
    """Conv1d of a folded [C, 1, L] view as ATen computes conv1d: a conv2d whose kernel,
    stride, padding and dilation are 1 / 0 along the unit dim; weight [O, C/g, 1, k]."""
    pads = [0] + _conv_pads(path, m)
    w = m.weight.detach().cpu().numpy()
    w = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
    ins = [x, g.init(g.name(f"{path}.weight"), w)]
    if m.bias is not None:
        ins.append(g.param(path, "bias", m.bias))
    return g.node("Conv", ins, g.unique(g.name(path)), shape,
                  kernel_shape=[1] + list(m.kernel_size), strides=[1] + list(m.stride),
                  pads=pads * 2, dilations=[1] + list(m.dilation), group=m.groups)


def _emit_linear(g, path, m, x, shape, x_rank):
    if x_rank != 2:
        raise ValueError(f"{path}: Linear on a per-step tensor of rank {x_rank} (need 2)")
    ins = [x, g.param(path, "weight", m.weight)]
    if m.bias is not None:
        ins.append(g.param(path, "bias", m.bias))
    return g.node("Gemm", ins, g.unique(g.name(path)), shape, transB=1, alpha=1.0, beta=1.0)


def _emit_bn(g, path, m, x, shape):
    if not m.track_running_stats or m.running_mean is None:
        raise ValueError(f"{path}: BatchNorm without running statistics is unsupported")
    c = m.num_features
    scale = (g.param(path, "weight", m.weight) if m.affine
             else g.init(g.name(path) + "/scale", np.ones(c, np.float32)))
    bias = (g.param(path, "bias", m.bias) if m.affine
            else g.init(g.name(path) + "/bias", np.zeros(c, np.float32)))
    ins = [x, scale, bias, g.param(path, "running_mean", m.running_mean),
           g.param(path, "running_var", m.running_var)]
    attrs = {"epsilon": float(m.eps)}
    if m.momentum is not None:
        attrs["momentum"] = 1.0 - float(m.momentum)
    return g.node("BatchNormalization", ins, g.unique(g.name(path)), shape, **attrs)


def _emit_maxpool(g, path, m, x, shape):
    if m.return_indices:
        raise ValueError(f"{path}: MaxPool2d(return_indices=True) is unsupported")
    k = _pair(m.kernel_size)
    return g.node("MaxPool", [x], g.unique(g.name(path)), shape, kernel_shape=k,
                  strides=_pair(m.stride if m.stride is not None else k),
                  pads=_pair(m.padding) * 2, dilations=_pair(m.dilation),
                  ceil_mode=int(m.ceil_mode))


def _emit_avgpool(g, path, m, x, shape):
    if m.divisor_override is not None:
        raise ValueError(f"{path}: AvgPool2d(divisor_override=...) is unsupported")
    k = _pair(m.kernel_size)
    return g.node("AveragePool", [x], g.unique(g.name(path)), shape, kernel_shape=k,
                  strides=_pair(m.stride if m.stride is not None else k),
                  pads=_pair(m.padding) * 2, ceil_mode=int(m.ceil_mode),
                  count_include_pad=int(m.count_include_pad))


def _emit_adaptive_avgpool(g, path, m, x, shape, x_shape):
    in_hw = list(x_shape[-2:])
    out_hw = [o if o is not None else i for o, i in zip(_pair(m.output_size), in_hw)]
    name = g.unique(g.name(path))
    if out_hw == [1, 1]:
        return g.node("GlobalAveragePool", [x], name, shape)
    if any(i % o for i, o in zip(in_hw, out_hw)):
        # Windows of varying size (or overlapping, or repeated cells when out > in): no
        # standard ONNX op computes PyTorch's adaptive windows, so a spikemesh node does.
        return g.node("AdaptiveAvgPool2d", [x], name, shape, domain=DOMAIN, output_size=out_hw)
    k = [i // o for i, o in zip(in_hw, out_hw)]
    return g.node("AveragePool", [x], name, shape, kernel_shape=k, strides=k, pads=[0, 0, 0, 0],
                  ceil_mode=0, count_include_pad=0)


def _emit_flatten(g, path, m, x, shape, x_rank):
    end = m.end_dim % x_rank
    if m.start_dim != 1 or end != x_rank - 1:
        raise ValueError(f"{path}: Flatten(start_dim={m.start_dim}, end_dim={m.end_dim}) is "
                         "unsupported (only start_dim=1, end_dim=-1)")
    return g.node("Flatten", [x], g.unique(g.name(path)), shape, axis=1)


def _emit_dropout(g, path, m, x, shape):
    ratio = g.init(g.name(path) + "/ratio", np.array(float(m.p), np.float32))
    return g.node("Dropout", [x, ratio], g.unique(g.name(path)), shape)


def _emit_group_norm(g, path, m, x, shape):
    c = m.num_channels
    scale = (g.param(path, "weight", m.weight) if m.affine
             else g.init(g.name(path) + "/scale", np.ones(c, np.float32)))
    bias = (g.param(path, "bias", m.bias) if m.affine
            else g.init(g.name(path) + "/bias", np.zeros(c, np.float32)))
    return g.node("GroupNorm", [x, scale, bias], g.unique(g.name(path)), shape, domain=DOMAIN,
                  num_groups=int(m.num_groups), epsilon=float(m.eps))


def _no_op_for(m, path, g, why):
    raise ValueError(f"{_describe(m)} at '{g.name(path)}' cannot be exported: {why}")


def _is_dropout(m):
    return isinstance(m, nn.Dropout) or (_sj_module(m, "layer") and type(m).__name__ == "Dropout")


def _emit_step(g, path, m, x, x_val):
    """Emits the per-step op of stateless module `m` on folded value `x`; returns (name, y)."""
    y = _run_per_step(m, x_val)
    shape = [None] + list(y.shape[1:])
    if isinstance(m, nn.Identity):
        return x, y
    if isinstance(m, nn.Linear):
        return _emit_linear(g, path, m, x, shape, x_val.dim()), y
    if isinstance(m, nn.Conv2d):
        return _emit_conv(g, path, m, x, shape), y
    if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
        return _emit_bn(g, path, m, x, shape), y
    if isinstance(m, nn.MaxPool2d):
        return _emit_maxpool(g, path, m, x, shape), y
    if isinstance(m, nn.AvgPool2d):
        return _emit_avgpool(g, path, m, x, shape), y
    if isinstance(m, nn.AdaptiveAvgPool2d):
        return _emit_adaptive_avgpool(g, path, m, x, shape, x_val.shape), y
    if isinstance(m, nn.Flatten):
        return _emit_flatten(g, path, m, x, shape, x_val.dim()), y
    if isinstance(m, nn.GroupNorm):
        return _emit_group_norm(g, path, m, x, shape), y
    if _is_dropout(m):
        return _emit_dropout(g, path, m, x, shape), y
    if isinstance(m, nn.Dropout2d) or _named(m, "Dropout2d"):
        _no_op_for(m, path, g, "SpikeMesh has no channel-wise dropout (use layer.Dropout)")
    raise ValueError(f"unsupported module {_describe(m)} at '{g.name(path)}'")


def _container_children(path, m):
    """(path, module) of the per-step modules inside a container, nested Sequentials expanded."""
    out = []
    for name, child in m.named_children():
        cpath = f"{path}.{name}" if path else name
        if isinstance(child, nn.Sequential) and _kind(child) is None:
            out += _container_children(cpath, child)
        elif _kind(child) in ("neuron", "container"):
            raise ValueError(f"{_describe(child)} at '{cpath}' cannot run inside "
                             "SeqToANNContainer (per-step stateless modules only)")
        elif getattr(child, "step_mode", "s") != "s":
            raise ValueError(f"'{cpath}' inside SeqToANNContainer must have step_mode='s'")
        else:
            out.append((cpath, child))
    return out


class _Fold:
    """One or more fold regions written around a chain of per-step ops (profile section
    'fold, op, unfold'). The fold Reshape is written lazily, when the first op needs it, so a
    per-step reshape at the start of a chain is the fold's own shape; one further inside
    closes the region and opens the next with the new shape.

    Conv1d and BatchNorm1d of per-step [C, L] run on the view [C, 1, L] (the ops of the
    2-D profile); the view returns to [C', L] before any other op and at the end."""

    def __init__(self, g, path, x, x_val):
        self.g, self.base = g, g.name(path)
        self.src = x                         # the time-major value the next fold reads
        self.src_shape = list(x_val.shape[2:])
        self.shape = list(self.src_shape)    # per-step dims of the current value
        self.v = None                        # the folded value; None before the fold
        self.y = x_val.flatten(0, 1)         # the current per-step tensor (for shapes)
        self.view = False                    # the shape is the [C, 1, L] view of [C, L]

    def folded(self):
        if self.v is None:
            fold = self.g.unique(self.base + "/fold")
            shape = self.g.init(fold + "_shape", np.array([-1] + self.shape, np.int64))
            self.v = self.g.node("Reshape", [self.src, shape], fold, [None] + self.shape)
        return self.v

    def step(self, path, m):
        if isinstance(m, nn.Conv1d) or (isinstance(m, nn.BatchNorm1d) and
                                        (self.view or len(self.shape) == 2)):
            self.token_step(path, m)
            return
        self.end_view()
        self.v, self.y = _emit_step(self.g, path, m, self.folded(), self.y)
        self.shape = list(self.y.shape[1:])

    def token_step(self, path, m):
        """Conv1d / BatchNorm1d of per-step [C, L] on the view [C, 1, L]: a Conv with a
        [1, k] kernel is what ATen computes for conv1d, and BatchNormalization of the view
        is BatchNorm1d of [C, L] value for value."""
        if not self.view:
            if len(self.shape) != 2:
                raise ValueError(f"{_describe(m)} at '{self.g.name(path)}' needs per-step "
                                 f"[C, L] tensors, got per-step dims {self.shape}")
            self.reshape([self.shape[0], 1, self.shape[1]])
            self.view = True
        x = self.folded()
        c, _, length = self.shape
        y = _run_per_step(m, self.y.reshape(-1, c, length)).unsqueeze(2)
        shape = [None] + list(y.shape[1:])
        if isinstance(m, nn.Conv1d):
            self.v = _emit_conv1d(self.g, path, m, x, shape)
        else:
            self.v = _emit_bn(self.g, path, m, x, shape)
        self.y, self.shape = y, list(y.shape[1:])

    def end_view(self):
        if self.view:
            self.view = False
            self.reshape([self.shape[0], self.shape[2]])

    def reshape(self, dims):
        """A per-step reshape to `dims` (same element count)."""
        if self.v is not None:
            self.src, self.v = self.unfold(), None
            self.src_shape = list(self.shape)
        self.shape = list(dims)
        self.y = self.y.reshape([-1] + self.shape)

    def close(self):
        self.end_view()
        return self.unfold()

    def unfold(self):
        if self.v is None and self.shape == self.src_shape:
            return self.src  # nothing per-step happened
        g, v = self.g, self.folded()
        unfold = g.unique(self.base + "/unfold")
        shape = g.init(unfold + "_shape", np.array([g.T, -1] + self.shape, np.int64))
        return g.node("Reshape", [v, shape], unfold, [g.T, "N"] + self.shape)

    def flatten(self, name):
        """Flatten every per-step dim (torch.flatten(x, 2) of a time-major x)."""
        size = int(np.prod(self.shape))
        self.v = self.g.node("Flatten", [self.folded()], self.g.unique(name), [None, size],
                             axis=1)
        self.shape, self.y = [size], self.y.flatten(1)

    def voting(self, path, m):
        """VotingLayer: avg_pool1d(x.unsqueeze(1), v, v).squeeze(1) as PyTorch computes it
        (avg_pool1d is avg_pool2d over a [1, F] plane): reshape [F] -> [1, 1, F],
        AveragePool [1, v], Flatten."""
        self.end_view()
        if len(self.shape) != 1:
            raise ValueError(f"VotingLayer at '{self.g.name(path)}' needs [T, N, F] features, "
                             f"got per-step dims {self.shape}")
        k = int(m.voting_size)
        self.reshape([1, 1, self.shape[0]])
        out = [1, 1, self.shape[-1] // k]
        name = self.g.unique(self.g.name(path))
        self.v = self.g.node("AveragePool", [self.folded()], name, [None] + out,
                             kernel_shape=[1, k], strides=[1, k], pads=[0, 0, 0, 0],
                             ceil_mode=0, count_include_pad=0)
        flat = self.g.unique(self.g.name(path) + "/flatten")
        self.v = self.g.node("Flatten", [self.v], flat, [None, out[-1]], axis=1)
        self.shape, self.y = [out[-1]], _run_per_step(m, self.y.reshape(self.y.shape[0], -1))


def _emit_region(g, path, steps, x, x_val):
    """The per-step modules `steps` applied to time-major value `x`; returns the result and
    its per-step dims."""
    region = _Fold(g, path, x, x_val)
    for spath, m in steps:
        if _named(m, "VotingLayer"):
            region.voting(spath, m)
        else:
            region.step(spath, m)
    return region.close(), region.shape


def _emit_folded(g, path, steps, x, x_val):
    return _emit_region(g, path, steps, x, x_val)[0]


# ---------------------------------------------------------------- neurons
def _neuron_attrs(m, where):
    kind = type(m).__name__
    if kind not in NEURON_TYPES:
        raise ValueError(f"unsupported neuron {_describe(m)} at '{where}'")
    sg = m.surrogate_function
    sname = _SURROGATES.get(type(sg).__name__)
    if sname is None or getattr(sg, "spiking", True) is False:
        raise ValueError(f"unsupported surrogate function {_describe(sg)} in '{where}'")
    attrs = {"v_threshold": float(m.v_threshold), "detach_reset": int(bool(m.detach_reset)),
             "surrogate": sname, "alpha": float(sg.alpha)}
    if m.v_reset is not None:
        attrs["v_reset"] = float(m.v_reset)
    if kind == "LIFNode":
        tau = float(m.tau)
        if not tau > 1.0:
            raise ValueError(f"neuron '{where}': tau must be > 1, got {tau}")
        attrs["tau"] = tau
    if kind in ("LIFNode", "ParametricLIFNode"):
        attrs["decay_input"] = int(bool(m.decay_input))
    if kind == "ParametricLIFNode":
        init_tau = getattr(m, "init_tau", None)
        if init_tau is None:  # SpikingJelly does not keep it; recover it from w
            init_tau = 1.0 + math.exp(-float(m.w))
        attrs["init_tau"] = float(init_tau)
    return kind, attrs


# ---------------------------------------------------------------- fx node translation
class _Translator(TensorFunctions):
    def __init__(self, gm, g, env, input_node, input_time_major):
        self.gm, self.g, self.env = gm, g, env
        self.values = {}  # fx node -> (onnx value name, time_major)
        self.neurons_seen = set()
        self.input_node, self.input_time_major = input_node, input_time_major
        self.shapes = set()     # fx nodes holding sizes, not tensors
        self.unsqueezed = {}    # x.unsqueeze(0) of the [N, ...] input -> the input

    def arg(self, a, where):
        if not isinstance(a, torch.fx.Node) or a not in self.values:
            raise ValueError(f"'{where}': operand {a!r} is not a tensor of the network "
                             "(constants and scalars are unsupported)")
        return self.values[a]

    def run(self):
        out = None
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                self.values[n] = ("input", self.input_time_major)
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

    def call_module(self, n):
        m = self.gm.get_submodule(n.target)
        path, where = n.target, self.g.name(n.target)
        if len(n.args) != 1 or n.kwargs:
            raise ValueError(f"'{where}': a module must be called with exactly one tensor")
        x, tm = self.arg(n.args[0], where)
        if not tm:
            raise ValueError(f"'{where}' ({_describe(m)}) is applied to a tensor that is not "
                             "time-major [T, N, ...] (e.g. after the mean readout)")
        kind = _kind(m)
        if kind == "attention":
            return emit_attention(self, n, m, x), True
        if kind == "neuron":
            return self.neuron(n, m, x), True
        if kind == "encoder":
            raise ValueError(f"'{where}' ({_describe(m)}) is random: encode the data before "
                             "the network (the artifact takes the encoded [T, N, ...] input)")
        if getattr(m, "step_mode", "m") != "m":
            raise ValueError(f"'{where}' ({_describe(m)}) has step_mode='s'; "
                             "export needs multi-step ('m') modules")
        if isinstance(m, nn.Identity):
            return x, True
        if kind == "container":
            steps = _container_children(path, m)
        elif kind == "layer" or isinstance(m, (nn.Linear, nn.Dropout)):
            # A plain nn.Linear / Dropout on [T, N, F] equals its folded per-step form.
            steps = [(path, m)]
        else:
            raise ValueError(f"unsupported module {_describe(m)} at '{where}' (wrap per-step "
                             "torch modules in layer.SeqToANNContainer)")
        return _emit_folded(self.g, path, steps, x, self.env[n.args[0]]), True

    def neuron(self, n, m, x):
        return self.emit_neuron(n.target, m, x, self.shape_of(n, True))

    def emit_neuron(self, path, m, x, shape):
        """The neuron `m` at module path `path` on time-major value `x` of ONNX `shape`."""
        where = self.g.name(path)
        if getattr(m, "step_mode", "s") != "m":
            raise ValueError(f"neuron '{where}' must have step_mode='m' for export")
        if path in self.neurons_seen:
            raise ValueError(f"neuron '{where}' is called twice; its state would be shared")
        self.neurons_seen.add(path)
        kind, attrs = _neuron_attrs(m, where)
        ins = [x]
        if kind == "ParametricLIFNode":
            ins.append(self.g.param(path, "w", m.w))
        return self.g.node(kind, ins, self.g.unique(where), shape, domain=DOMAIN, **attrs)

    def call_function(self, n):
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

    def binary(self, n, op, name):
        if len(n.args) != 2 or any(k != "alpha" or v != 1 for k, v in n.kwargs.items()):
            raise ValueError(f"'{n.name}': only {name}(a, b) of two tensors is supported")
        (a, tma), (b, tmb) = (self.arg(v, n.name) for v in n.args)
        sa, sb = self.env[n.args[0]].shape, self.env[n.args[1]].shape
        if sa != sb or tma != tmb:
            raise ValueError(f"'{n.name}': {op} needs two tensors of the same shape, "
                             f"got {tuple(sa)} and {tuple(sb)}")
        return self.g.node(op, [a, b], self.g.unique(n.name), self.shape_of(n, tma)), tma

    @staticmethod
    def reduction_args(n):
        """(dim, keepdim, well-formed) of x.mean / x.sum / torch.mean / torch.sum."""
        args = list(n.args[1:])
        dim = args[0] if args else n.kwargs.get("dim")
        keepdim = args[1] if len(args) > 1 else n.kwargs.get("keepdim", False)
        extra = set(n.kwargs) - {"dim", "keepdim"}
        return dim, keepdim, not extra and len(args) <= 2

    def over_time(self, n, name):
        """The operand of a readout x.mean(0) / x.sum(0) over T; raises for any other."""
        dim, keepdim, ok = self.reduction_args(n)
        x, tm = self.arg(n.args[0], n.name)
        if dim not in (0, (0,), [0]) or keepdim or not ok or not tm:
            also = ", or a mean over per-step dims (>= 2)" if name == "mean" else ""
            raise ValueError(f"'{n.name}': only the readout x.{name}(0) over T{also} is "
                             "supported")
        return x

    def per_step_axes(self, n):
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

    def mean(self, n, name):
        axes = self.per_step_axes(n)
        if axes is not None:  # stays time-major: [T, N, ...] minus the reduced dims
            x, _ = self.arg(n.args[0], n.name)
            keepdims = int(self.reduction_args(n)[1])
            return self.g.node("ReduceMean", [x], self.g.unique(n.name),
                               self.shape_of(n, True), axes=axes, keepdims=keepdims), True
        return self.g.node("ReduceMean", [self.over_time(n, "mean")], self.g.unique(n.name),
                           self.shape_of(n, False), axes=[0], keepdims=0), False

    def sum(self, n, name):
        x, node = self.over_time(n, "sum"), self.g.unique(n.name)
        axes = self.g.init(node + "/axes", np.array([0], np.int64))  # opset 13: an input
        return self.g.node("ReduceSum", [x, axes], node, self.shape_of(n, False),
                           keepdims=0), False

    def shape_of(self, n, time_major):
        s = list(self.env[n].shape)
        return [s[0], "N"] + s[2:] if time_major else ["N"] + s[1:]


# ---------------------------------------------------------------- driver
def _detached_copy(model: nn.Module) -> nn.Module:
    # deepcopy fails on non-leaf tensors (e.g. a neuron's v after a training forward).
    memo = {}
    for m in model.modules():
        for v in vars(m).values():
            if isinstance(v, torch.Tensor) and v.grad_fn is not None:
                memo[id(v)] = v.detach()
    return copy.deepcopy(model, memo)


def _remove_dead_code(gm: torch.fx.GraphModule) -> None:
    """Drops the nodes nothing uses (graph.eliminate_dead_code's rule, in-place ops kept):
    the shape checks of a forward (x.ndim, the comparison) leave such nodes behind."""
    for node in reversed(gm.graph.nodes):
        if not node.users and not node.is_impure() and not _mutates(node):
            gm.graph.erase_node(node)
    gm.recompile()


def _trace(model: nn.Module,
           example_input: torch.Tensor) -> Tuple[torch.fx.GraphModule, str]:
    prefix = ""
    if _kind(model) is not None:  # a bare neuron / layer: trace it as the child of a wrapper
        model, prefix = nn.Sequential(model), "0."
    tracer = _Tracer(example_input.clone(), prefix)  # clone: in-place ops must not reach it
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


def _run(gm: torch.fx.GraphModule,
         example_input: torch.Tensor) -> Dict[torch.fx.Node, Any]:
    interp = torch.fx.Interpreter(gm, garbage_collect_values=False)
    with torch.no_grad():
        interp.run(example_input)
    return interp.env


def _value_info(name: str, shape: List[Dim]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def build_onnx(model: nn.Module, example_input: torch.Tensor) -> onnx.ModelProto:
    """Returns the ONNX ModelProto for `model` (not checked, not written)."""
    if not isinstance(example_input, torch.Tensor) or example_input.dim() < 2:
        raise ValueError("example_input must be a tensor [T, N, ...] (or [N, ...] for a model "
                         "that repeats its input over T itself)")
    if example_input.dtype != torch.float32:
        raise ValueError(f"example_input must be float32, got {example_input.dtype}")
    net = _detached_copy(model).eval()
    _prepare(net)
    reset_net(net)
    gm, prefix = _trace(net, example_input)
    env = _run(gm, example_input)
    placeholder = next(n for n in gm.graph.nodes if n.op == "placeholder")
    direct_T = direct_encoding_steps(placeholder, env)
    # A model that repeats its [N, ...] input over T takes the repeated [T, N, ...] tensor in
    # the artifact: exactly what `snn-run --repeat-time T` makes of a static batch.
    T = direct_T or int(example_input.shape[0])
    step_dims = list(example_input.shape[1 if direct_T else 2:])
    g = _Graph(T, prefix)
    out, out_tm = _Translator(gm, g, env, placeholder, direct_T is None).run()
    out_node = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    out_shape = list(env[out_node].shape)
    out_shape = [T, "N"] + out_shape[2:] if out_tm else ["N"] + out_shape[1:]
    if out == "input":
        raise ValueError("the model returns its input unchanged; nothing to export")
    for node in g.nodes:
        node.input[:] = ["output" if i == out else i for i in node.input]
        node.output[:] = ["output" if o == out else o for o in node.output]
    g.infos.pop(out, None)
    graph = helper.make_graph(
        g.nodes, type(model).__name__,
        [_value_info("input", [T, "N"] + step_dims)],
        [_value_info("output", out_shape)],
        initializer=list(g.inits.values()),
        value_info=[_value_info(k, s) for k, s in g.infos.items()])
    onnx_model = helper.make_model(
        graph, ir_version=IR_VERSION, producer_name="snnexport",
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(DOMAIN, 1)])
    frozen = _frozen_names(model, g, prefix)
    if frozen:
        helper.set_model_props(onnx_model, {FROZEN_KEY: ",".join(frozen)})
    return onnx_model


def _frozen_names(model: nn.Module, g: "_Graph", prefix: str) -> List[str]:
    """The written initializers of parameters with requires_grad=False (PyTorch never
    trains them; the artifact must not either)."""
    names = [g.name(prefix + k) if prefix else k
             for k, p in model.named_parameters() if not p.requires_grad]
    return sorted(n for n in names if n in g.inits)


def check(onnx_model: onnx.ModelProto) -> None:
    """onnx.checker (full check) plus strict shape inference; raises on any problem."""
    onnx.checker.check_model(onnx_model, full_check=True)
    onnx.shape_inference.infer_shapes(onnx_model, check_type=True, strict_mode=True)


def export_onnx(model: nn.Module, example_input: torch.Tensor,
                path: PathLike) -> onnx.ModelProto:
    """Writes `model` run on `example_input` [T, N, ...] to `path` as ONNX (profile in
    docs/onnx-profile.md). N is dynamic in the file, T fixed. The model is not modified.
    Raises ValueError for anything outside the profile. Returns the onnx.ModelProto."""
    onnx_model = build_onnx(model, example_input)
    check(onnx_model)
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"  # write-then-rename: never a partial file at `path`
    try:
        with open(tmp, "wb") as f:
            f.write(onnx_model.SerializeToString())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return onnx_model
