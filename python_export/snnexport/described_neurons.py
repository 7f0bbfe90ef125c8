"""SpikingJelly's other neuron classes, each with its step as PyTorch ops (the reference) and its
description by parts (what `export_onnx` writes as a `Neuron` node; docs/neuron-programs.md).

Constructor arguments, defaults and checks follow SpikingJelly's current source
(activation_based/neuron: integrate_and_fire.py, lif.py, nonlinear_if.py, adapt.py,
lif_variants.py); docs/semantics.md gives each class's equations.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional

import torch
from torch import nn

from . import surrogate as _surrogate
from .base import MemoryModule
from .neuron import BaseNode, _check_tau

__all__ = ["DescribedNode", "SimpleIFNode", "SimpleLIFNode", "HalfThresholdIFNode",
           "NonSpikingIFNode", "NonSpikingLIFNode", "QIFNode", "EIFNode", "IzhikevichNode",
           "CUBALIFNode", "KLIFNode", "LIAFNode", "ILIFNode", "GatedLIFNode"]


def description(states: Dict[str, float], constants: Dict[str, float], charge: List[str],
                fire: str = "h - v_threshold", reset: str = "hard", detach_reset: bool = False,
                update: Optional[List[str]] = None, output: str = "s",
                operands: Optional[List[str]] = None) -> Dict[str, Any]:
    """A neuron's parts, as the `Neuron` node carries them."""
    return {"states": dict(states), "constants": dict(constants), "operands": list(operands or []),
            "charge": list(charge), "fire": fire, "reset": reset,
            "detach_reset": bool(detach_reset), "update": list(update or []), "output": output}


def standard_reset(node: BaseNode, states: Dict[str, float], constants: Dict[str, float],
                   charge: List[str], **parts: Any) -> Dict[str, Any]:
    """BaseNode's reset (hard to v_reset, soft by v_threshold when v_reset is None) after
    `charge`."""
    constants = dict(constants, v_threshold=node.v_threshold)
    if node.v_reset is not None:
        constants["v_reset"] = node.v_reset
    return description(states, constants, charge,
                       reset="soft" if node.v_reset is None else "hard",
                       detach_reset=node.detach_reset, **parts)


class DescribedNode(BaseNode):
    """A BaseNode that SpikeMesh compiles from its description rather than by its class."""

    def neuron_description(self) -> Dict[str, Any]:
        raise NotImplementedError


class SimpleIFNode(DescribedNode):
    """SpikingJelly's SimpleIFNode: H = V + X; V starts at 0 (not v_reset)."""

    def __init__(self, v_threshold=1.0, v_reset=0.0, surrogate_function=None,
                 detach_reset=False, step_mode="s"):
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode)

    def reset(self):
        self.v = 0.0
        self.v_seq = None

    def neuronal_charge(self, x):
        return self.v + x

    def neuron_description(self):
        return standard_reset(self, {"v": 0.0}, {}, ["h = v + x"])


class SimpleLIFNode(DescribedNode):
    """SpikingJelly's SimpleLIFNode: decay_input: H = V + (Vr - V + X) / tau, else
    H = V + (Vr - V) / tau + X; V starts at 0."""

    def __init__(self, tau, decay_input, v_threshold=1.0, v_reset=0.0, surrogate_function=None,
                 detach_reset=False, step_mode="s"):
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode)
        self.tau = float(tau)
        self.decay_input = bool(decay_input)

    def reset(self):
        self.v = 0.0
        self.v_seq = None

    def neuronal_charge(self, x):
        if self.v_reset is None:  # SpikingJelly fails here too (None - tensor)
            raise ValueError("SimpleLIFNode needs a v_reset (its charge reads it)")
        if self.decay_input:
            return self.v + (self.v_reset - self.v + x) / self.tau
        return self.v + (self.v_reset - self.v) / self.tau + x

    def neuron_description(self):
        if self.v_reset is None:  # SpikingJelly's charge reads v_reset: None fails there too
            raise ValueError("SimpleLIFNode needs a v_reset (its charge reads it)")
        charge = ("h = v + (v_reset - v + x) / tau" if self.decay_input
                  else "h = v + (v_reset - v) / tau + x")
        return standard_reset(self, {"v": 0.0}, {"tau": self.tau}, [charge])


