"""Stateless layers with SpikingJelly's step modes: 's' (default, as in SpikingJelly) applies
the torch layer to [N, ...]; 'm' folds [T, N, ...] -> [T*N, ...], applies it, and unfolds.
`layer.attention` holds Spikformer's SpikingSelfAttention (also importable from here, as in
SpikingJelly)."""
import torch.nn.functional as F
from torch import nn

from ..base import StepModule, check_step_mode
from ..functional import multi_step_forward, seq_to_ann_forward

__all__ = ["Linear", "Conv1d", "Conv2d", "BatchNorm1d", "BatchNorm2d", "GroupNorm", "MaxPool2d",
           "AvgPool2d", "AdaptiveAvgPool2d", "Flatten", "Dropout", "Dropout2d", "VotingLayer",
           "SeqToANNContainer", "MultiStepContainer", "SpikingSelfAttention"]


class _StepLayer(StepModule):
    """Mixin placed before a torch layer class; adds `step_mode` ('s' default, or 'm')."""

    def __init__(self, *args, step_mode="s", **kwargs):
        super().__init__(*args, **kwargs)
        self.step_mode = check_step_mode(step_mode)

    def forward(self, x):
        if self.step_mode == "s":
            return super().forward(x)
        return seq_to_ann_forward(x, super().forward)

    def extra_repr(self):
        return super().extra_repr() + f", step_mode={self.step_mode}"


class Linear(_StepLayer, nn.Linear):
    pass


class Conv1d(_StepLayer, nn.Conv1d):
    pass


class Conv2d(_StepLayer, nn.Conv2d):
    pass


class BatchNorm2d(_StepLayer, nn.BatchNorm2d):
    pass


class BatchNorm1d(_StepLayer, nn.BatchNorm1d):
    pass


class GroupNorm(_StepLayer, nn.GroupNorm):
    """torch.nn.GroupNorm per step: statistics over each sample's channel groups (never over
    T or N), so folding T into the batch changes nothing."""


class MaxPool2d(_StepLayer, nn.MaxPool2d):
    pass


class AvgPool2d(_StepLayer, nn.AvgPool2d):
    pass


class AdaptiveAvgPool2d(_StepLayer, nn.AdaptiveAvgPool2d):
    pass


class Flatten(_StepLayer, nn.Flatten):
    pass


class Dropout(_StepLayer, nn.Dropout):
    """Per-step dropout (an independent mask per time step in training; identity in eval).
    SpikingJelly's multi-step Dropout shares one mask over T: see python_export/README.md.
    SpikingJelly's signature (p, step_mode): a second positional argument is the step mode,
    not torch's `inplace`."""

    def __init__(self, p=0.5, step_mode="s"):
        super().__init__(p, step_mode=step_mode)


class Dropout2d(_StepLayer, nn.Dropout2d):
    """Per-step channel dropout (torch.nn.Dropout2d; SpikingJelly's default p=0.2)."""

    def __init__(self, p=0.2, step_mode="s"):
        super().__init__(p, step_mode=step_mode)


class VotingLayer(nn.Module, StepModule):
    """Average of each group of `voting_size` consecutive features of the last dimension:
    [..., C * voting_size] -> [..., C] (avg_pool1d with kernel = stride = voting_size)."""

    def __init__(self, voting_size: int = 10, step_mode="s"):
        super().__init__()
        if int(voting_size) < 1:
            raise ValueError(f"VotingLayer: voting_size must be >= 1, got {voting_size}")
        self.voting_size = int(voting_size)
        self.step_mode = check_step_mode(step_mode)

    def single_step_forward(self, x):
        return F.avg_pool1d(x.unsqueeze(1), self.voting_size, self.voting_size).squeeze(1)

    def forward(self, x):
        if self.step_mode == "s":
            return self.single_step_forward(x)
        return seq_to_ann_forward(x, self.single_step_forward)

    def extra_repr(self):
        return f"voting_size={self.voting_size}, step_mode={self.step_mode}"


class SeqToANNContainer(nn.Sequential):
    """Runs per-step modules on [T, N, ...] with one fold / unfold around the whole chain."""

    def forward(self, x_seq):
        return seq_to_ann_forward(x_seq, super().forward)


class MultiStepContainer(nn.Sequential):
    """Runs single-step modules over [T, N, ...] one time step at a time
    (functional.multi_step_forward); export treats it as the same modules in multi-step mode."""

    def forward(self, x_seq):
        return multi_step_forward(x_seq, tuple(self))


# The stateless multi-step layers export knows (torch.nn subclasses, emitted by type).
STEP_LAYERS = (Linear, Conv1d, Conv2d, BatchNorm2d, BatchNorm1d, GroupNorm, MaxPool2d,
               AvgPool2d, AdaptiveAvgPool2d, Flatten, Dropout, Dropout2d, VotingLayer)

# Last: attention builds on SeqToANNContainer above.
from . import attention  # noqa: E402,F401
from .attention import SpikingSelfAttention  # noqa: E402
