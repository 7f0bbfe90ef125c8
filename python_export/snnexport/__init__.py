"""SpikeMesh Python side: SpikingJelly-style SNN building blocks, ONNX export, references."""
from . import functional, layer, neuron, surrogate  # noqa: F401
from .export import export_onnx  # noqa: F401

__all__ = ["functional", "layer", "neuron", "surrogate", "export_onnx"]
