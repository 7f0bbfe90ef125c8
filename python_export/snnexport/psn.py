"""SpikingJelly's parallel spiking neurons (activation_based/neuron/psn.py): PSN, MaskedPSN and
SlidingPSN, multi-step only. Each mixes its input [T, N, ...] over time with a learnable
[T, T] matrix W (for SlidingPSN a band built from k weights), adds a learnable per-step bias B
and fires where the result is >= 0 (docs/semantics.md):

    H = W X + B (X viewed as [T, N * ...]),  S = Heaviside(H)

The PyTorch ops here are the reference; `export_onnx` writes each as one
`ParallelSpikingNeuron` node. Constructor arguments and defaults follow SpikingJelly's current
source."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import torch
import torch.nn.functional as F
from torch import nn

from . import surrogate as _surrogate
from .base import MemoryModule, MultiStepModule, check_step_mode

__all__ = ["PSN", "MaskedPSN", "SlidingPSN"]

SLIDING_BACKENDS = ("gemm", "conv")


def _time_mixing_parameters(module: nn.Module, T: int) -> None:
    """PSN's and MaskedPSN's weight [T, T] (kaiming uniform, a = sqrt(5)) and bias [T, 1]
    (-1), initialised in SpikingJelly's order so that a seed gives its values."""
    module.weight = nn.Parameter(torch.zeros([T, T]))
    module.bias = nn.Parameter(torch.zeros([T, 1]))
    nn.init.kaiming_uniform_(module.weight, a=math.sqrt(5))
    nn.init.constant_(module.bias, -1.0)


class _ParallelFire:
    """What the three classes share: the surrogate spike of H = addmm(bias, W, X) and, while
    `h_log` is a list, a record of every H (reference.py's firing rates and margins)."""

    h_log: Optional[List[torch.Tensor]] = None

    def firing_statistics(self, h: torch.Tensor):
        """(fired, margin) of logged charges: H includes the bias, so it fires at H >= 0."""
        return h >= 0, h.abs()

    def _fire(self, h_seq: torch.Tensor, shape: torch.Size) -> torch.Tensor:
        h_seq = h_seq.view(shape)
        if self.h_log is not None:
            self.h_log.append(h_seq.detach())
        return self.surrogate_function(h_seq)


class PSN(nn.Module, MultiStepModule, _ParallelFire):
    """SpikingJelly's PSN: H = W X + B with W [T, T] and B [T, 1] learnable, S = Heaviside(H).
    Always multi-step: x_seq is [T, N, ...]."""

    def __init__(self, T: int,
                 surrogate_function: Optional[_surrogate.SurrogateFunctionBase] = None) -> None:
        super().__init__()
        self.T = T
        self.surrogate_function = surrogate_function or _surrogate.ATan()
        _time_mixing_parameters(self, T)

    def forward(self, x_seq: torch.Tensor) -> torch.Tensor:
        h_seq = torch.addmm(self.bias, self.weight, x_seq.flatten(1))
        return self._fire(h_seq, x_seq.shape)

    def extra_repr(self) -> str:
        return f"T={self.T}, "


