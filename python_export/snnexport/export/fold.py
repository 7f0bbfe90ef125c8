"""Fold regions: a chain of per-step ops on a time-major [T, N, ...] value, written between a
fold Reshape to [T*N, ...] and an unfold Reshape back (profile section 'fold, op, unfold')."""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np
import torch
from torch import nn

from .emit_layers import emit_bn, emit_conv1d, emit_step, run_per_step
from .graph import Graph
from .kinds import describe, named


class FoldRegion:
    """One or more fold regions written around a chain of per-step ops. The fold Reshape is
    written lazily, when the first op needs it, so a per-step reshape at the start of a chain
    is the fold's own shape; one further inside closes the region and opens the next with the
    new shape.

    Conv1d and BatchNorm1d of per-step [C, L] run on the view [C, 1, L] (the ops of the
    2-D profile); the view returns to [C', L] before any other op and at the end."""

    def __init__(self, g: Graph, path: str, x: str, x_val: torch.Tensor) -> None:
        self.g, self.base = g, g.name(path)
        self.src = x                         # the time-major value the next fold reads
        self.src_shape = list(x_val.shape[2:])
        self.shape = list(self.src_shape)    # per-step dims of the current value
        self.v = None                        # the folded value; None before the fold
        self.y = x_val.flatten(0, 1)         # the current per-step tensor (for shapes)
        self.view = False                    # the shape is the [C, 1, L] view of [C, L]

    def folded(self) -> str:
        """The folded [T*N, ...] value, writing the fold Reshape on first use."""
        if self.v is None:
            fold = self.g.unique(self.base + "/fold")
            shape = self.g.init(fold + "_shape", np.array([-1] + self.shape, np.int64))
            self.v = self.g.node("Reshape", [self.src, shape], fold, [None] + self.shape)
        return self.v

    def step(self, path: str, m: nn.Module) -> None:
        """Applies per-step module `m` (at module path `path`)."""
        if isinstance(m, nn.Conv1d) or (isinstance(m, nn.BatchNorm1d) and
                                        (self.view or len(self.shape) == 2)):
            self.token_step(path, m)
            return
        self.end_view()
        self.v, self.y = emit_step(self.g, path, m, self.folded(), self.y)
        self.shape = list(self.y.shape[1:])

    def token_step(self, path: str, m: nn.Module) -> None:
        """Conv1d / BatchNorm1d of per-step [C, L] on the view [C, 1, L]: a Conv with a
        [1, k] kernel is what ATen computes for conv1d, and BatchNormalization of the view
        is BatchNorm1d of [C, L] value for value."""
        if not self.view:
            if len(self.shape) != 2:
                raise ValueError(f"{describe(m)} at '{self.g.name(path)}' needs per-step "
                                 f"[C, L] tensors, got per-step dims {self.shape}")
            self.reshape([self.shape[0], 1, self.shape[1]])
            self.view = True
        x = self.folded()
        c, _, length = self.shape
        y = run_per_step(m, self.y.reshape(-1, c, length)).unsqueeze(2)
        shape = [None] + list(y.shape[1:])
        if isinstance(m, nn.Conv1d):
            self.v = emit_conv1d(self.g, path, m, x, shape)
        else:
            self.v = emit_bn(self.g, path, m, x, shape)
        self.y, self.shape = y, list(y.shape[1:])

    def end_view(self) -> None:
        """Returns from the [C, 1, L] view to [C, L]."""
        if self.view:
            self.view = False
            self.reshape([self.shape[0], self.shape[2]])

    def reshape(self, dims: Sequence[int]) -> None:
        """A per-step reshape to `dims` (same element count)."""
        if self.v is not None:
            self.src, self.v = self.unfold(), None
            self.src_shape = list(self.shape)
        self.shape = list(dims)
        self.y = self.y.reshape([-1] + self.shape)

    def close(self) -> str:
        """Ends the chain; returns the time-major result."""
        self.end_view()
        return self.unfold()

    def unfold(self) -> str:
        """The time-major [T, N, ...] value of the current folded one."""
        if self.v is None and self.shape == self.src_shape:
            return self.src  # nothing per-step happened
        g, v = self.g, self.folded()
        unfold = g.unique(self.base + "/unfold")
        shape = g.init(unfold + "_shape", np.array([g.T, -1] + self.shape, np.int64))
        return g.node("Reshape", [v, shape], unfold, [g.T, "N"] + self.shape)

    def flatten(self, name: str) -> None:
        """Flatten every per-step dim (torch.flatten(x, 2) of a time-major x)."""
        size = int(np.prod(self.shape))
        self.v = self.g.node("Flatten", [self.folded()], self.g.unique(name), [None, size],
                             axis=1)
        self.shape, self.y = [size], self.y.flatten(1)

    def voting(self, path: str, m: nn.Module) -> None:
        """VotingLayer: avg_pool1d(x.unsqueeze(1), v, v).squeeze(1) as PyTorch computes it
        (avg_pool1d is avg_pool2d over a [1, F] plane): reshape [F] -> [1, 1, F],
        AveragePool [1, v], Flatten."""
        self.end_view()
        if len(self.shape) != 1:
            raise ValueError(f"VotingLayer at '{self.g.name(path)}' needs [T, N, F] features, "
                             f"got per-step dims {self.shape}")
        k = int(m.voting_size)
        self.reshape([1, 1, self.shape[0]])
        out = [1, 1, self.shape[-1] // k]
        name = self.g.unique(self.g.name(path))
        self.v = self.g.node("AveragePool", [self.folded()], name, [None] + out,
                             kernel_shape=[1, k], strides=[1, k], pads=[0, 0, 0, 0],
                             ceil_mode=0, count_include_pad=0)
        flat = self.g.unique(self.g.name(path) + "/flatten")
        self.v = self.g.node("Flatten", [self.v], flat, [None, out[-1]], axis=1)
        self.shape, self.y = [out[-1]], run_per_step(m, self.y.reshape(self.y.shape[0], -1))


def emit_region(g: Graph, path: str, steps: Sequence[Tuple[str, nn.Module]], x: str,
                x_val: torch.Tensor) -> Tuple[str, List[int]]:
    """The per-step modules `steps` applied to time-major value `x` (`x_val` its value on the
    example input); returns the result and its per-step dims."""
    region = FoldRegion(g, path, x, x_val)
    for spath, m in steps:
        if named(m, "VotingLayer"):
            region.voting(spath, m)
        else:
            region.step(spath, m)
    return region.close(), region.shape
