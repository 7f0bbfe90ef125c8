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
# Any other neuron class, described by its parts (docs/neuron-programs.md).
NEURON = "Neuron"
# A described neuron fed back its output through a Linear (recurrent.RecurrentNeuron): inputs
# x, the feedback weight and bias, then the operands; the attributes of NEURON.
RECURRENT_NEURON = "RecurrentNeuron"
# SpikingJelly's parallel spiking neurons (PSN, MaskedPSN, SlidingPSN): inputs x, weight, bias.
PARALLEL_NEURON = "ParallelSpikingNeuron"

# Attribute names of the domain's nodes.
V_THRESHOLD = "v_threshold"
V_RESET = "v_reset"
DETACH_RESET = "detach_reset"
SURROGATE = "surrogate"
ALPHA = "alpha"
BETA = "beta"
TAU = "tau"
DECAY_INPUT = "decay_input"
INIT_TAU = "init_tau"
OUTPUT_SIZE = "output_size"
NUM_GROUPS = "num_groups"
EPSILON = "epsilon"
NUM_HEADS = "num_heads"
SCALE = "scale"
# A described neuron's parts: "name=value" strings for states and constants, statements for
# charge and update, expressions for fire and output.
STATES = "states"
CONSTANTS = "constants"
OPERAND_NAMES = "operand_names"
CHARGE = "charge"
FIRE = "fire"
RESET = "reset"
UPDATE = "update"
OUTPUT = "output"
# A parallel spiking neuron's class (a PARALLEL_VARIANTS value), its k (MaskedPSN, SlidingPSN)
# and MaskedPSN's lambda_.
VARIANT = "variant"
K = "k"
LAMBDA = "lambda"

# Every op type of the domain and the attributes its nodes may carry, sorted by name.
OP_ATTRIBUTES = {
    IF_NODE: (ALPHA, BETA, DETACH_RESET, SURROGATE, V_RESET, V_THRESHOLD),
    LIF_NODE: (ALPHA, BETA, DECAY_INPUT, DETACH_RESET, SURROGATE, TAU, V_RESET, V_THRESHOLD),
    PLIF_NODE: (ALPHA, BETA, DECAY_INPUT, DETACH_RESET, INIT_TAU, SURROGATE, V_RESET,
                V_THRESHOLD),
    ADAPTIVE_AVG_POOL: (OUTPUT_SIZE,),
    GROUP_NORM: (EPSILON, NUM_GROUPS),
    SPIKING_ATTENTION: (NUM_HEADS, SCALE),
    NEURON: (ALPHA, BETA, CHARGE, CONSTANTS, DETACH_RESET, FIRE, OPERAND_NAMES, OUTPUT, RESET,
             STATES, SURROGATE, UPDATE),
    RECURRENT_NEURON: (ALPHA, BETA, CHARGE, CONSTANTS, DETACH_RESET, FIRE, OPERAND_NAMES, OUTPUT,
                       RESET, STATES, SURROGATE, UPDATE),
    PARALLEL_NEURON: (ALPHA, BETA, K, LAMBDA, SURROGATE, VARIANT),
}

# Parallel spiking neuron class -> its `variant` attribute value.
PARALLEL_VARIANTS = {"PSN": "psn", "MaskedPSN": "masked", "SlidingPSN": "sliding"}

# Surrogate class -> its `surrogate` attribute value, and that value -> the class's parameters
# (SpikingJelly's names and defaults) in order: the first is written as `alpha`, the second,
# where there is one, as `beta`.
SURROGATES = {
    "Sigmoid": "sigmoid", "ATan": "atan", "PiecewiseQuadratic": "piecewise_quadratic",
    "PiecewiseExp": "piecewise_exp", "SoftSign": "soft_sign", "SuperSpike": "super_spike",
    "NonzeroSignLogAbs": "nonzero_sign_log_abs", "Erf": "erf",
    "PiecewiseLeakyReLU": "piecewise_leaky_relu",
    "SquarewaveFourierSeries": "squarewave_fourier_series", "S2NN": "s2nn",
    "QPseudoSpike": "q_pseudo_spike", "LeakyKReLU": "leaky_k_relu",
    "FakeNumericalGradient": "fake_numerical_gradient", "LogTailedReLU": "log_tailed_relu",
    "Rect": "rect",
}
SURROGATE_PARAMETERS = {
    "sigmoid": (("alpha", 4.0),),
    "atan": (("alpha", 2.0),),
    "piecewise_quadratic": (("alpha", 1.0),),
    "piecewise_exp": (("alpha", 1.0),),
    "soft_sign": (("alpha", 2.0),),
    "super_spike": (("alpha", 1.0),),
    "nonzero_sign_log_abs": (("alpha", 1.0),),
    "erf": (("alpha", 2.0),),
    "piecewise_leaky_relu": (("w", 1.0), ("c", 0.01)),
    "squarewave_fourier_series": (("n", 2), ("T_period", 8.0)),
    "s2nn": (("alpha", 4.0), ("beta", 1.0)),
    "q_pseudo_spike": (("alpha", 2.0),),
    "leaky_k_relu": (("leak", 0.0), ("k", 1.0)),
    "fake_numerical_gradient": (("alpha", 0.3),),
    "log_tailed_relu": (("alpha", 0.0),),
    "rect": (("alpha", 1.0),),
}
INPUT_NAME = "input"    # the graph's one input value
OUTPUT_NAME = "output"  # the graph's one output value


def strip_prefix(path: str, prefix: str) -> str:
    """The name of module `path` in the file: `prefix` is the wrapper of a bare leaf."""
    if prefix and (path + ".").startswith(prefix):
        path = path[len(prefix):]
    return path or "model"
