"""Surrogate spike functions: Heaviside forward, smooth derivative backward (docs/semantics.md).

Every class of SpikingJelly's ``activation_based.surrogate`` that a spiking neuron fires with,
under the same name, constructor arguments and defaults, and the same backward formula
(x = H - v_threshold). With ``spiking=True`` (the default) the forward is the Heaviside step
and the backward the surrogate's dS/dx; with ``spiking=False`` the forward is the smooth
primitive function (an ANN activation, which export refuses: the neuron then emits no spikes).
"""
import math
from typing import Callable, Tuple

import torch
import torch.nn.functional as F
from torch import nn


def heaviside(x):
    # S = 1 where x >= 0 (note: >=, so x == 0 spikes).
    return (x >= 0).to(x.dtype)


class _SurrogateSpike(torch.autograd.Function):
    """Heaviside forward; backward grad * dS/dx by the class's `gradient`."""

    @staticmethod
    def forward(ctx, x, gradient, params):
        ctx.save_for_backward(x)
        ctx.gradient, ctx.params = gradient, params
        return heaviside(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.gradient(x, *ctx.params), None, None


class SurrogateFunctionBase(nn.Module):
    """Base of the surrogate modules. `name` is the ONNX `surrogate` attribute value;
    `parameters` SpikingJelly's constructor arguments in order (the first is exported as
    `alpha`, the second as `beta`); each is an attribute of the module."""
    name: str = ""
    parameters: Tuple[str, ...] = ("alpha",)

    def __init__(self, spiking=True, **params):
        super().__init__()
        self.spiking = bool(spiking)
        for key in self.parameters:
            setattr(self, key, params[key])

    def values(self):
        return tuple(getattr(self, key) for key in self.parameters)

    @staticmethod
    def gradient(x, *params):
        raise NotImplementedError

    @staticmethod
    def primitive(x, *params):
        raise NotImplementedError(f"this surrogate has no primitive function")

    def forward(self, x):
        if self.spiking:
            return _SurrogateSpike.apply(x, self.gradient, self.values())
        return self.primitive(x, *self.values())

    def extra_repr(self):
        values = ", ".join(f"{k}={getattr(self, k)}" for k in self.parameters)
        return f"{values}, spiking={self.spiking}"


def _one(default: float, name: str, gradient: Callable, primitive: Callable = None,
         check: Callable = None):
    """A surrogate class of one parameter `alpha`."""

    class Surrogate(SurrogateFunctionBase):
        def __init__(self, alpha=default, spiking=True):
            if check is not None:
                check(alpha)
            super().__init__(spiking=spiking, alpha=float(alpha))

    Surrogate.name = name
    Surrogate.gradient = staticmethod(gradient)
    if primitive is not None:
        Surrogate.primitive = staticmethod(primitive)
    return Surrogate


def _positive(what):
    def check(value):
        if not value > 0:
            raise ValueError(f"{what} must be > 0, got {value}")
    return check


def _sigmoid_grad(x, alpha):
    sg = torch.sigmoid(x * alpha)
    return (1.0 - sg) * sg * alpha


def _atan_grad(x, alpha):
    a = alpha / 2
    ax = math.pi * a * x
    return a / (1 + ax * ax)


def _piecewise_quadratic_grad(x, alpha):
    x_abs = x.abs()
    return (-alpha ** 2 * x_abs + alpha).masked_fill(x_abs > 1 / alpha, 0)


def _piecewise_quadratic(x, alpha):
    mask0 = (x > 1.0 / alpha).to(x)
    mask1 = (x.abs() <= 1.0 / alpha).to(x)
    return mask0 + mask1 * (-alpha ** 2 / 2 * x.square() * x.sign() + alpha * x + 0.5)


def _piecewise_exp(x, alpha):
    nonnegative = heaviside(x)
    sign = nonnegative * 2.0 - 1.0
    return nonnegative - (sign * x * -alpha).exp() / 2.0 * sign


def _nonzero_sign_log_abs(x, alpha):
    sign = heaviside(x) * 2.0 - 1.0
    return sign * (alpha * sign * x + 1).log()


def _q_pseudo_spike(x, alpha):
    nonnegative = heaviside(x)
    sign = nonnegative * 2.0 - 1.0
    return nonnegative - sign * (0.5 * (1.0 + 2.0 / (alpha - 1.0) * x * sign).pow(1.0 - alpha))


def _above_one(alpha):
    if not alpha > 1:
        raise ValueError(f"QPseudoSpike: alpha must be > 1, got {alpha}")


Sigmoid = _one(4.0, "sigmoid", _sigmoid_grad, lambda x, a: torch.sigmoid(x * a))
ATan = _one(2.0, "atan", _atan_grad,
            lambda x, a: torch.atan(math.pi / 2 * a * x) / math.pi + 0.5)
PiecewiseQuadratic = _one(1.0, "piecewise_quadratic", _piecewise_quadratic_grad,
                          _piecewise_quadratic)
PiecewiseExp = _one(1.0, "piecewise_exp", lambda x, a: a / 2 * (-a * x.abs()).exp(),
                    _piecewise_exp)
SoftSign = _one(2.0, "soft_sign", lambda x, a: 1.0 / (2 * a * (1 / a + x.abs()).pow(2)),
                lambda x, a: (F.softsign(x * a) + 1.0) / 2.0, _positive("SoftSign: alpha"))
SuperSpike = _one(1.0, "super_spike", lambda x, a: a / torch.pow(torch.abs(x) + 1.0, 2))
NonzeroSignLogAbs = _one(1.0, "nonzero_sign_log_abs", lambda x, a: 1.0 / (1 / a + x.abs()),
                         _nonzero_sign_log_abs)
Erf = _one(2.0, "erf", lambda x, a: (-(x * a).pow(2)).exp() * (a / math.sqrt(math.pi)),
           lambda x, a: torch.erfc(-a * x) / 2.0)
QPseudoSpike = _one(2.0, "q_pseudo_spike",
                    lambda x, a: (1 + 2 / (a - 1) * x.abs()).pow(-a), _q_pseudo_spike,
                    _above_one)
FakeNumericalGradient = _one(
    0.3, "fake_numerical_gradient",
    lambda x, a: torch.clamp_max(((x >= 0.0) * 2.0 - 1.0) / x, a))
LogTailedReLU = _one(
    0.0, "log_tailed_relu",
    lambda x, a: torch.where(x > 1.0, 1.0 / x, torch.where(x <= 0.0, torch.full_like(x, a),
                                                             torch.ones_like(x))),
    lambda x, a: torch.where(x > 1.0, torch.log(torch.clamp_min(x, 1.0)) + 1.0,
                             F.leaky_relu(x, a)))
Rect = _one(1.0, "rect", lambda x, a: a * (x.abs() < 0.5 / a).to(x),
            lambda x, a: torch.clamp(a * x + 0.5, min=0.0, max=1.0))
for _cls, _name in ((Sigmoid, "Sigmoid"), (ATan, "ATan"),
                    (PiecewiseQuadratic, "PiecewiseQuadratic"), (PiecewiseExp, "PiecewiseExp"),
                    (SoftSign, "SoftSign"), (SuperSpike, "SuperSpike"),
                    (NonzeroSignLogAbs, "NonzeroSignLogAbs"), (Erf, "Erf"),
                    (QPseudoSpike, "QPseudoSpike"),
                    (FakeNumericalGradient, "FakeNumericalGradient"),
                    (LogTailedReLU, "LogTailedReLU"), (Rect, "Rect")):
    _cls.__name__ = _cls.__qualname__ = _name


class PiecewiseLeakyReLU(SurrogateFunctionBase):
    """dS/dx = 1 / (2w) where |x| < w, else c."""
    name = "piecewise_leaky_relu"
    parameters = ("w", "c")

    def __init__(self, w=1.0, c=0.01, spiking=True):
        if not w > 0.0:
            raise ValueError(f"PiecewiseLeakyReLU: w must be > 0, got {w}")
        super().__init__(spiking=spiking, w=float(w), c=float(c))

    @staticmethod
    def gradient(x, w, c):
        inside = x.abs() < w
        return x.masked_fill(inside, 1 / (2 * w)).masked_fill(inside.logical_not(), c)

    @staticmethod
    def primitive(x, w, c):
        below, above = (x < -w).to(x), (x > w).to(x)
        middle = torch.ones_like(x) - below - above
        if c == 0:
            return middle * (x / (2 * w) + 1 / 2) + above
        cw = c * w
        return below * (c * x + cw) + above * (c * x + (-cw + 1)) + middle * (x / (2 * w) + 0.5)


class SquarewaveFourierSeries(SurrogateFunctionBase):
    """dS/dx = 4 / T_period * sum over i in [1, n) of cos((2i - 1) * 2 pi / T_period * x)."""
    name = "squarewave_fourier_series"
    parameters = ("n", "T_period")

    def __init__(self, n: int = 2, T_period: float = 8, spiking=True):
        if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1) or not T_period > 0:
            raise ValueError(f"SquarewaveFourierSeries: n must be an int >= 1 and T_period > 0, "
                             f"got n={n!r}, T_period={T_period!r}")
        super().__init__(spiking=spiking, n=n, T_period=float(T_period))

    @staticmethod
    def gradient(x, n, T_period):
        w = math.pi * 2.0 / T_period
        grad = torch.zeros_like(x)
        for i in range(1, int(n)):
            grad = grad + torch.cos((2 * i - 1.0) * w * x)
        return grad * (4.0 / T_period)

    @staticmethod
    def primitive(x, n, T_period):
        w = math.pi * 2.0 / T_period
        ret = torch.zeros_like(x)
        for i in range(1, int(n)):
            c = 2 * i - 1.0
            ret = ret + torch.sin(c * w * x) / c
        return 0.5 + 2.0 / math.pi * ret


