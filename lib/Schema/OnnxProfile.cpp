//===- OnnxProfile.cpp - The op table of the input profile ----------------===//
#include "snn/Schema/OnnxProfile.h"

namespace snn::schema::profile {

namespace {

/// The attributes of a neuron described by its parts, in name order.
std::vector<const char *> describedNeuronAttributes() {
  using namespace attr;
  return {kAlpha,        kBeta,   kCharge, kConstants, kDetachReset, kFire,
          kOperandNames, kOutput, kReset,  kStates,    kSurrogate,   kUpdate};
}

} // namespace

const std::vector<ProfileOp> &profileOps() {
  using namespace attr;
  static const std::vector<ProfileOp> ops = {
      {op::kIFNode, {kAlpha, kBeta, kDetachReset, kSurrogate, kVReset, kVThreshold}},
      {op::kLIFNode,
       {kAlpha, kBeta, kDecayInput, kDetachReset, kSurrogate, kTau, kVReset, kVThreshold}},
      {op::kParametricLIFNode,
       {kAlpha, kBeta, kDecayInput, kDetachReset, kInitTau, kSurrogate, kVReset, kVThreshold}},
      {op::kAdaptiveAvgPool2d, {kOutputSize}},
      {op::kGroupNorm, {kEpsilon, kNumGroups}},
      {op::kSpikingAttention, {kNumHeads, kScale}},
      {op::kNeuron, describedNeuronAttributes()},
      {op::kRecurrentNeuron, describedNeuronAttributes()},
      {op::kParallelSpikingNeuron, {kAlpha, kBeta, kK, kLambda, kSurrogate, kVariant}},
  };
  return ops;
}

const ProfileOp *findProfileOp(std::string_view opType) {
  for (const ProfileOp &op : profileOps())
    if (opType == op.type)
      return &op;
  return nullptr;
}

bool isNeuron(std::string_view opType) {
  return opType == op::kIFNode || opType == op::kLIFNode || opType == op::kParametricLIFNode;
}

} // namespace snn::schema::profile
