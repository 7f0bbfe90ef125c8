"""SpikeMesh Python side: SpikingJelly-style SNN building blocks, ONNX export, references."""
from . import base, encoding, functional, layer, neuron, surrogate  # noqa: F401
from .export import export_onnx  # noqa: F401
from .weights import load_onnx_weights  # noqa: F401

__all__ = ["base", "encoding", "functional", "layer", "neuron", "surrogate", "export_onnx",
           "load_onnx_weights"]
