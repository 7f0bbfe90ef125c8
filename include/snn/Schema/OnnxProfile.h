//===- OnnxProfile.h - The names of the ONNX that snnexport writes -*- C++ -*-===//
//
// The importer's input profile (docs/onnx-profile.md), the contract between the
// Python exporter (python_export/snnexport/export/names.py) and the ONNX
// importer and legalization: SpikeMesh's ONNX domain, the model metadata keys
// (frozen parameters, an input the model repeats over T), the op types of the domain with the attributes each may
// carry (the `surrogate` values are in Surrogates.h). The artifact programs the
// compiler writes for the runtime use the same domain (ArtifactOps.h). The
// schema.onnx_profile test compares this table with names.py.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_ONNXPROFILE_H
#define SNN_SCHEMA_ONNXPROFILE_H

#include <string_view>
#include <vector>

#include "snn/Schema/NeuronProgram.h"

namespace snn::schema::profile {

/// SpikeMesh's ONNX domain (of the exporter's nodes and of artifact programs)
/// and the opset version the exporter imports it with.
inline constexpr const char *kDomain = "spikemesh";
inline constexpr int kDomainVersion = 1;

/// Model metadata: the comma-separated initializer names of the parameters
/// that do not train (requires_grad=False in PyTorch).
inline constexpr const char *kFrozenKey = "spikemesh.frozen";

/// Model metadata, value "true" or "false" (absent: false): the PyTorch model
/// takes a static [N, ...] batch and repeats it over T in its forward (direct
/// encoding); the graph input is that repetition, [T, N, ...].
inline constexpr const char *kInputRepeatedOverTimeKey = "spikemesh.input_repeated_over_time";

/// op_type of each node of the domain: the neurons, and the per-step layers
/// and the attention that opset 13 cannot express.
namespace op {
inline constexpr const char *kIFNode = "IFNode";
inline constexpr const char *kLIFNode = "LIFNode";
inline constexpr const char *kParametricLIFNode = "ParametricLIFNode";
inline constexpr const char *kAdaptiveAvgPool2d = "AdaptiveAvgPool2d";
inline constexpr const char *kGroupNorm = "GroupNorm";
inline constexpr const char *kSpikingAttention = "SpikingAttention";
/// A neuron described by its parts (NeuronProgram.h), any class but IF, LIF and PLIF.
inline constexpr const char *kNeuron = "Neuron";
/// A described neuron fed back its output through a Linear: x, weight [F, F], bias [F],
/// then the description's operands; the attributes of kNeuron.
inline constexpr const char *kRecurrentNeuron = "RecurrentNeuron";
/// SpikingJelly's parallel spiking neurons (PSN, MaskedPSN, SlidingPSN): x, weight, bias.
inline constexpr const char *kParallelSpikingNeuron = "ParallelSpikingNeuron";
} // namespace op

/// Attribute names of the domain's nodes.
namespace attr {
inline constexpr const char *kVThreshold = "v_threshold";
inline constexpr const char *kVReset = "v_reset";
inline constexpr const char *kDetachReset = "detach_reset";
inline constexpr const char *kSurrogate = "surrogate";
inline constexpr const char *kAlpha = "alpha";
inline constexpr const char *kBeta = "beta";
inline constexpr const char *kTau = "tau";
inline constexpr const char *kDecayInput = "decay_input";
inline constexpr const char *kInitTau = "init_tau";
inline constexpr const char *kOutputSize = "output_size";
inline constexpr const char *kNumGroups = "num_groups";
inline constexpr const char *kEpsilon = "epsilon";
inline constexpr const char *kNumHeads = "num_heads";
inline constexpr const char *kScale = "scale";
// A described neuron's parts (NeuronProgram.h's neuron_attr).
inline constexpr const char *kStates = neuron_attr::kStates;
inline constexpr const char *kConstants = neuron_attr::kConstants;
inline constexpr const char *kOperandNames = neuron_attr::kOperands;
inline constexpr const char *kCharge = neuron_attr::kCharge;
inline constexpr const char *kFire = neuron_attr::kFire;
inline constexpr const char *kReset = neuron_attr::kReset;
inline constexpr const char *kUpdate = neuron_attr::kUpdate;
inline constexpr const char *kOutput = neuron_attr::kOutput;
// A parallel spiking neuron's class (a parallel_variant value), its k and MaskedPSN's lambda.
inline constexpr const char *kVariant = "variant";
inline constexpr const char *kK = "k";
inline constexpr const char *kLambda = "lambda";
} // namespace attr

/// The values of a ParallelSpikingNeuron's `variant`: SpikingJelly's PSN, MaskedPSN and
/// SlidingPSN.
namespace parallel_variant {
inline constexpr const char *kPSN = "psn";
inline constexpr const char *kMasked = "masked";
inline constexpr const char *kSliding = "sliding";
} // namespace parallel_variant

// The values of a neuron's `surrogate` attribute, and what its `alpha` and
// `beta` mean for each: Surrogates.h.

/// One op_type of the domain and every attribute its nodes may carry, sorted
/// by name.
struct ProfileOp {
  const char *type;
  std::vector<const char *> attributes;
};

/// Every op of the domain: the neurons first, in a fixed order.
const std::vector<ProfileOp> &profileOps();

/// The entry for `opType`, or null.
const ProfileOp *findProfileOp(std::string_view opType);

/// Whether `opType` is one of the domain's neurons named by their class (IF, LIF, PLIF;
/// not the described `Neuron`).
bool isNeuron(std::string_view opType);

} // namespace snn::schema::profile

#endif // SNN_SCHEMA_ONNXPROFILE_H