class HalfThresholdIFNode(DescribedNode):
    """SpikingJelly's HalfThresholdIFNode: an IF with soft reset whose membrane starts at
    v_threshold / 2 (rounding to nearest in spike counts)."""

    def __init__(self, v_threshold=1.0, surrogate_function=None, detach_reset=False,
                 step_mode="s", backend="torch", store_v_seq=False):
        v_threshold = float(v_threshold)
        if not math.isfinite(v_threshold) or v_threshold <= 0.0:
            raise ValueError("v_threshold must be finite positive.")
        super().__init__(v_threshold, None, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)

    def reset(self):
        self.v = self.v_threshold / 2.0
        self.v_seq = None

    def neuronal_charge(self, x):
        return self.v + x

    def neuron_description(self):
        return standard_reset(self, {"v": self.v_threshold / 2.0}, {}, ["h = v + x"])


class QIFNode(DescribedNode):
    """SpikingJelly's QIFNode: H = V + (X + a0 (V - v_rest)(V - v_c)) / tau."""

    def __init__(self, tau=2.0, v_c=0.8, a0=1.0, v_threshold=1.0, v_rest=0.0, v_reset=-0.1,
                 surrogate_function=None, detach_reset=False, step_mode="s", backend="torch",
                 store_v_seq=False):
        tau = _check_tau("tau", tau)
        if v_reset is not None and not (v_threshold > v_reset and v_rest >= v_reset):
            raise ValueError("QIFNode needs v_threshold > v_reset and v_rest >= v_reset")
        if not a0 > 0:
            raise ValueError(f"QIFNode: a0 must be > 0, got {a0}")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)
        self.tau, self.v_c, self.a0, self.v_rest = tau, float(v_c), float(a0), float(v_rest)

    def neuronal_charge(self, x):
        return self.v + (x + self.a0 * (self.v - self.v_rest) * (self.v - self.v_c)) / self.tau

    def neuron_description(self):
        return standard_reset(
            self, {"v": 0.0 if self.v_reset is None else self.v_reset},
            {"tau": self.tau, "v_c": self.v_c, "a0": self.a0, "v_rest": self.v_rest},
            ["h = v + (x + a0 * (v - v_rest) * (v - v_c)) / tau"])


class EIFNode(DescribedNode):
    """SpikingJelly's EIFNode: H = V + (X + v_rest - V + delta_T exp((V - theta_rh) /
    delta_T)) / tau."""

    def __init__(self, tau=2.0, delta_T=1.0, theta_rh=0.8, v_threshold=1.0, v_rest=0.0,
                 v_reset=-0.1, surrogate_function=None, detach_reset=False, step_mode="s",
                 backend="torch", store_v_seq=False):
        tau = _check_tau("tau", tau)
        if v_reset is not None and not (v_threshold > v_reset and v_rest >= v_reset):
            raise ValueError("EIFNode needs v_threshold > v_reset and v_rest >= v_reset")
        if not delta_T > 0:
            raise ValueError(f"EIFNode: delta_T must be > 0, got {delta_T}")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)
        self.tau, self.delta_T = tau, float(delta_T)
        self.theta_rh, self.v_rest = float(theta_rh), float(v_rest)

    def neuronal_charge(self, x):
        return self.v + (x + self.v_rest - self.v
                         + self.delta_T * torch.exp((self.v - self.theta_rh) / self.delta_T)
                         ) / self.tau

    def neuron_description(self):
        return standard_reset(
            self, {"v": 0.0 if self.v_reset is None else self.v_reset},
            {"tau": self.tau, "delta_T": self.delta_T, "theta_rh": self.theta_rh,
             "v_rest": self.v_rest},
            ["h = v + (x + v_rest - v + delta_T * exp((v - theta_rh) / delta_T)) / tau"])


