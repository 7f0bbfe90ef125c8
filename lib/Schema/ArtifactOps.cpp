//===- ArtifactOps.cpp - The artifact op table ----------------------------===//
#include "snn/Schema/ArtifactOps.h"

namespace snn::schema {

bool isNeuronOp(std::string_view opType) {
  return opType == op::kIFNode || opType == op::kLIFNode || opType == op::kPLIFNode;
}

bool isStatefulOp(std::string_view opType) {
  return isNeuronOp(opType) || opType == op::kNeuron || opType == op::kRecurrentNeuron;
}

namespace {

/// The attributes of a neuron described by its parts.
std::vector<const char *> describedNeuronAttributes() {
  using namespace attr;
  return {neuron_attr::kStates, neuron_attr::kConstants, neuron_attr::kOperands,
          neuron_attr::kCharge, neuron_attr::kFire,      neuron_attr::kReset,
          kDetachReset,         neuron_attr::kUpdate,    neuron_attr::kOutput,
          kSurrogate,           kAlpha,                  kBeta};
}

} // namespace

const std::vector<ArtifactOp> &artifactOps() {
  using namespace attr;
  static const std::vector<ArtifactOp> ops = {
      {op::kLinear, 2, 3, {}},
      {op::kConv2d, 2, 3, {kStride, kPadding, kDilation, kGroups}},
      {op::kBatchNorm, 5, 5, {kEps, kMomentum}},
      {op::kMaxPool2d, 1, 1, {kKernelSize, kStride, kPadding, kCeilMode, kDilation}},
      {op::kAvgPool2d, 1, 1, {kKernelSize, kStride, kPadding, kCeilMode, kCountIncludePad}},
      {op::kAdaptiveAvgPool2d, 1, 1, {kOutputSize}},
      {op::kFlatten, 1, 1, {}},
      {op::kGroupNorm, 3, 3, {kNumGroups, kEps}},
      {op::kReshape, 1, 1, {kShape}},
      {op::kDropout, 1, 1, {kP}},
      {op::kAdd, 2, 2, {}},
      {op::kMul, 2, 2, {}},
      {op::kMeanTime, 1, 1, {}},
      {op::kConcat, 2, 1024, {kAxis}},
      {op::kSumTime, 1, 1, {}},
      {op::kReduceMean, 1, 1, {kAxes, kKeepdims}},
      {op::kSpikingAttention, 1, 1, {kNumHeads, kScale, kHeadGroups}},
      {op::kIFNode, 1, 1, {kVThreshold, kVReset, kDetachReset, kSurrogate, kAlpha, kBeta}},
      {op::kLIFNode, 1, 1,
       {kVThreshold, kVReset, kDetachReset, kSurrogate, kAlpha, kBeta, kTau, kDecayInput}},
      {op::kPLIFNode, 2, 2,
       {kVThreshold, kVReset, kDetachReset, kSurrogate, kAlpha, kBeta, kDecayInput}},
      {op::kNeuron, 1, 1024, describedNeuronAttributes()},
      {op::kRecurrentNeuron, 3, 1024, describedNeuronAttributes()},
      {op::kParallelNeuron, 3, 3, {kVariant, kK, kLambda, kSurrogate, kAlpha, kBeta}},
      {op::kBiasAdd, 2, 2, {kAxis}},
      {op::kAllReduce, 1, 1, {kMeshAxis}},
      {op::kAllGather, 1, 1, {kMeshAxis, kAxis}},
      {op::kAllSlice, 1, 1, {kMeshAxis, kAxis}},
      {op::kBackwardAllReduce, 1, 1, {kMeshAxis}},
      {op::kSend, 1, 1, {kPeer, kSlot}},
      {op::kRecv, 0, 0, {kPeer, kSlot}},
  };
  return ops;
}

const ArtifactOp *findArtifactOp(std::string_view opType) {
  for (const ArtifactOp &op : artifactOps())
    if (opType == op.name)
      return &op;
  return nullptr;
}

} // namespace snn::schema
