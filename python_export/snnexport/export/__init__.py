"""PyTorch SNN -> ONNX, exactly the profile of docs/onnx-profile.md.

The model is traced with torch.fx (neurons and multi-step layers are leaves), run once on the
example input to learn every shape, and each fx node becomes ONNX nodes.

One job per module; each imports only modules above it in this list:

- `names`: ONNX versions, the spikemesh domain, metadata and value names
- `kinds`: what each module is to the exporter (neuron, container, layer, attention, ...)
- `graph`: the ONNX graph being written (nodes, initializers, value shapes)
- `emit_layers`: per-step stateless modules as ONNX ops on folded [T*N, ...] values
- `fold`: fold regions (fold Reshape, per-step ops, unfold Reshape)
- `emit_neurons`: neurons as spikemesh nodes
- `emit_tensor`: the tensor functions between modules (reshapes, cat, direct encoding)
- `emit_attention`: Spikformer's SpikingSelfAttention
- `tracer`: the multi-step copy, torch.fx tracing with values, the example run
- `translator`: fx nodes -> ONNX nodes
- `driver`: `build_onnx`, `check`, `export_onnx`
"""
from .driver import PathLike, build_onnx, check, export_onnx
from .graph import Dim
from .names import DOMAIN, FROZEN_KEY, IR_VERSION, NEURON_TYPES, OPSET

__all__ = ["export_onnx", "build_onnx", "check", "IR_VERSION", "OPSET", "DOMAIN", "FROZEN_KEY",
           "NEURON_TYPES", "PathLike", "Dim"]