class IzhikevichNode(DescribedNode):
    """SpikingJelly's IzhikevichNode: a QIF membrane with an adaptation current w,
    H = V + (X + a0 (V - v_rest)(V - v_c) - W) / tau, W' = W + (a (H - v_rest) - W) / tau_w,
    W += b on a spike. Its hard reset keeps the spike's gradient in the v_reset term even
    with detach_reset (SpikingJelly's izhikevich_step)."""

    def __init__(self, tau=2.0, v_c=0.8, a0=1.0, v_threshold=1.0, v_reset=0.0, v_rest=-0.1,
                 w_rest=0.0, tau_w=2.0, a=0.0, b=0.0, surrogate_function=None,
                 detach_reset=False, step_mode="s", backend="torch", store_v_seq=False):
        tau = _check_tau("tau", tau)
        if not a0 > 0:
            raise ValueError(f"IzhikevichNode: a0 must be > 0, got {a0}")
        for name, value in (("w_rest", w_rest), ("v_rest", v_rest), ("tau_w", tau_w),
                            ("a", a), ("b", b)):
            if not isinstance(value, float):
                raise ValueError(f"IzhikevichNode: {name} must be a float, got {value!r}")
        self.w_rest = w_rest
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)
        self.tau, self.v_c, self.a0, self.v_rest = tau, float(v_c), float(a0), v_rest
        self.tau_w, self.a, self.b = tau_w, a, b

    def reset(self):
        super().reset()
        self.w = self.w_rest

    def single_step_forward(self, x):
        if not isinstance(self.v, torch.Tensor):
            self.v = torch.full_like(x, self.v)
        if not isinstance(self.w, torch.Tensor):
            self.w = torch.full_like(x, self.w)
        v, w = self.v, self.w
        h = v + (x + self.a0 * (v - self.v_rest) * (v - self.v_c) - w) / self.tau
        w_next = w + (self.a * (h - self.v_rest) - w) / self.tau_w
        self._log_h(h)
        spike = self.surrogate_function(h - self.v_threshold)
        spike_d = spike.detach() if self.detach_reset else spike
        if self.v_reset is None:
            self.v = h - spike_d * self.v_threshold
        else:
            self.v = (1.0 - spike_d) * h + spike * self.v_reset
        self.w = w_next + self.b * spike
        return spike

    def neuron_description(self):
        constants = {"tau": self.tau, "v_c": self.v_c, "a0": self.a0, "v_rest": self.v_rest,
                     "tau_w": self.tau_w, "a": self.a, "b": self.b,
                     "v_threshold": self.v_threshold}
        states = {"v": 0.0 if self.v_reset is None else self.v_reset, "w": self.w_rest}
        charge = ["h = v + (x + a0 * (v - v_rest) * (v - v_c) - w) / tau",
                  "w = w + (a * (h - v_rest) - w) / tau_w"]
        if self.v_reset is None:
            return description(states, constants, charge, reset="soft",
                               detach_reset=self.detach_reset, update=["w = w + b * s"])
        sd = "detach(s)" if self.detach_reset else "s"
        return description(states, dict(constants, v_reset=self.v_reset), charge, reset="none",
                           update=[f"v = (1 - {sd}) * h + s * v_reset", "w = w + b * s"])


class CUBALIFNode(DescribedNode):
    """SpikingJelly's CUBALIFNode: a current-based synapse before a LIF membrane,
    C' = C c_decay + X, H = V v_decay + C'. Default surrogate: Rect."""

    def __init__(self, c_decay=0.5, v_decay=0.75, v_threshold=0.5, v_reset=0.0,
                 surrogate_function=None):
        super().__init__(v_threshold, v_reset, surrogate_function or _surrogate.Rect())
        self.c_decay, self.v_decay = float(c_decay), float(v_decay)

    def reset(self):
        super().reset()
        self.c = 0.0

    def neuronal_charge(self, x):
        if not isinstance(self.c, torch.Tensor):
            self.c = torch.full_like(x, self.c)
        self.c = self.c * self.c_decay + x
        return self.v * self.v_decay + self.c

    def neuron_description(self):
        return standard_reset(
            self, {"v": 0.0 if self.v_reset is None else self.v_reset, "c": 0.0},
            {"c_decay": self.c_decay, "v_decay": self.v_decay},
            ["c = c * c_decay + x", "h = v * v_decay + c"])


