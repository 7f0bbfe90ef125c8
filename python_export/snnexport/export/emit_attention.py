"""Spikformer's SpikingSelfAttention in ONNX (docs/onnx-profile.md, 'Spiking self-attention').

The module is a leaf of the trace and is written from its submodules: the qkv Conv1d+BN
region, the qkv neuron, one `spikemesh.SpikingAttention` node (the head split and
((v k^T) q) * scale), the attention neuron, the projection region and its neuron."""
from __future__ import annotations

import math
from typing import NoReturn

import torch
from torch import nn

from .emit_neurons import NeuronEmitter
from .fold import emit_region
from .graph import Graph
from .kinds import container_children, describe, module_kind
from .names import DOMAIN, NEURON_TYPES, NUM_HEADS, SCALE, SPIKING_ATTENTION

NEURONS = ("qkv_lif", "attn_lif", "proj_lif")
CONTAINERS = ("qkv_conv_bn", "proj_conv_bn")


def _refuse(where: str, why: str) -> NoReturn:
    raise ValueError(f"SpikingSelfAttention at '{where}' cannot be exported: {why}")


def _check_parts(where: str, m: nn.Module) -> None:
    for name in CONTAINERS:
        part = getattr(m, name, None)
        if module_kind(part) != "container":
            _refuse(where, f"'{name}' must be a SeqToANNContainer, got "
                           f"{describe(part) if part is not None else 'nothing'}")
    for name in NEURONS:
        sn = getattr(m, name, None)
        if module_kind(sn) != "neuron" or type(sn).__name__ not in NEURON_TYPES:
            _refuse(where, f"'{name}' is {describe(sn) if sn is not None else 'missing'}, "
                           f"not a supported neuron ({', '.join(NEURON_TYPES)})")
    heads, scale = getattr(m, "num_heads", None), getattr(m, "scale", None)
    if not isinstance(heads, int) or heads < 1:
        _refuse(where, f"num_heads must be a positive integer, got {heads!r}")
    if not isinstance(scale, (int, float)) or not math.isfinite(scale):
        _refuse(where, f"scale must be a finite number, got {scale!r}")


def check_attention(where: str, m: nn.Module, x: object) -> int:
    """Raises ValueError naming `where` for a SpikingSelfAttention the SpikingAttention node
    cannot express; `x` is the module's input value. Returns the qkv channels (3*C)."""
    _check_parts(where, m)
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        got = list(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        _refuse(where, f"its input must be [T, N, C, L], got {got}")
    with torch.no_grad():
        qkv = m.qkv_conv_bn(x)  # stateless: only its shape is needed
    if qkv.dim() != 4:
        _refuse(where, f"qkv_conv_bn must give [T, N, 3*C, L], got {list(qkv.shape)}")
    c3 = int(qkv.shape[2])
    if c3 % (3 * m.num_heads):
        _refuse(where, f"its {c3} qkv channels are not divisible by 3 * num_heads = "
                       f"{3 * m.num_heads}")
    return c3


def emit_attention(g: Graph, neurons: NeuronEmitter, path: str, m: nn.Module, x: str,
                   x_val: torch.Tensor) -> str:
    """Writes the SpikingSelfAttention `m` at module path `path` on time-major value `x`
    (`x_val` its value on the example input); returns the name of the last node (the
    projection neuron, [T, N, C, L])."""
    where = g.name(path)
    c3 = check_attention(where, m, x_val)
    qkv_path = f"{path}.qkv_conv_bn"
    qkv, dims = emit_region(g, qkv_path, container_children(qkv_path, m.qkv_conv_bn), x,
                            x_val)
    spikes = neurons.emit(f"{path}.qkv_lif", m.qkv_lif, qkv, [g.T, "N"] + dims)
    c, tokens = c3 // 3, dims[1:]
    shape = [g.T, "N", c] + tokens
    attn = g.node(SPIKING_ATTENTION, [spikes], g.unique(where + "/attention"), shape,
                  domain=DOMAIN, **{NUM_HEADS: int(m.num_heads), SCALE: float(m.scale)})
    spikes = neurons.emit(f"{path}.attn_lif", m.attn_lif, attn, shape)
    proj_path = f"{path}.proj_conv_bn"
    proj_in = x_val.new_zeros([x_val.shape[0], x_val.shape[1], c] + tokens)  # for shapes
    proj, dims = emit_region(g, proj_path, container_children(proj_path, m.proj_conv_bn),
                             spikes, proj_in)
    return neurons.emit(f"{path}.proj_lif", m.proj_lif, proj, [g.T, "N"] + dims)
