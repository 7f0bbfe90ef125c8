"""The reference's tensor-parallel communication counters, over every runtime in this process.

``enable_tp_communication_debug(enabled=True)`` starts (or stops) counting,
``reset_tp_communication_debug_stats()`` sets the counters to zero, and
``get_tp_communication_debug_stats()`` returns ``{"all_reduce_calls": n, "all_reduce_bytes":
b}``: the all-reduces over the ``tp`` mesh axis that the compiled programs of this process's
runtimes ran (forward and backward) while counting was on. ``runtime.comm_stats()`` has every
kind and axis of one runtime.
"""
from __future__ import annotations

import threading
import weakref
from typing import Dict

_lock = threading.Lock()
_runtimes: "weakref.WeakSet" = weakref.WeakSet()
_enabled = False
_baseline: Dict[int, Dict[str, int]] = {}   # id(runtime) -> its totals when counting began
_frozen = {"all_reduce_calls": 0, "all_reduce_bytes": 0}   # the counts when counting stopped


def _register(runtime) -> None:
    with _lock:
        _runtimes.add(runtime)
        _baseline[id(runtime)] = _totals(runtime)


def _totals(runtime) -> Dict[str, int]:
    calls = nbytes = 0
    for row in runtime.comm_stats():
        if row["kind"] == "all_reduce" and row["mesh_axis"] == "tp":
            calls += row["calls"]
            nbytes += row["bytes"]
    return {"all_reduce_calls": calls, "all_reduce_bytes": nbytes}


def _counted() -> Dict[str, int]:
    out = dict(_frozen)
    if _enabled:
        for runtime in list(_runtimes):
            now, start = _totals(runtime), _baseline.get(id(runtime), {})
            for key in out:
                out[key] += now[key] - start.get(key, 0)
    return out


def enable_tp_communication_debug(enabled: bool = True) -> None:
    """Starts (True) or stops (False) counting tensor-parallel all-reduces."""
    global _enabled, _frozen
    with _lock:
        if bool(enabled) == _enabled:
            return
        if _enabled:
            _frozen = _counted()
        _enabled = bool(enabled)
        for runtime in list(_runtimes):
            _baseline[id(runtime)] = _totals(runtime)


def reset_tp_communication_debug_stats() -> None:
    """Sets the counters to zero."""
    global _frozen
    with _lock:
        _frozen = {key: 0 for key in _frozen}
        for runtime in list(_runtimes):
            _baseline[id(runtime)] = _totals(runtime)


def get_tp_communication_debug_stats() -> Dict[str, int]:
    """A snapshot of the counters: ``all_reduce_calls`` and ``all_reduce_bytes``."""
    with _lock:
        return _counted()