class KLIFNode(DescribedNode):
    """SpikingJelly's KLIFNode: a LIF charge scaled by a learnable k (initially 1) through a
    ReLU, H = relu(k H_LIF); with scale_reset the reset acts on H / k and v_threshold / k."""

    def __init__(self, scale_reset=False, tau=2.0, decay_input=True, v_threshold=1.0,
                 v_reset=0.0, surrogate_function=None, detach_reset=False, step_mode="s",
                 backend="torch", store_v_seq=False):
        tau = _check_tau("tau", tau)
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)
        self.scale_reset = bool(scale_reset)
        self.tau, self.decay_input = tau, bool(decay_input)
        self.k = nn.Parameter(torch.as_tensor(1.0))

    def single_step_forward(self, x):
        if not isinstance(self.v, torch.Tensor):
            self.v = torch.full_like(x, self.v)
        vr = self._v_reset_in_charge()
        v = self.v
        h = v + (x - (v - vr)) / self.tau if self.decay_input else v - (v - vr) / self.tau + x
        h = torch.relu(self.k * h)
        self._log_h(h)
        spike = self.surrogate_function(h - self.v_threshold)
        sd = spike.detach() if self.detach_reset else spike
        if self.scale_reset:
            h, threshold = h / self.k, self.v_threshold / self.k
        else:
            threshold = self.v_threshold
        if self.v_reset is None:
            self.v = h - sd * threshold
        else:
            self.v = sd * self.v_reset + (1.0 - sd) * h
        return spike

    def neuron_description(self):
        vr = 0.0 if self.v_reset is None else self.v_reset
        lif = ("h0 = v + (x - (v - vr)) / tau" if self.decay_input
               else "h0 = v - (v - vr) / tau + x")
        constants = {"tau": self.tau, "vr": vr, "v_threshold": self.v_threshold}
        charge = [lif, "h = relu(k * h0)"]
        if not self.scale_reset:
            return standard_reset(self, {"v": vr}, {"tau": self.tau, "vr": vr}, charge,
                                  operands=["k"])
        sd = "detach(s)" if self.detach_reset else "s"
        rule = (f"v = h / k - {sd} * (v_threshold / k)" if self.v_reset is None
                else f"v = {sd} * v_reset + (1 - {sd}) * (h / k)")
        if self.v_reset is not None:
            constants["v_reset"] = self.v_reset
        return description({"v": vr}, constants, charge, reset="none", update=[rule],
                           operands=["k"])


# LIAFNode's `act`: the activations a description can name.
_ACTIVATIONS: Dict[Any, str] = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh",
                                nn.Identity: ""}
_ACTIVATION_FUNCTIONS: Dict[Callable, str] = {torch.relu: "relu", torch.sigmoid: "sigmoid",
                                              torch.tanh: "tanh",
                                              torch.nn.functional.relu: "relu"}


def _activation_name(act: Any) -> Optional[str]:
    for cls, name in _ACTIVATIONS.items():
        if type(act) is cls:
            return name
    return _ACTIVATION_FUNCTIONS.get(act)


