"""The reference's sharded-neuron helpers: a stateful neuron that checks it is fed its shard.

In eager tensor-parallel code a neuron after a column-split Linear sees only this rank's share
of the features; these helpers make a copy of the neuron that refuses any other input, naming
the dimension and both sizes. (spikemesh's own tp programs run their neurons on the shard the
compiler split, which it checks itself.) ``make_tensor_shard_memory_module`` returns the copy
with a forward pre-hook, keeping its type and state-dict names;
``TensorShardMemoryModule`` is the older wrapper form, the copy as its ``inner`` submodule.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Optional, Tuple

import torch.distributed as torch_dist
from torch import nn

_VALIDATOR = "_tensor_shard_input_validator"


def _group_place(process_group) -> Tuple[int, int]:
    if process_group is None:
        return 0, 1
    return torch_dist.get_rank(process_group), torch_dist.get_world_size(process_group)


def _local_size(logical_dim_size: Optional[int], world_size: int) -> Optional[int]:
    if logical_dim_size is None:
        return None
    if isinstance(logical_dim_size, bool) or not isinstance(logical_dim_size, int) or \
            logical_dim_size < 1:
        raise ValueError(f"logical_dim_size must be a positive integer, got {logical_dim_size!r}")
    if logical_dim_size % world_size:
        raise ValueError(f"logical_dim_size={logical_dim_size} must be divisible by "
                         f"tensor-parallel world_size={world_size}")
    return logical_dim_size // world_size


@dataclasses.dataclass(frozen=True)
class _ShardInputCheck:
    """The forward pre-hook: the input's ``shard_dim`` must have the local size."""

    shard_dim: int
    local_size: Optional[int]

    def __call__(self, _module: nn.Module, args: tuple) -> None:
        # torch 1.13's pre-hooks see the positional arguments only.
        check_shard_input(args[0] if args else None, self.shard_dim, self.local_size)


def check_shard_input(x: Any, shard_dim: int, local_size: Optional[int]) -> None:
    """Raises unless ``x`` is a tensor whose ``shard_dim`` holds ``local_size`` elements."""
    if x is None:
        raise TypeError("shard validation needs the input tensor as the first positional "
                        "argument")
    dim = shard_dim if shard_dim >= 0 else x.dim() + shard_dim
    if not 0 <= dim < x.dim():
        raise ValueError(f"shard_dim={shard_dim} is invalid for an input of shape "
                         f"{tuple(x.shape)}")
    if local_size is not None and x.shape[dim] != local_size:
        raise ValueError(f"expected the local shard size {local_size} on dim {dim}, but the "
                         f"input has shape {tuple(x.shape)}")


def _effective_dim(module: nn.Module, shard_dim: int) -> int:
    # A single-step neuron's input has no T: the reference's dim 2 of [T, N, C] is its dim 1.
    return 1 if shard_dim == 2 and getattr(module, "step_mode", "s") == "s" else shard_dim


def _require_stateful(source: Any) -> None:
    if not isinstance(source, nn.Module) or not callable(getattr(source, "reset", None)):
        raise TypeError(f"source must be a stateful neuron module (with reset()), got "
                        f"{type(source).__name__}")


def make_tensor_shard_memory_module(source: nn.Module, shard_dim: int,
                                    logical_dim_size: Optional[int] = None,
                                    process_group: Optional[Any] = None) -> nn.Module:
    """A deep copy of the stateful ``source`` whose forward checks that its input holds this
    rank's shard (``logical_dim_size / world_size`` elements on ``shard_dim``; the world of
    ``process_group``, one process without). ``source`` itself when it checks already.

    Raises:
        TypeError: ``source`` is not a stateful module; a call without the input tensor.
        ValueError: ``logical_dim_size`` does not divide by the world size; a call whose input
            has another size on ``shard_dim``.
    """
    _require_stateful(source)
    if isinstance(getattr(source, _VALIDATOR, None), _ShardInputCheck):
        return source
    _, world_size = _group_place(process_group)
    local = _local_size(logical_dim_size, world_size)
    module = copy.deepcopy(source)
    check = _ShardInputCheck(_effective_dim(module, shard_dim), local)
    module.register_forward_pre_hook(check)
    object.__setattr__(module, _VALIDATOR, check)
    return module


class TensorShardMemoryModule(nn.Module):
    """The stateful ``source`` (deep-copied as ``inner``) run on this rank's shard: every
    forward first checks the input as ``make_tensor_shard_memory_module`` does."""

    def __init__(self, source: nn.Module, shard_dim: int,
                 logical_dim_size: Optional[int] = None,
                 process_group: Optional[Any] = None) -> None:
        super().__init__()
        _require_stateful(source)
        self.inner = copy.deepcopy(source)
        self.step_mode = getattr(self.inner, "step_mode", "s")
        self.shard_dim = _effective_dim(self.inner, shard_dim)
        self.logical_dim_size = logical_dim_size
        self.rank, self.world_size = _group_place(process_group)
        self.expected_local_dim_size = _local_size(logical_dim_size, self.world_size)

    def forward(self, x, *args, **kwargs):
        check_shard_input(x, self.shard_dim, self.expected_local_dim_size)
        return self.inner(x, *args, **kwargs)

    def reset(self) -> None:
        self.inner.reset()
