"""A described neuron fed back its own output through a Linear: ``RecurrentNeuron``.

Step t's input is ``x[t] + out[t-1] W^T + b`` with ``out[-1] = 0`` (the feedback arrives one
step late; step 0 receives the bias alone), the semantics of snnTorch's ``RLeaky`` /
``RSynaptic`` and of ``snn.recurrent_neuron`` (docs/nir.md). The ONNX exporter writes it as
one ``RecurrentNeuron`` node: the cell's description, the feedback's weight and bias.
"""
from __future__ import annotations

import torch
from torch import nn

from .base import MemoryModule
from .described_neurons import DESCRIBED

__all__ = ["RecurrentNeuron"]


class RecurrentNeuron(MemoryModule):
    """Multi-step on ``[T, N, features]``: ``cell`` (a neuron described by its parts, such as
    ``nir.NirNeuron``) stepped one step at a time, its input adding ``recurrent(out[t-1])``.

    Args:
        cell: the neuron; its class must be one the exporter describes by its parts.
        features: F, the size of the neurons' one dimension.
        bias: whether the feedback adds a trainable bias (without one, the bias is a
            frozen zero).
    """

    def __init__(self, cell: nn.Module, features: int, *, bias: bool = True) -> None:
        super().__init__()
        if type(cell).__name__ not in DESCRIBED:
            raise TypeError(f"RecurrentNeuron: cell must be a neuron described by its parts, "
                            f"got {type(cell).__name__}")
        if isinstance(features, bool) or not isinstance(features, int) or features < 1:
            raise ValueError(f"RecurrentNeuron: features must be an int >= 1, got {features!r}")
        self.cell = cell
        self.recurrent = nn.Linear(features, features)
        if not bias:
            with torch.no_grad():
                self.recurrent.bias.zero_()
            self.recurrent.bias.requires_grad_(False)
        self.step_mode = "m"

    def supported_step_mode(self):
        return ("m",)

    def reset(self) -> None:
        self.cell.reset()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[2] != self.recurrent.in_features:
            raise ValueError(f"RecurrentNeuron: expects [T, N, {self.recurrent.in_features}], "
                             f"got {list(x.shape)}")
        self.cell.reset()
        out = torch.zeros_like(x[0])
        steps = []
        for t in range(x.shape[0]):
            out = self.cell.single_step_forward(x[t] + self.recurrent(out))
            steps.append(out)
        return torch.stack(steps)