class LIAFNode(DescribedNode):
    """SpikingJelly's LIAFNode: a LIF whose output is act(H - v_threshold) (threshold_related)
    or act(H) instead of the spike; it still fires and resets. Takes LIFNode's arguments."""

    def __init__(self, act, threshold_related, tau=2.0, decay_input=True, v_threshold=1.0,
                 v_reset=0.0, surrogate_function=None, detach_reset=False, step_mode="s",
                 backend="torch", store_v_seq=False):
        if backend != "torch":
            raise ValueError("LIAFNode only supports for backend='torch'!")
        tau = _check_tau("tau", tau)
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)
        self.act, self.threshold_related = act, bool(threshold_related)
        self.tau, self.decay_input = tau, bool(decay_input)

    def neuronal_charge(self, x):
        vr = self._v_reset_in_charge()
        if self.decay_input:
            return self.v + (x - (self.v - vr)) / self.tau
        return self.v - (self.v - vr) / self.tau + x

    def single_step_forward(self, x):
        if not isinstance(self.v, torch.Tensor):
            self.v = torch.full_like(x, self.v)
        h = self.neuronal_charge(x)
        self._log_h(h)
        y = self.act(h - self.v_threshold if self.threshold_related else h)
        self._fire_and_reset(h)
        return y

    def neuron_description(self):
        name = _activation_name(self.act)
        if name is None:
            raise ValueError(f"LIAFNode: unsupported act {self.act!r} (ReLU, Sigmoid, Tanh, "
                             "Identity or torch.relu / sigmoid / tanh)")
        vr = 0.0 if self.v_reset is None else self.v_reset
        charge = ("h = v + (x - (v - vr)) / tau" if self.decay_input
                  else "h = v - (v - vr) / tau + x")
        argument = "h - v_threshold" if self.threshold_related else "h"
        output = f"{name}({argument})" if name else f"({argument})"
        return standard_reset(self, {"v": vr}, {"tau": self.tau, "vr": vr}, [charge],
                              output=output)


class ILIFNode(DescribedNode):
    """SpikingJelly's ILIFNode (integer LIF): H = V - V / tau + X, the output is the spike
    count C = round(clamp(H / v_threshold, 0, D)) of its MultiLevelSpikeCount (D levels, a
    straight-through gradient over its window), and the soft reset V = H - C v_threshold."""

    def __init__(self, tau=4.0 / 3.0, v_threshold=1.0, surrogate_function=None,
                 detach_reset=False, step_mode="s", backend="torch", store_v_seq=False):
        surrogate_function = (_surrogate.MultiLevelSpikeCount(4) if surrogate_function is None
                              else surrogate_function)
        if (not isinstance(surrogate_function, _surrogate.MultiLevelSpikeCount) or
                not surrogate_function.spiking):
            raise ValueError("surrogate_function must be a spiking MultiLevelSpikeCount.")
        tau = _check_tau("tau", tau)
        super().__init__(v_threshold, None, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)
        self.tau = tau

    def single_step_forward(self, x):
        if not isinstance(self.v, torch.Tensor):
            self.v = torch.full_like(x, self.v)
        h = self.v - (self.v - 0.0) / self.tau + x
        self._log_h(h)
        return self._fire_and_reset(h)

    def _fire_and_reset(self, h):
        count = self.surrogate_function(h / self.v_threshold)
        c = count.detach() if self.detach_reset else count
        self.v = h - c * self.v_threshold
        return count

    def firing_statistics(self, h):
        """Fires where the count is >= 1; the margin is the distance to the nearest level
        boundary (k + 1/2) v_threshold."""
        levels = self.surrogate_function.max_spike_count
        u = h / self.v_threshold
        boundaries = torch.arange(levels, dtype=h.dtype) + 0.5
        margin = (u.unsqueeze(-1) - boundaries).abs().min(-1).values * abs(self.v_threshold)
        return torch.round(torch.clamp(u, 0, levels)) >= 1, margin

    def neuron_description(self):
        sg = self.surrogate_function
        c = "detach(c)" if self.detach_reset else "c"
        return description(
            {"v": 0.0}, {"tau": self.tau, "vr": 0.0, "v_threshold": self.v_threshold},
            ["h = v - (v - vr) / tau + x"], fire="", reset="none",
            update=[f"c = spike_count(h / v_threshold, {sg.max_spike_count}, "
                    f"{sg.grad_min!r}, {sg.grad_max!r})", f"v = h - {c} * v_threshold"],
            output="c")


# GatedLIFNode's learnable parameters in operand order: [] or [C] each, conduct [T] or [T, C].
_GATED_OPERANDS = ("alpha", "beta", "gamma", "tau", "v_threshold", "linear_decay", "v_subreset",
                   "conduct")


