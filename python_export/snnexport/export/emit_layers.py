"""The per-step stateless modules (Linear, Conv, BatchNorm, pooling, Flatten, Dropout,
GroupNorm) as ONNX ops on a folded [T*N, ...] value."""
from __future__ import annotations

from typing import List, NoReturn, Sequence, Tuple

import numpy as np
import torch
from torch import nn

from .graph import Graph, Shape
from .kinds import describe, named, sj_module
from .names import ADAPTIVE_AVG_POOL, DOMAIN, EPSILON, GROUP_NORM, NUM_GROUPS, OUTPUT_SIZE


def run_per_step(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Runs a stateless module on a folded [T*N, ...] tensor whatever its step_mode."""
    mode = getattr(m, "step_mode", None)
    if mode is not None:
        m.step_mode = "s"
    try:
        return m(x)
    finally:
        if mode is not None:
            m.step_mode = mode


def _pair(v: object) -> list:
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def _conv_name(m: nn.Module) -> str:
    return "Conv1d" if isinstance(m, nn.Conv1d) else "Conv2d"


def _conv_pads(path: str, m: nn.Module) -> List[int]:
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


def _emit_conv(g: Graph, path: str, m: nn.Conv2d, x: str, shape: Shape) -> str:
    pads = _conv_pads(path, m)
    ins = [x, g.param(path, "weight", m.weight)]
    if m.bias is not None:
        ins.append(g.param(path, "bias", m.bias))
    return g.node("Conv", ins, g.unique(g.name(path)), shape, kernel_shape=list(m.kernel_size),
                  strides=list(m.stride), pads=pads * 2, dilations=list(m.dilation),
                  group=m.groups)


def emit_conv1d(g: Graph, path: str, m: nn.Conv1d, x: str, shape: Shape) -> str:
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


def _emit_linear(g: Graph, path: str, m: nn.Linear, x: str, shape: Shape, x_rank: int) -> str:
    if x_rank != 2:
        raise ValueError(f"{path}: Linear on a per-step tensor of rank {x_rank} (need 2)")
    ins = [x, g.param(path, "weight", m.weight)]
    if m.bias is not None:
        ins.append(g.param(path, "bias", m.bias))
    return g.node("Gemm", ins, g.unique(g.name(path)), shape, transB=1, alpha=1.0, beta=1.0)


def emit_bn(g: Graph, path: str, m: nn.Module, x: str, shape: Shape) -> str:
    """BatchNorm1d / BatchNorm2d in eval form (running statistics) as BatchNormalization."""
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


def _emit_maxpool(g: Graph, path: str, m: nn.MaxPool2d, x: str, shape: Shape) -> str:
    if m.return_indices:
        raise ValueError(f"{path}: MaxPool2d(return_indices=True) is unsupported")
    k = _pair(m.kernel_size)
    return g.node("MaxPool", [x], g.unique(g.name(path)), shape, kernel_shape=k,
                  strides=_pair(m.stride if m.stride is not None else k),
                  pads=_pair(m.padding) * 2, dilations=_pair(m.dilation),
                  ceil_mode=int(m.ceil_mode))


def _emit_avgpool(g: Graph, path: str, m: nn.AvgPool2d, x: str, shape: Shape) -> str:
    if m.divisor_override is not None:
        raise ValueError(f"{path}: AvgPool2d(divisor_override=...) is unsupported")
    k = _pair(m.kernel_size)
    return g.node("AveragePool", [x], g.unique(g.name(path)), shape, kernel_shape=k,
                  strides=_pair(m.stride if m.stride is not None else k),
                  pads=_pair(m.padding) * 2, ceil_mode=int(m.ceil_mode),
                  count_include_pad=int(m.count_include_pad))


def _emit_adaptive_avgpool(g: Graph, path: str, m: nn.AdaptiveAvgPool2d, x: str,
                           shape: Shape, x_shape: Sequence[int]) -> str:
    in_hw = list(x_shape[-2:])
    out_hw = [o if o is not None else i for o, i in zip(_pair(m.output_size), in_hw)]
    name = g.unique(g.name(path))
    if out_hw == [1, 1]:
        return g.node("GlobalAveragePool", [x], name, shape)
    if any(i % o for i, o in zip(in_hw, out_hw)):
        # Windows of varying size (or overlapping, or repeated cells when out > in): no
        # standard ONNX op computes PyTorch's adaptive windows, so a spikemesh node does.
        return g.node(ADAPTIVE_AVG_POOL, [x], name, shape, domain=DOMAIN, **{OUTPUT_SIZE: out_hw})
    k = [i // o for i, o in zip(in_hw, out_hw)]
    return g.node("AveragePool", [x], name, shape, kernel_shape=k, strides=k, pads=[0, 0, 0, 0],
                  ceil_mode=0, count_include_pad=0)


def _emit_flatten(g: Graph, path: str, m: nn.Flatten, x: str, shape: Shape,
                  x_rank: int) -> str:
    end = m.end_dim % x_rank
    if m.start_dim != 1 or end != x_rank - 1:
        raise ValueError(f"{path}: Flatten(start_dim={m.start_dim}, end_dim={m.end_dim}) is "
                         "unsupported (only start_dim=1, end_dim=-1)")
    return g.node("Flatten", [x], g.unique(g.name(path)), shape, axis=1)


def _emit_dropout(g: Graph, path: str, m: nn.Module, x: str, shape: Shape) -> str:
    ratio = g.init(g.name(path) + "/ratio", np.array(float(m.p), np.float32))
    return g.node("Dropout", [x, ratio], g.unique(g.name(path)), shape)


def _emit_group_norm(g: Graph, path: str, m: nn.GroupNorm, x: str, shape: Shape) -> str:
    c = m.num_channels
    scale = (g.param(path, "weight", m.weight) if m.affine
             else g.init(g.name(path) + "/scale", np.ones(c, np.float32)))
    bias = (g.param(path, "bias", m.bias) if m.affine
            else g.init(g.name(path) + "/bias", np.zeros(c, np.float32)))
    return g.node(GROUP_NORM, [x, scale, bias], g.unique(g.name(path)), shape, domain=DOMAIN,
                  **{NUM_GROUPS: int(m.num_groups), EPSILON: float(m.eps)})


def _no_op_for(m: nn.Module, path: str, g: Graph, why: str) -> NoReturn:
    raise ValueError(f"{describe(m)} at '{g.name(path)}' cannot be exported: {why}")


def _is_dropout(m: nn.Module) -> bool:
    return isinstance(m, nn.Dropout) or (sj_module(m, "layer") and type(m).__name__ == "Dropout")


def emit_step(g: Graph, path: str, m: nn.Module, x: str,
              x_val: torch.Tensor) -> Tuple[str, torch.Tensor]:
    """Emits the per-step op of stateless module `m` on folded value `x` (`x_val` its folded
    value on the example input); returns (the op's output name, the module's output value)."""
    y = run_per_step(m, x_val)
    shape = [None] + list(y.shape[1:])
    if isinstance(m, nn.Identity):
        return x, y
    if isinstance(m, nn.Linear):
        return _emit_linear(g, path, m, x, shape, x_val.dim()), y
    if isinstance(m, nn.Conv2d):
        return _emit_conv(g, path, m, x, shape), y
    if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
        return emit_bn(g, path, m, x, shape), y
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
    if isinstance(m, nn.Dropout2d) or named(m, "Dropout2d"):
        _no_op_for(m, path, g, "SpikeMesh has no channel-wise dropout (use layer.Dropout)")
    raise ValueError(f"unsupported module {describe(m)} at '{g.name(path)}'")
