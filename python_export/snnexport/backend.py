"""SpikingJelly's `backend=` of neurons. Its 'cupy' and 'triton' backends are CUDA kernels that
compute the same float expressions as its 'torch' backend; here the PyTorch code is the
reference and `snn-run` runs its own fused CPU kernels, so every backend name is accepted and
means the same arithmetic. The first non-'torch' request says so once per process (a port
should not fail on `backend='cupy'`, but the user should know it has no effect)."""
import sys

BACKENDS = ("torch", "cupy", "triton")
_noted = False


def check_backend(owner, backend):
    """Returns `backend` if SpikingJelly knows it; raises ValueError naming `owner` if not."""
    global _noted
    if backend not in BACKENDS:
        raise ValueError(f"{owner}: backend must be one of {BACKENDS}, got {backend!r}")
    if backend != "torch" and not _noted:
        _noted = True
        print(f"note: snnexport: backend={backend!r} is a CUDA backend of SpikingJelly; "
              "snnexport computes the same arithmetic in PyTorch and snn-run uses its fused "
              "CPU kernels (shown once)", file=sys.stderr)
    return backend
