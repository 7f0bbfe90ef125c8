"""Encoders that turn data into spikes before the network (SpikingJelly's `encoding`).
They are random, so they belong to the data pipeline: export refuses them inside a model."""
from typing import Optional

import torch
from torch import nn

from .base import StepModule, check_step_mode

__all__ = ["PoissonEncoder"]


class PoissonEncoder(nn.Module, StepModule):
    """Each element spikes with probability x (x must lie in [0, 1]): spike = (u <= x) with
    u uniform in [0, 1). `generator` makes the draws reproducible (SpikingJelly draws from the
    global generator, which is what None does here too). In 'm' mode x is [T, N, ...] and
    every step draws anew, as the single-step encoder called T times."""

    def __init__(self, step_mode="s", generator: Optional[torch.Generator] = None):
        super().__init__()
        self.step_mode = check_step_mode(step_mode)
        self.generator = generator

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = torch.rand(x.shape, generator=self.generator, dtype=x.dtype, device=x.device)
        return u.le(x).to(x)

    def extra_repr(self):
        return f"step_mode={self.step_mode}"