def _logit(p: float) -> float:
    return -math.log(1 / p - 1)


class GatedLIFNode(MemoryModule):
    """SpikingJelly's GatedLIFNode (GLIF): learnable gates alpha, beta, gamma, a decay tau, a
    threshold, a linear decay and a soft-reset level (each a scalar, or per channel with
    `inplane`) and a per-step input conductance, all through sigmoids; the membrane and the
    last spike are its state. Multi-step only. Channels are dim 1 of each step's input
    (SpikingJelly's [N, C, H, W]; here any rank >= 2)."""

    def __init__(self, T: int, inplane=None, init_linear_decay=None, init_v_subreset=None,
                 init_tau: float = 0.25, init_v_threshold: float = 0.5,
                 init_conduct: float = 0.5, surrogate_function=None, step_mode="m",
                 backend="torch"):
        if not (isinstance(init_tau, float) and init_tau < 1.0):
            raise ValueError(f"GatedLIFNode: init_tau must be a float < 1, got {init_tau!r}")
        if not isinstance(T, int):
            raise ValueError(f"GatedLIFNode: T must be an int, got {T!r}")
        if not (inplane is None or isinstance(inplane, int)):
            raise ValueError(f"GatedLIFNode: inplane must be an int or None, got {inplane!r}")
        for name, value in (("init_linear_decay", init_linear_decay),
                            ("init_v_subreset", init_v_subreset)):
            if not (value is None or (isinstance(value, float) and value < 1.0)):
                raise ValueError(f"GatedLIFNode: {name} must be None or a float < 1, "
                                 f"got {value!r}")
        if step_mode != "m":
            raise ValueError("GatedLIFNode: step_mode must be 'm'")
        super().__init__()
        self.surrogate_function = surrogate_function or _surrogate.Sigmoid()
        self.backend, self.step_mode, self.T, self.inplane = backend, step_mode, T, inplane
        shape = () if inplane is None else (inplane,)
        self.alpha, self.beta, self.gamma = [
            nn.Parameter(0.2 * (torch.rand(shape) - 0.5)) for _ in range(3)]
        init_linear_decay = (init_v_threshold / (T * 2) if init_linear_decay is None
                             else init_linear_decay)
        init_v_subreset = init_v_threshold if init_v_subreset is None else init_v_subreset
        self.tau = nn.Parameter(torch.full(shape, _logit(init_tau)))
        self.v_threshold = nn.Parameter(torch.full(shape, _logit(init_v_threshold)))
        self.linear_decay = nn.Parameter(torch.full(shape, _logit(init_linear_decay)))
        self.v_subreset = nn.Parameter(torch.full(shape, _logit(init_v_subreset)))
        self.conduct = nn.Parameter(torch.full((T, *shape), _logit(init_conduct)))
        self.h_log = None
        self.reset()

    def reset(self):
        self.v = 0.0
        self.u = 0.0

    def _channels(self, p, x):
        """Parameter `p` ([] or [C]) broadcast over a step's input `x` ([N, C, ...])."""
        return p.view(1, -1, *([1] * (x.dim() - 2))) if p.dim() else p

    def forward(self, x_seq):
        if x_seq.shape[0] != self.T:
            raise ValueError(f"GatedLIFNode(T={self.T}) got {x_seq.shape[0]} steps")
        x0 = x_seq[0]
        alpha, beta, gamma, tau, v_threshold, linear_decay, v_subreset = [
            self._channels(getattr(self, name), x0).sigmoid() for name in _GATED_OPERANDS[:-1]]
        v = torch.full_like(x0, self.v) if not isinstance(self.v, torch.Tensor) else self.v
        spike = torch.zeros_like(x0)
        spikes = []
        for t in range(self.T):
            conduct = self._channels(self.conduct[t], x0).sigmoid()
            current = x_seq[t] * (1 - beta * (1 - conduct))
            h = ((1 - alpha * (1 - tau)) * v - (1 - alpha) * linear_decay) + current
            h = h - (1 - alpha * (1 - tau)) * v * gamma * spike - (1 - gamma) * v_subreset * spike
            if self.h_log is not None:
                self.h_log.append((h - v_threshold).detach())
            spike = self.surrogate_function(h - v_threshold)
            v = h
            spikes.append(spike)
        self.v = self.u = v
        return torch.stack(spikes)

    def firing_statistics(self, d):
        """The logged values are the distances to the threshold (it differs per channel)."""
        return d >= 0, d.abs()

    def neuron_description(self):
        a_tau = "(1 - sigmoid(alpha) * (1 - sigmoid(tau)))"
        return description(
            {"v": 0.0, "last_spike": 0.0}, {}, [
                "i = x * (1 - sigmoid(beta) * (1 - sigmoid(conduct)))",
                f"h = ({a_tau} * v - (1 - sigmoid(alpha)) * sigmoid(linear_decay)) + i",
                f"h = h - {a_tau} * v * sigmoid(gamma) * last_spike"
                " - (1 - sigmoid(gamma)) * sigmoid(v_subreset) * last_spike"],
            fire="h - sigmoid(v_threshold)", reset="none", update=["last_spike = s"],
            operands=[*_GATED_OPERANDS[:-1], "conduct[t]"])


