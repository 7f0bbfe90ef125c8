"""``spikemesh.calibrate``: measure this machine once, so that every plan is calibrated.

The profile goes to this user's place (``SPIKEMESH_DEVICE_PROFILE``, else
``$XDG_CACHE_HOME/spikemesh/device-profile.json``, else ``~/.cache/spikemesh/...``), where
``spikemesh.plan`` and ``snn-compile`` look when they are given no profile. The measuring is
``snn-run calibrate`` (its ranks are snn-run processes), run from the build that made this
package.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Optional, Sequence, Union

from . import _spikemesh
from ._spikemesh import SpikeMeshError


def user_device_profile_path() -> str:
    """This user's device profile file (``""`` when ``SPIKEMESH_DEVICE_PROFILE=none``)."""
    return _spikemesh.user_device_profile_path()


def _snn_run() -> str:
    built = _spikemesh.snn_run_path
    if os.access(built, os.X_OK):
        return built
    found = shutil.which("snn-run")
    if found is None:
        raise SpikeMeshError(f"calibrate runs snn-run, which is neither at {built} nor on PATH")
    return found


def calibrate(*, out: Optional[Union[str, os.PathLike]] = None, quick: bool = False,
              ranks: Sequence[int] = (2, 4), threads: int = 1,
              models: Sequence[Union[str, os.PathLike]] = (), progress: str = "auto") -> str:
    """Measures this machine's kernels and collectives (``snn-run calibrate``) and writes the
    device profile; returns its path.

    Args:
        out: the file to write; default: this user's profile, which plans read by default.
        quick: a few small sizes (seconds rather than about a minute; less exact).
        ranks: the group sizes of the communication curves (sizes above the CPU count are
            skipped).
        threads: intra-op threads of the measurements and of each rank.
        models: compiled artifacts whose whole training step is also timed (``--model``).
        progress: ``"auto"``, ``"bar"``, ``"lines"`` or ``"none"`` (on stderr).

    Raises:
        TypeError / ValueError: an argument of the wrong kind; SpikeMeshError: the measurement
            failed (its one-line message).
    """
    if isinstance(ranks, (str, bytes)) or not all(
            isinstance(r, int) and not isinstance(r, bool) for r in ranks):
        raise TypeError(f"ranks must be a sequence of integers, got {ranks!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    if progress not in ("auto", "bar", "lines", "none"):
        raise ValueError(f"progress must be auto, bar, lines or none, got {progress!r}")
    command = [_snn_run(), "calibrate", "--threads", str(threads), "--progress", progress,
               "--ranks", ",".join(str(r) for r in ranks)]
    if quick:
        command.append("--quick")
    for model in models:
        command += ["--model", os.fspath(model)]
    if out is not None:
        path = os.fspath(out)
        command += ["--out", path]
    else:   # snn-run writes this user's profile, creating its directory
        path = user_device_profile_path()
        if not path:
            raise ValueError("out: name the profile's file (SPIKEMESH_DEVICE_PROFILE is "
                             "'none')")
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        message = lines[-1][len("error: "):] if lines else done.stderr.strip()[-500:]
        raise SpikeMeshError(f"calibrate: {message}")
    return path
