"""Which kernels the compiled programs of this process run on spike inputs.

A Linear or conv2d layer whose input is spikes (only 0 and 1) takes the event-driven kernels
(sums of the active inputs' weights) on each call whose input has at most the layer's density
limit of ones, and the dense kernels otherwise. By default (``"auto"``) the limit is the layer
shape's crossover on this machine: timed once, on the shape's first spike input, and kept in
the kernel crossover file (``SPIKEMESH_KERNEL_CROSSOVERS``, else
``~/.cache/spikemesh/kernel-crossovers.json``) for every later process, as ``snn-run`` does.
``set_event_kernels`` changes the limits (``snn-run --spike-linear-density`` /
``--spike-conv-density``); ``event_kernel_choices`` reports each layer shape's crossover and
the calls it decided.
"""
from __future__ import annotations

from typing import Any, Dict, List, Union

from . import _spikemesh

_AUTO = -1.0   # the runtime's kMeasuredDensity


def _limit(name: str, value: Union[str, float]) -> float:
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"{name}: expected 'auto' or a density in [0, 1], got {value!r}")
        return _AUTO
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected 'auto' or a density in [0, 1], got "
                        f"{type(value).__name__}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name}: expected a density in [0, 1], got {value}")
    return float(value)


def set_event_kernels(*, linear: Union[str, float] = "auto",
                      conv: Union[str, float] = "auto") -> None:
    """Sets the density limits of the event-driven kernels for every program of the process.

    Args:
        linear: Linear layers fed spikes with at most this share of ones run the
            event-driven kernels; ``0`` keeps every Linear dense; ``"auto"`` (the default)
            takes each layer shape's crossover on this machine.
        conv: the same for conv2d layers (groups 1).

    Raises:
        TypeError: a limit that is neither ``"auto"`` nor a number.
        ValueError: another string, or a number outside [0, 1].
    """
    _spikemesh.set_event_kernel_densities(_limit("linear", linear), _limit("conv", conv))


def event_kernels() -> Dict[str, Union[str, float]]:
    """The current limits: ``{"linear": "auto" or a density, "conv": ...}``."""
    linear, conv = _spikemesh.event_kernel_densities()
    return {name: "auto" if value == _AUTO else value
            for name, value in (("linear", linear), ("conv", conv))}


def event_kernel_choices() -> List[Dict[str, Any]]:
    """Each Linear and conv2d layer shape fed spikes under ``"auto"`` so far in this process.

    One dict per shape, in the order first met: ``layer`` (its shape, as the kernel sees it),
    ``threshold`` (the crossover density), ``from_file`` (read from the kernel crossover file
    rather than timed by this process), ``event_calls`` and ``dense_calls`` (the calls it
    decided), ``mean_density`` (their inputs' mean share of ones), and the timing behind the
    crossover: ``dense_seconds``, ``event_seconds`` on an input of ``density`` ones and
    ``event_seconds_without_spikes``. The same as ``snn-run``'s end event ``event_kernels``.
    """
    return list(_spikemesh.event_kernel_layers())
