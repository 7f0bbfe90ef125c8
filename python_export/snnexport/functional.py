"""Helpers over whole networks (SpikingJelly's `functional` names)."""
from typing import Callable, Sequence, Union

import torch
import torch.fx
from torch import nn

from .backend import check_backend
from .base import check_step_mode

__all__ = ["seq_to_ann_forward", "multi_step_forward", "reset_net", "set_step_mode",
           "set_backend", "owns_time_loop"]

Modules = Union[nn.Module, Callable, Sequence[Union[nn.Module, Callable]]]


def _apply(x, fns: Modules):
    if isinstance(fns, (list, tuple)):
        for fn in fns:
            x = fn(x)
        return x
    return fns(x)


def seq_to_ann_forward(x_seq, fn: Modules):
    """Apply per-step module(s) to [T, N, ...] by folding T into the batch dimension."""
    t, n = x_seq.shape[0], x_seq.shape[1]
    y = _apply(x_seq.flatten(0, 1), fn)
    return y.reshape(t, n, *y.shape[1:])


def multi_step_forward(x_seq, single_step_module: Modules):
    """Run single-step module(s) over [T, N, ...] one step at a time; returns [T, N, ...].

    Under torch.fx tracing (export) the loop cannot run on a symbolic tensor. The exporter
    has switched every module to multi-step mode by then, and a multi-step module on the
    whole sequence computes what the loop computes, so the modules are applied to it as a
    whole. A plain function has no multi-step form and is refused there."""
    if isinstance(x_seq, torch.fx.Proxy):
        fns = single_step_module if isinstance(single_step_module, (list, tuple)) \
            else (single_step_module,)
        for fn in fns:
            if not isinstance(fn, nn.Module):
                raise ValueError(f"functional.multi_step_forward over {fn!r}: only modules "
                                 "can be exported (a function has no multi-step form)")
        return _apply(x_seq, fns)
    return torch.stack([_apply(x, single_step_module) for x in x_seq])


def _is_stateful(m):
    from .base import MemoryModule
    if isinstance(m, MemoryModule):
        return True
    # Real SpikingJelly modules with state (neurons, its Dropout) all expose reset().
    return type(m).__module__.startswith("spikingjelly") and callable(getattr(m, "reset", None))


def reset_net(net: nn.Module):
    """Reset the state (membrane potentials) of every stateful module in `net`."""
    for m in net.modules():
        if _is_stateful(m):
            m.reset()


def owns_time_loop(m) -> bool:
    """snnexport's or SpikingJelly's SeqToANNContainer or MultiStepContainer: the container
    handles T itself, so its children are single-step modules whose step_mode stays 's'."""
    return type(m).__name__ in ("SeqToANNContainer", "MultiStepContainer") and (
        type(m).__module__.startswith("spikingjelly") or type(m).__module__.startswith(
            __name__.rsplit(".", 1)[0]))


def set_step_mode(net: nn.Module, step_mode: str):
    """Set `step_mode` on every module that has one. The children of a SeqToANNContainer or
    MultiStepContainer stay single-step: the container handles T itself (SpikingJelly would
    switch them too, which breaks the container)."""
    check_step_mode(step_mode)
    stack = [net]
    while stack:
        m = stack.pop()
        if hasattr(m, "step_mode"):
            m.step_mode = step_mode
        if not owns_time_loop(m):
            stack.extend(m.children())


def set_backend(net: nn.Module, backend: str, instance=None):
    """Set `backend` on every module (of type `instance`, when given) that has one. All of
    SpikingJelly's backends compute the same arithmetic here (see backend.py)."""
    instance = nn.Module if instance is None else instance
    for m in net.modules():
        if isinstance(m, instance) and hasattr(m, "backend"):
            m.backend = check_backend(type(m).__name__, backend)
