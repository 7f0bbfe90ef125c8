"""Parameters in and out of a PyTorch model: ONNX initializers, .npz, NAME.npy directories."""
from __future__ import annotations

import os
from typing import Dict, Mapping, TypeVar, Union

import numpy as np
import torch
from torch import nn

PathLike = Union[str, "os.PathLike[str]"]
ModuleT = TypeVar("ModuleT", bound=nn.Module)


def state_arrays(model: nn.Module) -> Dict[str, np.ndarray]:
    """name -> float32 numpy array for every parameter and buffer (no num_batches_tracked)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()
            if not k.endswith("num_batches_tracked")}


def save_params(model: nn.Module, directory: PathLike) -> None:
    """One NAME.npy per parameter and buffer (BatchNorm running statistics included)."""
    os.makedirs(directory, exist_ok=True)
    for k, v in state_arrays(model).items():
        np.save(os.path.join(directory, k + ".npy"), v)


def load_params(directory: PathLike) -> Dict[str, np.ndarray]:
    """name -> array from a --save-params directory."""
    return {f[:-4]: np.load(os.path.join(directory, f)) for f in sorted(os.listdir(directory))
            if f.endswith(".npy")}


def _same_values_shape(file_shape, model_shape) -> bool:
    """Equal, or equal once the dims of size 1 are dropped: the exported Conv1d weight
    [O, C, 1, k] holds the same values in the same order as the model's [O, C, k]."""
    if tuple(file_shape) == tuple(model_shape):
        return True
    return [d for d in file_shape if d != 1] == [d for d in model_shape if d != 1]


def load_state_arrays(model: nn.Module, arrays: Mapping[str, np.ndarray],
                      source: object) -> None:
    """Copies name -> array into the model's state_dict; every float entry must be present
    with its shape (or one that differs only by dims of size 1, reshaped to the model's).
    Raises ValueError naming the missing / mismatched keys."""
    state = model.state_dict()
    missing, mismatched = [], []
    for k, v in state.items():
        if k.endswith("num_batches_tracked"):
            continue
        if k not in arrays:
            missing.append(k)
        elif not _same_values_shape(np.shape(arrays[k]), v.shape):
            mismatched.append(f"{k} (file {list(np.shape(arrays[k]))}, model {list(v.shape)})")
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing))
    if mismatched:
        problems.append("shape mismatch " + ", ".join(mismatched))
    if problems:
        raise ValueError(f"{source}: cannot load into {type(model).__name__}: "
                         + "; ".join(problems))
    with torch.no_grad():
        for k, v in state.items():
            if k in arrays:
                value = np.asarray(arrays[k], dtype=np.float32).reshape(tuple(v.shape))
                v.copy_(torch.tensor(value))


def load_onnx_weights(model: ModuleT, path: PathLike) -> ModuleT:
    """Loads the float initializers of an ONNX file (an snnexport model, or a program written
    by `snn-run train --export-onnx`) into `model` by state_dict key: weights, biases,
    BatchNorm running statistics, PLIF `w` (0-d). Every state_dict entry (num_batches_tracked
    aside) must be present with its shape (dims of size 1 aside: a Conv1d weight is written
    [O, C/g, 1, k]); an initializer that names no entry and is not an
    exporter constant (names with '/') is an error too. Returns the model."""
    import onnx
    from onnx import numpy_helper

    try:
        proto = onnx.load(os.fspath(path))
    except Exception as e:  # noqa: BLE001 - protobuf raises several types
        raise ValueError(f"{path}: not a readable ONNX model ({e})") from None
    arrays = {}
    for init in proto.graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype.kind == "f":
            arrays[init.name] = arr
    state = model.state_dict()
    unknown = [k for k in arrays if k not in state and "/" not in k]
    if unknown:
        raise ValueError(f"{path}: initializers {', '.join(sorted(unknown))} are not in "
                         f"{type(model).__name__}'s state_dict (another model?)")
    load_state_arrays(model, arrays, path)
    return model


def save_state_npz(model: nn.Module, path: PathLike) -> None:
    """The state_dict as an .npz (float32, num_batches_tracked dropped)."""
    np.savez(path, **state_arrays(model))


def load_state_npz(model: ModuleT, path: PathLike) -> ModuleT:
    with np.load(path, allow_pickle=False) as z:
        load_state_arrays(model, {k: z[k] for k in z.files}, path)
    return model
