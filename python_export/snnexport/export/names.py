"""The names the exporter writes (the profile of docs/onnx-profile.md): ONNX versions, the
spikemesh domain, the metadata keys (frozen parameters, an input the model repeats over T), the
domain's op types and the attributes each may carry, the surrogate attribute values, the graph's
input and output value names, and the name a module path takes in the file.

The compiler reads the same names from include/snn/Schema/OnnxProfile.h; the
schema.onnx_profile test (test/schema/onnx_profile_check.py) compares the two."""
from __future__ import annotations

IR_VERSION = 8
OPSET = 13
DOMAIN = "spikemesh"
DOMAIN_VERSION = 1  # the opset version of DOMAIN
FROZEN_KEY = "spikemesh.frozen"  # model metadata: comma-separated frozen initializer names
# Model metadata, "true" when the model repeats its static [N, ...] input over T in its forward
# (the graph input is that repetition, [T, N, ...]); not written otherwise.
INPUT_REPEATED_OVER_TIME_KEY = "spikemesh.input_repeated_over_time"
# Artifact program metadata (snn-compile writes it, snn-run checks it): the mesh coordinate whose
# ranks run a per-rank program, "<axis>=<index>" comma-separated in mesh order ("tp=1", "pp=0,tp=1").
MESH_COORDINATE_KEY = "spikemesh.mesh_coordinate"

# Op types of the domain: the neurons, and the per-step layers and the attention that opset 13
# cannot express.
IF_NODE = "IFNode"
LIF_NODE = "LIFNode"
PLIF_NODE = "ParametricLIFNode"
ADAPTIVE_AVG_POOL = "AdaptiveAvgPool2d"
GROUP_NORM = "GroupNorm"
SPIKING_ATTENTION = "SpikingAttention"
NEURON_TYPES = (IF_NODE, LIF_NODE, PLIF_NODE)

# Attribute names of the domain's nodes.
V_THRESHOLD = "v_threshold"
V_RESET = "v_reset"
DETACH_RESET = "detach_reset"
SURROGATE = "surrogate"
ALPHA = "alpha"
TAU = "tau"
DECAY_INPUT = "decay_input"
INIT_TAU = "init_tau"
OUTPUT_SIZE = "output_size"
NUM_GROUPS = "num_groups"
EPSILON = "epsilon"
NUM_HEADS = "num_heads"
SCALE = "scale"

# Every op type of the domain and the attributes its nodes may carry, sorted by name.
OP_ATTRIBUTES = {
    IF_NODE: (ALPHA, DETACH_RESET, SURROGATE, V_RESET, V_THRESHOLD),
    LIF_NODE: (ALPHA, DECAY_INPUT, DETACH_RESET, SURROGATE, TAU, V_RESET, V_THRESHOLD),
    PLIF_NODE: (ALPHA, DECAY_INPUT, DETACH_RESET, INIT_TAU, SURROGATE, V_RESET, V_THRESHOLD),
    ADAPTIVE_AVG_POOL: (OUTPUT_SIZE,),
    GROUP_NORM: (EPSILON, NUM_GROUPS),
    SPIKING_ATTENTION: (NUM_HEADS, SCALE),
}

SURROGATES = {"Sigmoid": "sigmoid", "ATan": "atan"}  # surrogate class -> `surrogate` attribute
INPUT_NAME = "input"    # the graph's one input value
OUTPUT_NAME = "output"  # the graph's one output value


def strip_prefix(path: str, prefix: str) -> str:
    """The name of module `path` in the file: `prefix` is the wrapper of a bare leaf."""
    if prefix and (path + ".").startswith(prefix):
        path = path[len(prefix):]
    return path or "model"
