//===- AttentionHeadLayout.cpp - Whole heads per rank for attention TP ---===//
#include "snn/Dialect/SNN/Transforms/AttentionHeadLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FormatVariadic.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/Manifest.h"

using namespace mlir;

namespace snn {

namespace {

/// The new position of channel `c` of a (3, heads, D) layout in (parts, 3, heads/parts, D).
int64_t relaidChannel(int64_t c, int64_t channels, int64_t parts) {
  int64_t perProjection = channels / 3, perPart = perProjection / parts;
  int64_t which = c / perProjection, within = c % perProjection;
  int64_t part = within / perPart, offset = within % perPart;
  return (part * 3 + which) * perPart + offset;
}

/// Permutes dimension 0 of `param`'s value (rows of `channels`) and marks it relaid.
LogicalResult relayoutParameter(ParameterOp param, int64_t channels, int64_t parts,
                                Operation *attention) {
  auto values = dyn_cast<DenseFPElementsAttr>(param.getValue());
  auto type = cast<RankedTensorType>(param.getType());
  if (!values || type.getRank() < 1 || type.getDimSize(0) != channels)
    return attention->emitError("cannot split the heads of spiking attention: parameter '")
           << param.getName() << "' of its qkv projection is not a dense tensor of " << channels
           << " rows";
  if (param->hasAttr(kSplitGroupsAttrName) || !param->hasOneUse())
    return attention->emitError("cannot split the heads of spiking attention: parameter '")
           << param.getName() << "' of its qkv projection is used elsewhere too";
  int64_t row = type.getNumElements() / channels;
  SmallVector<APFloat> in(values.getValues<APFloat>()), out(in);
  for (int64_t c = 0; c < channels; ++c)
    std::copy(in.begin() + c * row, in.begin() + (c + 1) * row,
              out.begin() + relaidChannel(c, channels, parts) * row);
  param.setValueAttr(DenseFPElementsAttr::get(type, out));
  param->setAttr(kSplitGroupsAttrName,
                 Builder(param).getI64IntegerAttr(schema::kFusedProjectionBlocks));
  return success();
}

/// The per-channel parameters of a projection-chain op: conv2d's weight and bias,
/// batch_norm's four; none for the element-wise and reshape ops.
SmallVector<Value> channelParameters(Operation *op) {
  if (auto conv = dyn_cast<Conv2dOp>(op)) {
    SmallVector<Value> params{conv.getWeight()};
    if (conv.getBias())
      params.push_back(conv.getBias());
    return params;
  }
  if (auto bn = dyn_cast<BatchNormOp>(op))
    return {bn.getWeight(), bn.getBias(), bn.getRunningMean(), bn.getRunningVar()};
  return {};
}

/// Whether `op` keeps dim 2 as the (same) channels and computes per channel.
bool perChannel(Operation *op) {
  // A parallel neuron's weight and bias mix time steps, not channels.
  if (isa<BatchNormOp, IFNodeOp, LIFNodeOp, PLIFNodeOp, ParallelNeuronOp>(op))
    return true;
  if (auto neuron = dyn_cast<NeuronOp>(op)) // per-channel operands would need the permutation
    return neuron.getParams().empty();
  auto reshape = dyn_cast<ReshapeOp>(op);
  if (!reshape)
    return false;
  auto in = cast<RankedTensorType>(reshape.getInput().getType());
  auto out = cast<RankedTensorType>(reshape.getResult().getType());
  return in.getRank() >= 3 && out.getRank() >= 3 && in.getDimSize(2) == out.getDimSize(2);
}

/// The ops from the projection conv2d up to the attention's input, the conv first.
FailureOr<SmallVector<Operation *>> projectionChain(SpikingAttentionOp attention) {
  SmallVector<Operation *> chain;
  Value value = attention.getInput();
  while (Operation *op = value.getDefiningOp()) {
    if (!value.hasOneUse())
      return attention.emitError("cannot split the heads of spiking attention: the output of '")
             << op->getName() << "' on its qkv path has other users";
    chain.insert(chain.begin(), op);
    if (isa<Conv2dOp>(op))
      return chain;
    if (!perChannel(op))
      break;
    value = op->getOperand(0);
  }
  return attention.emitError("cannot split the heads of spiking attention: its input is not a "
                             "conv2d projection followed only by batch_norm, neurons and "
                             "channel-keeping reshapes");
}

} // namespace

LogicalResult relayoutAttentionHeads(SpikingAttentionOp attention, int64_t parts) {
  int64_t heads = attention.getNumHeads();
  if (parts <= 1 || attention.getHeadGroups() == parts)
    return success();
  if (attention.getHeadGroups() != 1 || heads % parts != 0)
    return attention.emitError(llvm::formatv(
        "cannot split spiking attention over tp={0}: its {1} heads are not divisible by {0}",
        parts, heads));
  FailureOr<SmallVector<Operation *>> chain = projectionChain(attention);
  if (failed(chain))
    return failure();
  int64_t channels = cast<RankedTensorType>(attention.getInput().getType()).getDimSize(2);
  for (Operation *op : *chain)
    for (Value param : channelParameters(op)) {
      auto paramOp = param.getDefiningOp<ParameterOp>();
      if (!paramOp)
        return attention.emitError("cannot split the heads of spiking attention: an operand "
                                   "of its qkv projection's '")
               << op->getName() << "' is not a parameter";
      if (failed(relayoutParameter(paramOp, channels, parts, attention)))
        return failure();
    }
  attention.setHeadGroups(parts);
  return success();
}

} // namespace snn
