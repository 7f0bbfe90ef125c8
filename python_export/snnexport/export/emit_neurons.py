"""Neurons as spikemesh nodes with their attributes: IFNode, LIFNode and ParametricLIFNode by
class, the parallel spiking neurons (PSN, MaskedPSN, SlidingPSN) as ParallelSpikingNeuron, a
RecurrentNeuron as RecurrentNeuron (its cell's description and the feedback's weight and bias),
any other class as a Neuron described by its parts."""
from __future__ import annotations

import math
from typing import Any, Dict, Set, Tuple

from torch import nn

from .graph import Graph, Shape
from .kinds import describe
from ..described_neurons import DESCRIBED
from ..recurrent import RecurrentNeuron
from .names import (ALPHA, BETA, CHARGE, CONSTANTS, DECAY_INPUT, DETACH_RESET, DOMAIN, FIRE,
                    INIT_TAU, K, LAMBDA, LIF_NODE, NEURON, NEURON_TYPES, OPERAND_NAMES, OUTPUT,
                    PARALLEL_NEURON, PARALLEL_VARIANTS, PLIF_NODE, RECURRENT_NEURON, RESET,
                    STATES, SURROGATE,
                    SURROGATE_PARAMETERS, SURROGATES, TAU, UPDATE, V_RESET, V_THRESHOLD,
                    VARIANT)


def surrogate_attrs(m: nn.Module, where: str) -> Dict[str, Any]:
    """The `surrogate`, `alpha` and `beta` attributes of neuron `m`'s surrogate function."""
    sg = m.surrogate_function
    sname = SURROGATES.get(type(sg).__name__)
    if sname is None or getattr(sg, "spiking", True) is False:
        raise ValueError(f"unsupported surrogate function {describe(sg)} in '{where}'")
    attrs: Dict[str, Any] = {SURROGATE: sname}
    # The class's parameters in order: the first as alpha, the second as beta.
    for attr, (param, _) in zip((ALPHA, BETA), SURROGATE_PARAMETERS[sname]):
        value = getattr(sg, param, None)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"surrogate function {describe(sg)} in '{where}': {param} must be "
                             f"a number, got {value!r}")
        attrs[attr] = float(value)
    return attrs


def described_attrs(m: nn.Module, where: str) -> Tuple[Dict[str, Any], list]:
    """The `Neuron` node attributes of a neuron described by its parts, and its operand
    parameter names. Empty lists are left out (ONNX cannot type an empty list)."""
    try:
        d = DESCRIBED[type(m).__name__](m)
    except ValueError as e:
        raise ValueError(f"neuron '{where}': {e}") from None
    attrs: Dict[str, Any] = {
        STATES: [f"{name}={float(value)!r}" for name, value in d["states"].items()],
        CONSTANTS: [f"{name}={float(value)!r}" for name, value in d["constants"].items()],
        OPERAND_NAMES: d["operands"], CHARGE: d["charge"], UPDATE: d["update"],
        RESET: d["reset"], DETACH_RESET: int(d["detach_reset"]), OUTPUT: d["output"]}
    attrs = {k: v for k, v in attrs.items() if v != []}
    if d["fire"]:
        attrs[FIRE] = d["fire"]
        attrs.update(surrogate_attrs(m, where))
    # `name[t]` marks a per-step operand; the module's attribute is `name`.
    return attrs, [name[:-3] if name.endswith("[t]") else name for name in d["operands"]]


def _check_shape(m: nn.Module, where: str, name: str, want: Tuple[int, ...], steps: int) -> None:
    got = tuple(getattr(m, name).shape)
    if got != want:
        raise ValueError(f"neuron '{where}': {type(m).__name__}'s {name} must be {list(want)} "
                         f"on {steps} time steps, got {list(got)}")


def parallel_attrs(m: nn.Module, where: str, steps: int) -> Dict[str, Any]:
    """The `ParallelSpikingNeuron` attributes of PSN, MaskedPSN or SlidingPSN `m` on an input
    of `steps` time steps, its parameters checked against them."""
    kind = type(m).__name__
    variant = PARALLEL_VARIANTS[kind]
    attrs: Dict[str, Any] = {VARIANT: variant, **surrogate_attrs(m, where)}
    if variant != "psn":
        k = m.k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= steps:
            raise ValueError(f"neuron '{where}': {kind}'s k must be an int in 1..T (T={steps}), "
                             f"got {k!r}")
        attrs[K] = k
    if variant == "sliding":
        _check_shape(m, where, "weight", (m.k,), steps)
        _check_shape(m, where, "bias", (), steps)
        if getattr(m, "backend", "gemm") not in ("gemm", "conv"):
            raise ValueError(f"neuron '{where}': SlidingPSN backend {m.backend!r} is not 'gemm' "
                             "or 'conv'")
        return attrs
    _check_shape(m, where, "weight", (steps, steps), steps)
    _check_shape(m, where, "bias", (steps, 1), steps)
    if variant == "masked":
        lambda_ = float(m.lambda_)
        if not math.isfinite(lambda_):
            raise ValueError(f"neuron '{where}': MaskedPSN's lambda_ must be finite, got {lambda_}")
        attrs[LAMBDA] = lambda_
    return attrs