class _NonSpikingNode(MemoryModule):
    """SpikingJelly's NonSpikingBaseNode: the membrane over T without firing (V from 0).
    decode: None returns the list of membranes per step; 'mean-mem' their mean over T."""

    DECODES = (None, "mean-mem", "max-mem", "max-abs-mem", "last_mem")

    def __init__(self, decode=None):
        super().__init__()
        if decode not in self.DECODES:
            raise ValueError(f"decode must be one of {self.DECODES}, got {decode!r}")
        self.decode = decode
        self.step_mode = "m"
        self.reset()

    def supported_step_mode(self):
        return ("m",)

    def reset(self):
        self.v = 0.0

    def forward(self, x_seq):
        self.v = torch.full_like(x_seq[0].data, fill_value=0.0)
        v_seq = []
        for t in range(x_seq.shape[0]):
            self.neuronal_charge(x_seq[t])
            v_seq.append(self.v)
        if self.decode == "max-mem":
            return torch.max(torch.stack(v_seq, 0), 0).values
        if self.decode == "max-abs-mem":
            stacked = torch.stack(v_seq, 0)
            high, low = torch.max(stacked, 0).values, torch.min(stacked, 0).values
            return high * (high.abs() > low.abs()) + low * (high.abs() <= low.abs())
        if self.decode == "mean-mem":
            return torch.mean(torch.stack(v_seq, 0), 0)
        if self.decode == "last_mem":
            return v_seq[-1]
        return v_seq

    def neuron_description(self):
        raise NotImplementedError


class NonSpikingIFNode(_NonSpikingNode):
    """V = V + X, output V."""

    def neuronal_charge(self, x):
        self.v = self.v + x

    def neuron_description(self):
        return description({"v": 0.0}, {}, ["h = v + x"], fire="", reset="none", output="h")


class NonSpikingLIFNode(_NonSpikingNode):
    """V = V + (X - V) / tau, output V."""

    def __init__(self, tau=2.0, decode=None):
        super().__init__(decode)
        self.tau = float(tau)

    def neuronal_charge(self, x):
        self.v = self.v + (x - self.v) / self.tau

    def neuron_description(self):
        return description({"v": 0.0}, {"tau": self.tau}, ["h = v + (x - v) / tau"], fire="",
                           reset="none", output="h")


# Every described class by name, SpikingJelly's classes of the same name included: the
# description functions read only attributes both define alike.
DESCRIBED = {cls.__name__: cls.neuron_description
             for cls in (SimpleIFNode, SimpleLIFNode, HalfThresholdIFNode, QIFNode, EIFNode,
                         IzhikevichNode, CUBALIFNode, KLIFNode, LIAFNode, ILIFNode,
                         GatedLIFNode, NonSpikingIFNode, NonSpikingLIFNode)}