class S2NN(SurrogateFunctionBase):
    """dS/dx = alpha * sg(alpha x) * (1 - sg(alpha x)) for x < 0, beta / (x + 1) otherwise."""
    name = "s2nn"
    parameters = ("alpha", "beta")

    def __init__(self, alpha=4.0, beta=1.0, spiking=True):
        super().__init__(spiking=spiking, alpha=float(alpha), beta=float(beta))

    @staticmethod
    def gradient(x, alpha, beta):
        sg = torch.sigmoid(alpha * x)
        return torch.where(x < 0.0, alpha * sg * (1.0 - sg), beta / (x + 1.0))

    @staticmethod
    def primitive(x, alpha, beta):
        return torch.where(x < 0.0, torch.sigmoid(x * alpha),
                           beta * torch.log((x + 1.0).abs() + 1e-5) + 0.5)


class LeakyKReLU(SurrogateFunctionBase):
    """dS/dx = k for x >= 0, leak otherwise."""
    name = "leaky_k_relu"
    parameters = ("leak", "k")

    def __init__(self, leak: float = 0.0, k: float = 1.0, spiking=True):
        super().__init__(spiking=spiking, leak=float(leak), k=float(k))

    @staticmethod
    def gradient(x, leak, k):
        mask = (x >= 0.0).to(x)
        return mask * k + (1.0 - mask) * leak

    @staticmethod
    def primitive(x, leak, k):
        mask = (x >= 0.0).to(x)
        return (leak * (1.0 - mask) + k * mask) * x