def neuron_attrs(m: nn.Module, where: str) -> Tuple[str, Dict[str, Any]]:
    """The op type and attributes of neuron `m` (named `where` in errors)."""
    kind = type(m).__name__
    if kind not in NEURON_TYPES:
        raise ValueError(f"unsupported neuron {describe(m)} at '{where}'")
    attrs = {V_THRESHOLD: float(m.v_threshold), DETACH_RESET: int(bool(m.detach_reset)),
             **surrogate_attrs(m, where)}
    if m.v_reset is not None:
        attrs[V_RESET] = float(m.v_reset)
    if kind == LIF_NODE:
        tau = float(m.tau)
        if not tau > 1.0:
            raise ValueError(f"neuron '{where}': tau must be > 1, got {tau}")
        attrs[TAU] = tau
    if kind in (LIF_NODE, PLIF_NODE):
        attrs[DECAY_INPUT] = int(bool(m.decay_input))
    if kind == PLIF_NODE:
        init_tau = getattr(m, "init_tau", None)
        if init_tau is None:  # SpikingJelly does not keep it; recover it from w
            init_tau = 1.0 + math.exp(-float(m.w))
        attrs[INIT_TAU] = float(init_tau)
    return kind, attrs


class NeuronEmitter:
    """Writes the neurons of one export into graph `g`, each at most once: a neuron called
    twice would share its membrane state between the two calls."""

    def __init__(self, g: Graph) -> None:
        self.g = g
        self.seen: Set[str] = set()  # module paths of the neurons written

    def emit(self, path: str, m: nn.Module, x: str, shape: Shape) -> str:
        """The neuron `m` at module path `path` on time-major value `x` of ONNX `shape`."""
        where = self.g.name(path)
        if type(m).__name__ in PARALLEL_VARIANTS:
            return self.emit_parallel(path, m, x, shape)
        if getattr(m, "step_mode", "s") != "m":
            raise ValueError(f"neuron '{where}' must have step_mode='m' for export")
        if path in self.seen:
            raise ValueError(f"neuron '{where}' is called twice; its state would be shared")
        self.seen.add(path)
        if isinstance(m, RecurrentNeuron):
            return self.emit_recurrent(path, m, x, shape)
        if type(m).__name__ in DESCRIBED:
            decode = getattr(m, "decode", None)
            if type(m).__name__.startswith("NonSpiking") and decode != "mean-mem":
                raise ValueError(f"neuron '{where}': {type(m).__name__} with decode={decode!r}"
                                 " cannot be exported (only 'mean-mem', the mean over T)")
            attrs, operands = described_attrs(m, where)
            ins = [x] + [self.g.param(path, name, getattr(m, name)) for name in operands]
            return self.g.node(NEURON, ins, self.g.unique(where), shape, domain=DOMAIN, **attrs)
        kind, attrs = neuron_attrs(m, where)
        ins = [x]
        if kind == PLIF_NODE:
            ins.append(self.g.param(path, "w", m.w))
        return self.g.node(kind, ins, self.g.unique(where), shape, domain=DOMAIN, **attrs)

    def emit_recurrent(self, path: str, m: RecurrentNeuron, x: str, shape: Shape) -> str:
        """A RecurrentNeuron: x, the feedback's weight and bias, then its cell's operands."""
        where = self.g.name(path)
        if len(shape) != 3:
            raise ValueError(f"neuron '{where}': a RecurrentNeuron takes [T, N, features], got "
                             f"{len(shape)} dimensions")
        attrs, operands = described_attrs(m.cell, where)
        rec = f"{path}.recurrent" if path else "recurrent"
        cell = f"{path}.cell" if path else "cell"
        ins = [x, self.g.param(rec, "weight", m.recurrent.weight),
               self.g.param(rec, "bias", m.recurrent.bias)]
        ins += [self.g.param(cell, name, getattr(m.cell, name)) for name in operands]
        return self.g.node(RECURRENT_NEURON, ins, self.g.unique(where), shape, domain=DOMAIN,
                           **attrs)

    def emit_parallel(self, path: str, m: nn.Module, x: str, shape: Shape) -> str:
        """A parallel spiking neuron. It keeps no state between calls, so unlike the other
        neurons it may be called more than once (the calls share its weight and bias)."""
        where = self.g.name(path)
        # SpikingJelly's PSN is multi-step only and has no step_mode.
        if type(m).__name__ != "PSN" and getattr(m, "step_mode", "s") != "m":
            raise ValueError(f"neuron '{where}' must have step_mode='m' for export")
        attrs = parallel_attrs(m, where, self.g.T)
        ins = [x, self.g.param(path, "weight", m.weight), self.g.param(path, "bias", m.bias)]
        return self.g.node(PARALLEL_NEURON, ins, self.g.unique(where), shape, domain=DOMAIN,
                           **attrs)
