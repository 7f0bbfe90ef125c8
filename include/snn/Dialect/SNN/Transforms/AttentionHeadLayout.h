//===- AttentionHeadLayout.h - Whole heads per rank for attention TP -*- C++ -*-===//
//
// SpikingJelly's fused qkv projection orders its output channels (3, heads, D): all q, then
// all k, then all v. A contiguous split of those channels over tp ranks (the only split the
// partitioner makes) would give a rank the q of some heads and the k of others. Before the
// split, the projection's parameters (conv weight rows and bias, the BatchNorm's weight,
// bias and running statistics) and everything per channel between it and the attention are
// relaid out as (parts, 3, heads / parts, D): part r holds the q, k and v of rank r's heads,
// and the attention op says so with `head_groups = parts`. Each relaid parameter carries
// kSplitGroupsAttrName = 3, which the exporter writes to the manifest (`split_groups`): the
// runtime then cuts a whole (PyTorch-layout) tensor into a rank's part, and gathers one
// back, group by group.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_TRANSFORMS_ATTENTIONHEADLAYOUT_H
#define SNN_DIALECT_SNN_TRANSFORMS_ATTENTIONHEADLAYOUT_H

#include "mlir/Support/LLVM.h"

namespace snn {

class SpikingAttentionOp;

/// Discardable attribute of a relaid-out snn.parameter: the number of equal blocks (q, k, v)
/// its split dimension holds in PyTorch's layout, each split over the ranks on its own.
inline constexpr const char *kSplitGroupsAttrName = "snn.split_groups";

/// Relays `attention`'s fused projection out for a channel split over `parts` ranks (see the
/// top). Fails, naming the op, when `parts` does not divide its heads or the chain from the
/// projection to the attention holds anything but per-channel ops of single use.
mlir::LogicalResult relayoutAttentionHeads(SpikingAttentionOp attention, int64_t parts);

} // namespace snn

#endif // SNN_DIALECT_SNN_TRANSFORMS_ATTENTIONHEADLAYOUT_H