class MaskedPSN(MemoryModule, _ParallelFire):
    """SpikingJelly's MaskedPSN: PSN whose W only reaches k steps back. mask0 is 1 where
    0 <= i - j < k; W_masked = W * mask0 when lambda_ >= 1, otherwise
    (lambda_ * mask0 + (1 - lambda_) * mask1) * W with mask1 all ones (lambda_ ramps the mask
    in during training; set it with `m.lambda_ = value`).

    Only multi-step mode runs here (SpikingJelly's single-step queue is not supported). The
    masks and lambda_ are buffers as in SpikingJelly, but not saved in the state_dict: they
    follow from k, T and the `lambda` the exported node carries. Loading a SpikingJelly
    state_dict that holds them takes its lambda_ and checks nothing else of them."""

    def __init__(self, k: int, T: int, lambda_init: float = 0.0,
                 surrogate_function: Optional[_surrogate.SurrogateFunctionBase] = None,
                 step_mode: str = "s") -> None:
        super().__init__()
        self.step_mode = check_step_mode(step_mode)
        self.k = k
        self.T = T
        self.surrogate_function = surrogate_function or _surrogate.ATan()
        self.register_buffer("_lambda_", torch.as_tensor(lambda_init), persistent=False)
        _time_mixing_parameters(self, T)
        mask1 = torch.ones([T, T])
        self.register_buffer("mask0", torch.tril(mask1) * torch.triu(mask1, -(k - 1)),
                             persistent=False)
        self.register_buffer("mask1", mask1, persistent=False)

    @staticmethod
    def gen_masked_weight(lambda_: torch.Tensor, mask0: torch.Tensor, mask1: torch.Tensor,
                          weight: torch.Tensor) -> torch.Tensor:
        return (lambda_ * mask0 + (1.0 - lambda_) * mask1) * weight

    def masked_weight(self) -> torch.Tensor:
        if self.lambda_ >= 1.0:
            return self.weight * self.mask0
        return self.gen_masked_weight(self.lambda_, self.mask0, self.mask1, self.weight)

    @property
    def lambda_(self) -> torch.Tensor:
        return self._lambda_

    @lambda_.setter
    def lambda_(self, value: float) -> None:
        torch.fill_(self._lambda_, value)

    def reset(self) -> None:
        """Nothing to clear: multi-step mode keeps no state between calls."""

    def forward(self, x_seq: torch.Tensor) -> torch.Tensor:
        if self.step_mode != "m":
            raise NotImplementedError("MaskedPSN: only step_mode='m' is supported by snnexport")
        assert x_seq.shape[0] == self.T
        h_seq = torch.addmm(self.bias, self.masked_weight(), x_seq.flatten(1))
        return self._fire(h_seq, x_seq.shape)

    def _load_from_state_dict(self, state_dict: Dict[str, Any], prefix: str, *args: Any,
                              **kwargs: Any) -> None:
        # SpikingJelly saves its buffers: accept them, keeping its lambda_.
        lambda_ = state_dict.pop(prefix + "_lambda_", None)
        for name in ("mask0", "mask1"):
            state_dict.pop(prefix + name, None)
        if lambda_ is not None:
            self.lambda_ = float(lambda_)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        return f"lambda_={float(self.lambda_)}, T={self.T}, k={self.k}"


class SlidingPSN(MemoryModule, _ParallelFire):
    """SpikingJelly's SlidingPSN: H[t] = sum over i < k of weight[i] X[t - k + 1 + i] + bias
    (steps before 0 count as 0), weight [k], bias a scalar. exp_init starts weight at
    (..., 1/4, 1/2, 1), otherwise kaiming uniform. The 'gemm' backend builds the banded [T, T]
    matrix (gen_gemm_weight) and multiplies; 'conv' computes the same sums as a 1-d
    convolution, in another order. Only multi-step mode runs here."""

    def __init__(self, k: int, exp_init: bool = True,
                 surrogate_function: Optional[_surrogate.SurrogateFunctionBase] = None,
                 step_mode: str = "s", backend: str = "gemm") -> None:
        super().__init__()
        self.step_mode = check_step_mode(step_mode)
        self.k = k
        self.surrogate_function = surrogate_function or _surrogate.ATan()
        self.backend = backend
        if exp_init:
            weight = torch.ones([k])
            for i in range(k - 2, -1, -1):
                weight[i] = weight[i + 1] / 2.0
        else:
            weight = torch.ones([1, k])
            nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
            weight = weight[0]
        self.weight = nn.Parameter(weight)
        self.bias = nn.Parameter(torch.as_tensor(-1.0))

    @property
    def supported_backends(self) -> tuple:
        return SLIDING_BACKENDS

    def gen_gemm_weight(self, T: int) -> torch.Tensor:
        """The [T, T] matrix whose row i holds the last min(i + 1, k) weights, ending at
        column i."""
        weight = torch.zeros([T, T], device=self.weight.device)
        for i in range(T):
            end = i + 1
            start = max(0, i + 1 - self.k)
            length = min(end - start, self.k)
            weight[i][start:end] = self.weight[self.k - length:self.k]
        return weight

    def reset(self) -> None:
        """Nothing to clear: multi-step mode keeps no state between calls."""

    def forward(self, x_seq: torch.Tensor) -> torch.Tensor:
        if self.step_mode != "m":
            raise NotImplementedError("SlidingPSN: only step_mode='m' is supported by snnexport")
        if self.backend == "gemm":
            h_seq = torch.addmm(self.bias, self.gen_gemm_weight(x_seq.shape[0]),
                                x_seq.flatten(1))
            return self._fire(h_seq, x_seq.shape)
        if self.backend == "conv":
            # [T, N, ...] -> [N*..., 1, T], causal padding of k - 1 steps.
            x = F.pad(x_seq.flatten(1).t().unsqueeze(1), pad=(self.k - 1, 0))
            x = F.conv1d(x, self.weight.view(1, 1, -1), stride=1)
            return self._fire(x.squeeze(1).t() + self.bias, x_seq.shape)
        raise NotImplementedError(self.backend)

    def extra_repr(self) -> str:
        return f"order={self.k}"
