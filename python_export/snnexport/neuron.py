"""Stateful spiking neurons (PyTorch reference). Equations: docs/semantics.md."""
import math

import torch
from torch import nn

from . import surrogate as _surrogate
from .backend import BACKENDS, check_backend
from .base import MemoryModule, check_step_mode

__all__ = ["MemoryModule", "BaseNode", "IFNode", "LIFNode", "ParametricLIFNode"]


class BaseNode(MemoryModule):
    """SpikingJelly's BaseNode arguments, in its order and with its defaults (step_mode='s').
    `backend` names SpikingJelly's implementation ('torch', 'cupy', 'triton'); every one
    computes the same float expressions, so it is recorded and otherwise ignored here (see
    backend.py)."""

    def __init__(self, v_threshold=1.0, v_reset=0.0, surrogate_function=None,
                 detach_reset=False, step_mode="s", backend="torch", store_v_seq=False):
        super().__init__()
        check_step_mode(step_mode)
        self.backend = check_backend(type(self).__name__, backend)
        self.v_threshold = float(v_threshold)
        self.v_reset = None if v_reset is None else float(v_reset)
        self.surrogate_function = surrogate_function or _surrogate.Sigmoid()
        self.detach_reset = bool(detach_reset)
        self.step_mode = step_mode
        self.store_v_seq = store_v_seq
        # When a list, every charge H is appended (reference.py uses it for threshold margins).
        self.h_log = None
        self.reset()

    def reset(self):
        self.v = 0.0 if self.v_reset is None else self.v_reset
        self.v_seq = None

    def _v_reset_in_charge(self):
        # Soft reset uses V_reset = 0 in the charge equation.
        return 0.0 if self.v_reset is None else self.v_reset

    def neuronal_charge(self, x):
        raise NotImplementedError

    def _log_h(self, h):
        """Keeps the charge H when h_log is a list (reference.py's threshold margins)."""
        if self.h_log is not None:
            self.h_log.append(h.detach())

    def firing_statistics(self, h):
        """(fired, margin) of the logged charges `h` ([T, ...]): where the neuron spikes and how
        far each charge is from the nearest value that would change its output."""
        return h >= self.v_threshold, (h - self.v_threshold).abs()

    def single_step_forward(self, x):
        if not isinstance(self.v, torch.Tensor):
            self.v = torch.full_like(x, self.v)
        h = self.neuronal_charge(x)
        self._log_h(h)
        return self._fire_and_reset(h)

    def _fire_and_reset(self, h):
        """The spike of charge `h`; leaves the reset potential in self.v."""
        spike = self.surrogate_function(h - self.v_threshold)
        s = spike.detach() if self.detach_reset else spike
        if self.v_reset is None:
            self.v = h - s * self.v_threshold
        else:
            self.v = s * self.v_reset + (1.0 - s) * h
        return spike

    def multi_step_forward(self, x_seq):
        out, vs = [], []
        for x in x_seq:
            out.append(self.single_step_forward(x))
            if self.store_v_seq:
                vs.append(self.v)
        if self.store_v_seq:
            self.v_seq = torch.stack(vs)
        return torch.stack(out)

    def forward(self, x):
        if self.step_mode == "m":
            return self.multi_step_forward(x)
        return self.single_step_forward(x)

    supported_backends = BACKENDS

    def extra_repr(self):
        return (f"v_threshold={self.v_threshold}, v_reset={self.v_reset}, "
                f"detach_reset={self.detach_reset}, step_mode={self.step_mode}")


class IFNode(BaseNode):
    """H = V + X."""

    def neuronal_charge(self, x):
        return self.v + x


def _check_tau(name, tau):
    tau = float(tau)
    if not tau > 1.0:
        raise ValueError(f"{name} must be > 1, got {tau}")
    return tau


class LIFNode(BaseNode):
    """decay_input: H = V + (X - (V - Vr)) / tau; else H = V - (V - Vr) / tau + X."""

    def __init__(self, tau=2.0, decay_input=True, v_threshold=1.0, v_reset=0.0,
                 surrogate_function=None, detach_reset=False, step_mode="s", backend="torch",
                 store_v_seq=False):
        tau = _check_tau("tau", tau)
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)
        self.tau = tau
        self.decay_input = bool(decay_input)

    def neuronal_charge(self, x):
        vr = self._v_reset_in_charge()
        if self.decay_input:
            return self.v + (x - (self.v - vr)) / self.tau
        return self.v - (self.v - vr) / self.tau + x

    def extra_repr(self):
        return f"tau={self.tau}, decay_input={self.decay_input}, " + super().extra_repr()


class ParametricLIFNode(BaseNode):
    """LIF with 1/tau = sigmoid(w), w a learnable scalar initialised to -ln(init_tau - 1)."""

    def __init__(self, init_tau=2.0, decay_input=True, v_threshold=1.0, v_reset=0.0,
                 surrogate_function=None, detach_reset=False, step_mode="s", backend="torch",
                 store_v_seq=False):
        init_tau = _check_tau("init_tau", init_tau)
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         backend, store_v_seq)
        self.init_tau = init_tau
        self.decay_input = bool(decay_input)
        self.w = nn.Parameter(torch.tensor(-math.log(self.init_tau - 1.0)))

    def neuronal_charge(self, x):
        vr = self._v_reset_in_charge()
        k = self.w.sigmoid()
        if self.decay_input:
            return self.v + (x - (self.v - vr)) * k
        return self.v - (self.v - vr) * k + x

    def extra_repr(self):
        return f"init_tau={self.init_tau}, decay_input={self.decay_input}, " + super().extra_repr()


# SpikingJelly's other neuron classes, under `neuron.` as there (described_neurons.py: each is
# exported by its parts). Imported last: that module builds on BaseNode above.
from .described_neurons import *  # noqa: E402,F401,F403
from .described_neurons import __all__ as _described_all  # noqa: E402

__all__ += [name for name in _described_all if name != "DescribedNode"]

# The parallel spiking neurons (psn.py): one op each, not described by parts.
from .psn import *  # noqa: E402,F401,F403
from .psn import __all__ as _psn_all  # noqa: E402

__all__ += _psn_all
