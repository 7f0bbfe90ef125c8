"""The names the exporter writes: ONNX versions, the spikemesh domain, the metadata key of
frozen parameters, the neuron op types and surrogate attribute values, the graph's input and
output value names, and the name a module path takes in the file."""
from __future__ import annotations

IR_VERSION = 8
OPSET = 13
DOMAIN = "spikemesh"
FROZEN_KEY = "spikemesh.frozen"  # model metadata: comma-separated frozen initializer names
NEURON_TYPES = ("IFNode", "LIFNode", "ParametricLIFNode")
SURROGATES = {"Sigmoid": "sigmoid", "ATan": "atan"}  # surrogate class -> `surrogate` attribute
INPUT_NAME = "input"    # the graph's one input value
OUTPUT_NAME = "output"  # the graph's one output value


def strip_prefix(path: str, prefix: str) -> str:
    """The name of module `path` in the file: `prefix` is the wrapper of a bare leaf."""
    if prefix and (path + ".").startswith(prefix):
        path = path[len(prefix):]
    return path or "model"
