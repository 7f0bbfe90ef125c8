"""Helpers over whole networks (SpikingJelly's `functional` names)."""
from torch import nn


def seq_to_ann_forward(x_seq, fn):
    """Apply a per-step function to [T, N, ...] by folding T into the batch dimension."""
    t, n = x_seq.shape[0], x_seq.shape[1]
    y = fn(x_seq.flatten(0, 1))
    return y.reshape(t, n, *y.shape[1:])


def _is_stateful(m):
    from .neuron import MemoryModule
    if isinstance(m, MemoryModule):
        return True
    # Real SpikingJelly modules with state (neurons, its Dropout) all expose reset().
    return type(m).__module__.startswith("spikingjelly") and callable(getattr(m, "reset", None))


def reset_net(net: nn.Module):
    """Reset the state (membrane potentials) of every stateful module in `net`."""
    for m in net.modules():
        if _is_stateful(m):
            m.reset()


def set_step_mode(net: nn.Module, step_mode: str):
    """Set `step_mode` on every module that has one."""
    for m in net.modules():
        if hasattr(m, "step_mode"):
            m.step_mode = step_mode
