//===- FlatShardLayout.h - Tensors laid end to end, cut in N ----*- C++ -*-===//
//
// The sharding rule of ZeRO and fsdp (docs/distributed.md, "Sharded
// training"): a group's tensors are flattened and laid end to end in model
// order, the sum is padded to a multiple of the rank count N, and rank r owns
// the r-th of N equal chunks. A rank's chunk may start or end inside a tensor;
// the part of one tensor inside one chunk is a ShardPiece. Sharded
// checkpoints record pieces by (tensor, offset in the flattened tensor), so
// they do not depend on this rule and load under another rank count.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SHARDING_FLATSHARDLAYOUT_H
#define SNN_RUNTIME_SHARDING_FLATSHARDLAYOUT_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace snn::runtime {

struct ShardPiece {
  size_t tensor = 0;      // index into the layout's tensors
  int64_t offset = 0;     // first element, in the flattened tensor
  int64_t length = 0;     // elements
  int64_t flatOffset = 0; // first element, in the flat buffer
};

class FlatShardLayout {
public:
  /// `numels`: element counts in model order; `ranks` >= 1.
  FlatShardLayout(std::vector<int64_t> numels, int ranks);

  int ranks() const { return rankCount; }
  size_t numTensors() const { return numels.size(); }
  int64_t numel(size_t tensor) const { return numels[tensor]; }
  /// Elements of all tensors together, without padding.
  int64_t total() const { return totalElements; }
  /// Elements per rank: ceil(total / ranks).
  int64_t chunk() const { return chunkElements; }
  /// chunk() * ranks(): the flat buffer's length.
  int64_t paddedTotal() const { return chunkElements * rankCount; }
  /// Where tensor `tensor` starts in the flat buffer.
  int64_t offsetOf(size_t tensor) const { return offsets[tensor]; }
  /// The pieces of rank `rank`'s chunk, in flat order (none for a chunk of
  /// padding only).
  std::vector<ShardPiece> piecesOf(int rank) const;

private:
  std::vector<int64_t> numels;
  std::vector<int64_t> offsets;
  int rankCount = 1;
  int64_t totalElements = 0;
  int64_t chunkElements = 0;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_SHARDING_FLATSHARDLAYOUT_H