def from_spec(spec: str) -> SurrogateFunctionBase:
    """A surrogate from "name" (its `surrogate` attribute value, SpikingJelly's defaults) or
    "name:p1[,p2]" (its parameters in SpikingJelly's order), e.g. "s2nn:3,0.8"."""
    from .export.names import SURROGATE_PARAMETERS, SURROGATES
    name, _, rest = spec.partition(":")
    classes = {v: k for k, v in SURROGATES.items()}
    if name not in classes:
        raise ValueError(f"unknown surrogate {name!r} (expected one of {', '.join(classes)})")
    cls = globals()[classes[name]]
    keys = [k for k, _ in SURROGATE_PARAMETERS[name]]
    values = [float(v) for v in rest.split(",")] if rest else []
    if len(values) > len(keys):
        raise ValueError(f"surrogate {name!r} takes {len(keys)} parameter(s) "
                         f"({', '.join(keys)}), got {len(values)}")
    kwargs = dict(zip(keys, values))
    if "n" in kwargs:
        kwargs["n"] = int(kwargs["n"])
    return cls(**kwargs)


class _SpikeCount(torch.autograd.Function):
    """round(clamp(x, 0, D)) forward; the gradient straight through where lo <= x <= hi."""

    @staticmethod
    def forward(ctx, x, levels, low, high):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return torch.round(torch.clamp(x, 0, levels))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        mask = (x >= ctx.low) & (x <= ctx.high)
        return grad * mask.to(grad.dtype), None, None, None


class MultiLevelSpikeCount(nn.Module):
    """SpikingJelly's multi-level spike count (ILIFNode's firing): forward
    round(clamp(x, 0, max_spike_count)), backward a rectangular straight-through estimator
    over grad_window (default [0, max_spike_count]). Only ILIFNode exports with it: its
    description carries it as `spike_count(...)` (docs/neuron-programs.md)."""

    def __init__(self, max_spike_count: int, spiking: bool = True, grad_window=None):
        super().__init__()
        if not isinstance(max_spike_count, int) or isinstance(max_spike_count, bool):
            raise TypeError("max_spike_count must be an integer.")
        if max_spike_count < 1:
            raise ValueError("max_spike_count must be >= 1.")
        grad_min, grad_max = ((0.0, float(max_spike_count)) if grad_window is None
                              else grad_window)
        if grad_min > grad_max:
            raise ValueError("grad_window must satisfy grad_min <= grad_max.")
        self.max_spike_count, self.spiking = max_spike_count, bool(spiking)
        self.grad_min, self.grad_max = float(grad_min), float(grad_max)

    def forward(self, x):
        if self.spiking:
            return _SpikeCount.apply(x, self.max_spike_count, self.grad_min, self.grad_max)
        return torch.clamp(x, 0, self.max_spike_count)

    def extra_repr(self):
        return (f"max_spike_count={self.max_spike_count}, spiking={self.spiking}, "
                f"grad_window=({self.grad_min}, {self.grad_max})")


# Kinds SpikingJelly has that are not spike functions (they pass or sample their input):
# export refuses them by class name.
UNSUPPORTED = ("DeterministicPass", "PoissonPass")
