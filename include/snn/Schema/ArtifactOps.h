//===- ArtifactOps.h - The ops an artifact program may hold -----*- C++ -*-===//
//
// The contract between the `snn` dialect (SNNOps.td), the artifact exporter
// and the runtime's op registry: every node of a program ONNX has domain
// kArtifactDomain, an op_type from artifactOps() and only the attributes listed
// for it. Tests hold both sides to this table: the compiler's (every snn op that
// can reach an artifact is listed, with its ODS attribute names and operand
// counts) and the runtime's (every listed op has a kernel builder).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_ARTIFACTOPS_H
#define SNN_SCHEMA_ARTIFACTOPS_H

#include <string_view>
#include <vector>

#include "snn/Schema/OnnxProfile.h"

namespace snn::schema {

/// The ONNX domain and opset version of every artifact node: SpikeMesh's domain
/// (OnnxProfile.h), with op types of its own.
inline constexpr const char *kArtifactDomain = profile::kDomain;
inline constexpr int kArtifactOpsetVersion = 1;
/// The producer the compiler writes into program ONNX and the manifest: the
/// project's name, which its domain shares.
inline constexpr const char *kArtifactProducer = profile::kDomain;
/// Program metadata of a per-rank program (one per tp coordinate, one per pipeline stage):
/// the mesh coordinate whose ranks run it, "<axis>=<index>" per axis the program is
/// specific to, comma-separated in mesh order ("tp=1", "pp=0,tp=1"). The runtime checks it
/// against each rank's place before the first collective (docs/artifact-format.md).
inline constexpr const char *kMeshCoordinateKey = "spikemesh.mesh_coordinate";

/// op_type of each artifact op; equal to the snn op's mnemonic.
namespace op {
inline constexpr const char *kLinear = "linear";
inline constexpr const char *kConv2d = "conv2d";
inline constexpr const char *kBatchNorm = "batch_norm";
inline constexpr const char *kMaxPool2d = "max_pool2d";
inline constexpr const char *kAvgPool2d = "avg_pool2d";
inline constexpr const char *kAdaptiveAvgPool2d = "adaptive_avg_pool2d";
inline constexpr const char *kFlatten = "flatten";
inline constexpr const char *kGroupNorm = "group_norm";
inline constexpr const char *kReshape = "reshape";
inline constexpr const char *kDropout = "dropout";
inline constexpr const char *kAdd = "add";
inline constexpr const char *kMul = "mul";
inline constexpr const char *kMeanTime = "mean_time";
inline constexpr const char *kConcat = "concat";
inline constexpr const char *kSumTime = "sum_time";
inline constexpr const char *kReduceMean = "reduce_mean";
inline constexpr const char *kSpikingAttention = "spiking_attention";
inline constexpr const char *kIFNode = "if_node";
inline constexpr const char *kLIFNode = "lif_node";
inline constexpr const char *kPLIFNode = "plif_node";
inline constexpr const char *kNeuron = "neuron";
/// A described neuron with a recurrent Linear: inputs x, weight [F, F], bias [F], operands.
inline constexpr const char *kRecurrentNeuron = "recurrent_neuron";
inline constexpr const char *kParallelNeuron = "parallel_neuron";
inline constexpr const char *kBiasAdd = "bias_add";
// Collectives of a partitioned (per-rank) program, over one mesh axis' group
// (members ordered by their coordinate on that axis). See
// docs/artifact-format.md, "Collectives".
inline constexpr const char *kAllReduce = "all_reduce";
inline constexpr const char *kAllGather = "all_gather";
inline constexpr const char *kAllSlice = "all_slice";
inline constexpr const char *kBackwardAllReduce = "backward_all_reduce";
// Pipeline stage boundaries: the program of one logical stage receives the
// tensors its predecessor sends (docs/artifact-format.md, "Pipeline programs").
inline constexpr const char *kSend = "send";
inline constexpr const char *kRecv = "recv";
} // namespace op

/// Attribute names; equal to the snn ops' ODS attribute names.
namespace attr {
inline constexpr const char *kStride = "stride";
inline constexpr const char *kPadding = "padding";
inline constexpr const char *kDilation = "dilation";
inline constexpr const char *kGroups = "groups";
inline constexpr const char *kEps = "eps";
inline constexpr const char *kMomentum = "momentum";
inline constexpr const char *kKernelSize = "kernel_size";
inline constexpr const char *kCeilMode = "ceil_mode";
inline constexpr const char *kCountIncludePad = "count_include_pad";
inline constexpr const char *kOutputSize = "output_size";
inline constexpr const char *kP = "p";
inline constexpr const char *kNumGroups = "num_groups";
inline constexpr const char *kShape = "shape";
inline constexpr const char *kVThreshold = "v_threshold";
inline constexpr const char *kVReset = "v_reset";
inline constexpr const char *kDetachReset = "detach_reset";
inline constexpr const char *kSurrogate = "surrogate";
inline constexpr const char *kAlpha = "alpha";
inline constexpr const char *kBeta = "beta";
inline constexpr const char *kTau = "tau";
inline constexpr const char *kDecayInput = "decay_input";
inline constexpr const char *kAxis = "axis";
inline constexpr const char *kMeshAxis = "mesh_axis";
inline constexpr const char *kPeer = "peer";
inline constexpr const char *kSlot = "slot";
inline constexpr const char *kAxes = "axes";
inline constexpr const char *kKeepdims = "keepdims";
inline constexpr const char *kNumHeads = "num_heads";
inline constexpr const char *kScale = "scale";
inline constexpr const char *kHeadGroups = "head_groups";
// parallel_neuron: the ONNX node's names and variant values (OnnxProfile.h).
inline constexpr const char *kVariant = profile::attr::kVariant;
inline constexpr const char *kK = profile::attr::kK;
inline constexpr const char *kLambda = profile::attr::kLambda;
} // namespace attr

/// One op_type: how many inputs its node takes (optional trailing inputs make
/// the range) and every attribute it may carry.
struct ArtifactOp {
  const char *name;
  int minInputs;
  int maxInputs;
  std::vector<const char *> attributes;
};

/// Whether `opType` is one of the artifact's neuron ops named by their class (if_node,
/// lif_node, plif_node).
bool isNeuronOp(std::string_view opType);
/// Whether `opType` keeps a state across time steps: those, the described `neuron` and
/// `recurrent_neuron` (not `parallel_neuron`, which mixes its whole input over time in one
/// product).
bool isStatefulOp(std::string_view opType);

/// Every op an artifact program may hold, in a fixed order.
const std::vector<ArtifactOp> &artifactOps();

/// The entry for `opType`, or null.
const ArtifactOp *findArtifactOp(std::string_view opType);

} // namespace snn::schema

#endif // SNN_SCHEMA_ARTIFACTOPS_H
