"""Multi-step stateless layers: fold [T, N, ...] -> [T*N, ...], apply the torch layer, unfold."""
from torch import nn

from .functional import seq_to_ann_forward


class _MultiStep:
    """Mixin placed before a torch layer class; adds `step_mode` ('m' default, or 's')."""

    def __init__(self, *args, step_mode="m", **kwargs):
        super().__init__(*args, **kwargs)
        if step_mode not in ("s", "m"):
            raise ValueError(f"step_mode must be 's' or 'm', got {step_mode!r}")
        self.step_mode = step_mode

    def forward(self, x):
        if self.step_mode == "s":
            return super().forward(x)
        return seq_to_ann_forward(x, super().forward)

    def extra_repr(self):
        return super().extra_repr() + f", step_mode={self.step_mode}"


class Linear(_MultiStep, nn.Linear):
    pass


class Conv2d(_MultiStep, nn.Conv2d):
    pass


class BatchNorm2d(_MultiStep, nn.BatchNorm2d):
    pass


class BatchNorm1d(_MultiStep, nn.BatchNorm1d):
    pass


class MaxPool2d(_MultiStep, nn.MaxPool2d):
    pass


class AvgPool2d(_MultiStep, nn.AvgPool2d):
    pass


class AdaptiveAvgPool2d(_MultiStep, nn.AdaptiveAvgPool2d):
    pass


class Flatten(_MultiStep, nn.Flatten):
    pass


class Dropout(_MultiStep, nn.Dropout):
    """Per-step dropout (an independent mask per time step in training; identity in eval)."""


class SeqToANNContainer(nn.Sequential):
    """Runs per-step modules on [T, N, ...] with one fold / unfold around the whole chain."""

    def forward(self, x_seq):
        return seq_to_ann_forward(x_seq, super().forward)


MULTI_STEP_LAYERS = (Linear, Conv2d, BatchNorm2d, BatchNorm1d, MaxPool2d, AvgPool2d,
                     AdaptiveAvgPool2d, Flatten, Dropout)
