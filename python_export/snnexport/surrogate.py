"""Surrogate spike functions: Heaviside forward, smooth derivative backward (docs/semantics.md)."""
import math

import torch
from torch import nn


def heaviside(x):
    # S = 1 where x >= 0 (note: >=, so x == 0 spikes).
    return (x >= 0).to(x.dtype)


class _SigmoidGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return heaviside(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        sg = torch.sigmoid(ctx.alpha * x)
        return grad * (ctx.alpha * sg * (1.0 - sg)), None


class _ATanGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return heaviside(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        a = ctx.alpha
        return grad * ((a / 2.0) / (1.0 + (math.pi / 2.0 * a * x) ** 2)), None


class SurrogateFunctionBase(nn.Module):
    """Base of the surrogate modules; `name` is the ONNX `surrogate` attribute value.
    spiking=True (SpikingJelly's default): Heaviside forward, surrogate gradient backward.
    spiking=False: the smooth primitive function forward and backward (an ANN activation;
    export refuses it, since a neuron then emits no spikes)."""
    name = None
    _fn = None

    def __init__(self, alpha, spiking=True):
        super().__init__()
        self.alpha = float(alpha)
        self.spiking = bool(spiking)

    @staticmethod
    def primitive(x, alpha):
        raise NotImplementedError

    def forward(self, x):
        if self.spiking:
            return self._fn.apply(x, self.alpha)
        return self.primitive(x, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}, spiking={self.spiking}"


class Sigmoid(SurrogateFunctionBase):
    """dS/dx = alpha * sg(alpha x) * (1 - sg(alpha x))."""
    name = "sigmoid"
    _fn = _SigmoidGrad

    def __init__(self, alpha=4.0, spiking=True):
        super().__init__(alpha, spiking)

    @staticmethod
    def primitive(x, alpha):
        return torch.sigmoid(alpha * x)


class ATan(SurrogateFunctionBase):
    """dS/dx = (alpha / 2) / (1 + (pi/2 * alpha * x)^2)."""
    name = "atan"
    _fn = _ATanGrad

    def __init__(self, alpha=2.0, spiking=True):
        super().__init__(alpha, spiking)

    @staticmethod
    def primitive(x, alpha):
        return torch.atan(math.pi / 2.0 * alpha * x) / math.pi + 0.5
