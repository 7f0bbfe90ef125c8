"""Optimizers over the compiled model's parameters: ZeRO stage 1 for plans that shard the
optimizer state (``optimizer_strategy == "zero"``).

``ZeroRedundancyOptimizer`` wraps any ``torch.optim`` class. The gradients are averaged over
the data-parallel ranks as in dp; each rank then keeps the optimizer state of, and updates,
only the parameters it owns (whole tensors, dealt out largest first to the rank with the fewest
elements so far), and every parameter is broadcast from its owner. For an elementwise
optimizer (SGD, Adam, ...) every rank ends each step with the parameters one process computes,
while holding about 1/D of the state.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Type

import torch


def partition_parameters(params: List[torch.Tensor], ranks: int) -> List[int]:
    """The owning rank of each parameter: largest first, to the least-loaded rank (the lowest
    on a tie), so every rank computes the same assignment."""
    load = [0] * ranks
    owners = [0] * len(params)
    for index in sorted(range(len(params)), key=lambda i: (-params[i].numel(), i)):
        rank = min(range(ranks), key=lambda r: (load[r], r))
        owners[index] = rank
        load[rank] += params[index].numel()
    return owners


class ZeroRedundancyOptimizer(torch.optim.Optimizer):
    """``optimizer_cls`` with its state sharded over the data-parallel ranks.

    It is a ``torch.optim.Optimizer`` of one parameter group holding every parameter, so LR
    schedulers and ``zero_grad`` work as usual; ``step`` copies the group's hyperparameters
    (``lr``, ...) to the inner optimizer of this rank's parameters, steps it, and broadcasts
    each rank's parameters from it. Build it with ``runtime.build_optimizer``.
    """

    def __init__(self, params: Iterable[torch.Tensor], optimizer_cls: Type[torch.optim.Optimizer],
                 *, group, **defaults) -> None:
        params = list(params)
        super().__init__(params, defaults)
        #: The data-parallel ranks: runtime.model (data_parallel_size, data_parallel_rank,
        #: broadcast), whichever program it runs.
        self._group = group
        #: The torch.optim class of each rank's own parameters.
        self.optimizer_cls = optimizer_cls
        ranks, rank = group.data_parallel_size, group.data_parallel_rank
        self._owners = partition_parameters(params, ranks)
        self._by_rank = [[p for p, o in zip(params, self._owners) if o == r]
                         for r in range(ranks)]
        #: This rank's parameters: the only ones whose optimizer state it holds.
        self.local_parameters = self._by_rank[rank]
        self._inner: Optional[torch.optim.Optimizer] = (
            optimizer_cls(self.local_parameters, **defaults) if self.local_parameters else None)

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], float]] = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if self._inner is not None:
            inner = self._inner.param_groups[0]
            for key, value in self.param_groups[0].items():
                if key != "params":
                    inner[key] = value
            self._inner.step()
        for owner, owned in enumerate(self._by_rank):
            if owned:
                flat = torch.cat([p.detach().reshape(-1) for p in owned])
                self._group.broadcast(flat, owner)
                offset = 0
                for p in owned:
                    p.copy_(flat[offset:offset + p.numel()].view_as(p))
                    offset += p.numel()
        return loss

    @torch.no_grad()
    def whole_state(self) -> Dict[torch.Tensor, Dict[str, torch.Tensor]]:
        """Collective: every parameter's state (as ``optimizer.state`` holds it for one
        process), each broadcast from its owner."""
        inner = self._inner.state if self._inner is not None else {}
        out: Dict[torch.Tensor, Dict[str, torch.Tensor]] = {}
        for param, owner in zip(self.param_groups[0]["params"], self._owners):
            mine = inner.get(param, {})
            # Which tensors exist, and the step count, come from the owner first.
            header = torch.tensor([float(len(mine) > 0),
                                   float(mine["step"]) if "step" in mine else 0.0])
            self._group.broadcast(header, owner)
            if header[0] == 0:
                continue
            state = {}
            for key in ("momentum_buffer", "exp_avg", "exp_avg_sq"):
                present = torch.tensor([float(mine.get(key) is not None)])
                self._group.broadcast(present, owner)
                if present[0] == 0:
                    continue
                value = mine[key].clone() if key in mine else torch.zeros_like(param)
                self._group.broadcast(value, owner)
                state[key] = value
            if header[1] > 0:
                state["step"] = torch.tensor(float(header[1]))
            out[param] = state
        return out

    def load_whole_state(self, whole: Dict[torch.Tensor, Dict[str, torch.Tensor]]) -> None:
        """Keeps the state of this rank's own parameters out of every parameter's."""
        if self._inner is None:
            return
        self._inner.state.clear()
        for param in self.local_parameters:
            if param in whole:
                self._inner.state[param] = whole[param]

    def local_state_dict(self) -> Dict[str, object]:
        """This rank's share of the optimizer state (its inner optimizer's state_dict)."""
        return self._inner.state_dict() if self._inner is not None else {}
