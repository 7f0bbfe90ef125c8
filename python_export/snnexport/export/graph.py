"""The ONNX graph being written: its nodes, initializers and value shapes, under unique names."""
from __future__ import annotations

from typing import Dict, List, Optional, Union

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from .names import strip_prefix

Dim = Union[int, str]  # an ONNX dimension: a size, or a symbolic name such as "N"
Shape = List[Optional[Dim]]  # None: a dim with no size or name (the folded T*N)


class Graph:
    """Collects the nodes, initializers and value shapes of the model being exported.

    `T` is the number of time steps fixed in the file; `prefix` is stripped from module paths
    when the root module itself is a leaf (it is traced as the child of a wrapper)."""

    def __init__(self, T: int, prefix: str) -> None:
        self.T = T
        self.prefix = prefix
        self.nodes: List[onnx.NodeProto] = []
        self.inits: Dict[str, onnx.TensorProto] = {}
        self.infos: Dict[str, Shape] = {}
        self.used_names: Dict[str, int] = {}

    def name(self, path: str) -> str:
        """The name of module `path` in the file."""
        return strip_prefix(path, self.prefix)

    def unique(self, base: str) -> str:
        """Node names must be unique; a module called twice gets '#1', '#2', ..."""
        k = self.used_names.get(base, 0)
        self.used_names[base] = k + 1
        return base if k == 0 else f"{base}#{k}"

    def init(self, name: str, array: object) -> str:
        """Adds initializer `name` (floats as float32) unless it exists; returns the name."""
        array = np.asarray(array)
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        if name not in self.inits:
            self.inits[name] = numpy_helper.from_array(array, name)
        return name

    def param(self, path: str, tensor_name: str, tensor: torch.Tensor) -> str:
        """Adds the parameter or buffer `tensor_name` of module `path`; returns its name."""
        return self.init(self.name(f"{path}.{tensor_name}"), tensor.detach().cpu().numpy())

    def node(self, op: str, inputs: List[str], name: str, shape: Shape, domain: str = "",
             **attrs: object) -> str:
        """Adds one node whose single output value is named like the node; returns the name."""
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, domain=domain, **attrs))
        self.infos[name] = shape
        return name


def value_info(name: str, shape: Shape) -> onnx.ValueInfoProto:
    """A float32 value `name` of `shape`."""
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
