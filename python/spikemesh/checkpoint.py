"""Checkpoints shared with ``snn-run train``: torch.optim's state in the runtime's format.

A checkpoint (docs/checkpoints.md) holds the whole model's parameters and buffers, each
trainable parameter's optimizer state under torch.optim's names (``momentum_buffer``;
``exp_avg``, ``exp_avg_sq`` and the step count), the run's position (step, epoch, batch of
the next step), its data-order seed and settings, and the CPU generator. ``runtime.save_checkpoint``
and ``runtime.load_checkpoint`` build on these helpers; the extension module assembles and
cuts the whole model for the plan's mode.
"""
from __future__ import annotations

import dataclasses
import random
from typing import Dict, List, Optional, Tuple

import torch

from .optim import ZeroRedundancyOptimizer

# torch.optim classes with a checkpoint form, and the state each keeps per parameter.
_KINDS = ((torch.optim.AdamW, "adamw"), (torch.optim.Adam, "adam"), (torch.optim.SGD, "sgd"))
_STATE_NAMES = {"sgd": ("momentum_buffer",), "adam": ("exp_avg", "exp_avg_sq"),
                "adamw": ("exp_avg", "exp_avg_sq")}

Row = Tuple[str, int, List[Tuple[str, torch.Tensor]]]


@dataclasses.dataclass
class CheckpointInfo:
    """Where a loaded checkpoint's run stands (``runtime.load_checkpoint`` returns it).

    path: the checkpoint directory read (``DIR/step-XXXXXXXX``).
    step: optimizer steps done; epoch, batch: the position of the next step in snn-run's
        data order; seed: that order's seed; run_id: the run that wrote it.
    settings: the flags a resumed ``snn-run train`` must repeat (``{"--batch-size": "8"}``).
    """

    path: str
    step: int
    epoch: int
    batch: int
    seed: int
    run_id: int
    settings: Dict[str, str]


def optimizer_kind(optimizer: torch.optim.Optimizer) -> str:
    """``"sgd"``, ``"adam"`` or ``"adamw"``; ValueError for an optimizer snn-run has not."""
    cls = optimizer.optimizer_cls if isinstance(optimizer, ZeroRedundancyOptimizer) \
        else type(optimizer)
    for base, kind in _KINDS:
        if issubclass(cls, base):
            if any(group.get("amsgrad") for group in optimizer.param_groups):
                raise ValueError("optimizer: amsgrad keeps state snn-run's Adam has not")
            return kind
    raise ValueError(f"optimizer: {cls.__name__} has no snn-run checkpoint form (SGD, Adam "
                     f"and AdamW have)")


def optimizer_rows(optimizer: Optional[torch.optim.Optimizer],
                   names: Dict[int, str], step: int) -> Tuple[str, List[Row]]:
    """(kind, one row per named parameter) of this rank's optimizer state."""
    if optimizer is None:
        return "", []
    kind = optimizer_kind(optimizer)
    states = optimizer.whole_state() if isinstance(optimizer, ZeroRedundancyOptimizer) \
        else optimizer.state
    rows = []
    for group in optimizer.param_groups:
        for param in group["params"]:
            name = names.get(id(param))
            if name is None:
                continue   # build_optimizer's placeholder on a rank without parameters
            state = states.get(param, {})
            tensors = [(key, state[key].detach()) for key in _STATE_NAMES[kind]
                       if state.get(key) is not None]
            # torch's SGD counts no steps; snn-run's counts those that made a momentum buffer.
            count = int(state["step"]) if "step" in state else (step if tensors else 0)
            rows.append((name, count, tensors))
    return kind, rows


def restore_optimizer(optimizer: Optional[torch.optim.Optimizer], kind: str, rows: List[Row],
                      params: Dict[str, torch.nn.Parameter]) -> None:
    """Sets ``optimizer``'s per-parameter state from a checkpoint's rows (this rank's)."""
    if optimizer is None:
        return
    if kind and kind != optimizer_kind(optimizer):
        raise ValueError(f"load_checkpoint: the checkpoint holds {kind} state, the optimizer "
                         f"is {type(optimizer).__name__}")
    whole = {}
    for name, count, tensors in rows:
        param = params.get(name)
        if param is None or not tensors:
            continue
        state = {key: tensor.to(param.dtype).reshape(param.shape).clone()
                 for key, tensor in tensors}
        if kind != "sgd":
            state["step"] = torch.tensor(float(count))
        whole[param] = state
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        optimizer.load_whole_state(whole)
        return
    optimizer.state.clear()
    for param, state in whole.items():
        optimizer.state[param] = state


def new_run_id() -> int:
    """A fresh run id: 64 random bits, never 0 (snn-run's "unknown")."""
    return random.getrandbits(64) or 1
