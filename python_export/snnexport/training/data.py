"""Training data (docs/training.md): the SplitMix64 sample order, `Dataset` with direct
encoding, and the Fashion-MNIST IDX and NumPy loaders."""
import dataclasses
import gzip
import os
import struct

import numpy as np
import torch

from .config import TrainingError

__all__ = ["MASK64", "GOLDEN", "FASHION_MNIST_DIR", "SplitMix64", "splitmix64_order", "Dataset",
           "load_fashion_mnist", "load_npy"]

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


# ------------------------------------------------------------------ sample order (SplitMix64)
class SplitMix64:
    """SplitMix64 with exact 64-bit wrap-around arithmetic on Python ints."""

    def __init__(self, state):
        self.state = state & MASK64

    def next(self):
        self.state = (self.state + GOLDEN) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def splitmix64_order(seed, epoch, count):
    """The permutation of range(count) used in epoch `epoch` (0-based) for `seed`
    (docs/training.md, "Sample order"): Fisher-Yates from the back, j = next() mod (i + 1)."""
    rng = SplitMix64((seed & MASK64) * GOLDEN + epoch + 1)
    order = list(range(count))
    for i in range(count - 1, 0, -1):
        j = rng.next() % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


# ------------------------------------------------------------------ data
@dataclasses.dataclass
class Dataset:
    """x: float32 [S, ...] static samples (`static`) or [S, T, ...] sequences; y: int64 [S]."""
    x: np.ndarray
    y: np.ndarray
    static: bool
    name: str = "data"

    def __len__(self):
        return int(self.x.shape[0])

    def batch(self, indices, T=None):
        """Time-major input [T, B, ...] (direct encoding for static data) and labels [B]."""
        idx = np.asarray(indices, dtype=np.int64)
        xb = torch.from_numpy(np.ascontiguousarray(self.x[idx]))
        yb = torch.from_numpy(np.ascontiguousarray(self.y[idx]))
        if self.static:
            if T is None:
                raise TrainingError(f"{self.name}: static samples need a time length "
                                    "(--repeat-time T)")
            xb = xb.unsqueeze(0).repeat(T, *([1] * xb.dim()))
        else:
            xb = xb.transpose(0, 1).contiguous()
        return xb, yb


def _read_idx(path, magic, ndim):
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise TrainingError(f"{path}: no such file") from None
    except (OSError, EOFError) as e:
        raise TrainingError(f"{path}: not a readable gzip file ({e})") from None
    header = 4 + 4 * ndim
    if len(raw) < header or struct.unpack(">I", raw[:4])[0] != magic:
        raise TrainingError(f"{path}: not an IDX file with magic 0x{magic:08x}")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    count = int(np.prod(dims))
    if len(raw) != header + count:
        raise TrainingError(f"{path}: {len(raw) - header} data bytes, expected {count} "
                            f"for shape {list(dims)}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load_fashion_mnist(directory=FASHION_MNIST_DIR, split="train"):
    """Fashion-MNIST from the IDX gzip files: x float32 [S, 1, 28, 28] = byte / 255 (in
    float32, as torchvision's ToTensor), y int64 [S]. split: 'train' or 't10k' ('test')."""
    prefix = {"train": "train", "t10k": "t10k", "test": "t10k"}[split]
    images = _read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), 0x803, 3)
    labels = _read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), 0x801, 1)
    if images.shape[0] != labels.shape[0]:
        raise TrainingError(f"{directory}: {images.shape[0]} {prefix} images but "
                            f"{labels.shape[0]} labels")
    x = (images.astype(np.float32) / np.float32(255.0))[:, None, :, :]
    return Dataset(np.ascontiguousarray(x), labels.astype(np.int64), static=True,
                   name=f"fashion-mnist:{prefix}")


def load_npy(x_path, y_path, static):
    """A NumPy dataset: X float32 [S, ...] (static=True, direct encoding) or [S, T, ...]
    sequences; Y int64 or int32 class indices [S]."""
    try:
        x = np.load(x_path, allow_pickle=False)
        y = np.load(y_path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise TrainingError(f"cannot read dataset: {e}") from None
    if x.dtype != np.float32:
        raise TrainingError(f"{x_path}: dtype {x.dtype} is not float32")
    if y.dtype not in (np.int64, np.int32):
        raise TrainingError(f"{y_path}: dtype {y.dtype} is not int64 or int32")
    if y.ndim != 1 or x.ndim < 2 or x.shape[0] != y.shape[0]:
        raise TrainingError(f"{x_path}, {y_path}: shapes {list(x.shape)} and {list(y.shape)} "
                            "do not hold the same number of samples [S, ...] and [S]")
    if not static and x.ndim < 3:
        raise TrainingError(f"{x_path}: a sequence dataset must be [S, T, ...], got "
                            f"{list(x.shape)}")
    return Dataset(x, y.astype(np.int64), static=static, name=os.fspath(x_path))
