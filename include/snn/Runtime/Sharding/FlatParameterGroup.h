//===- FlatParameterGroup.h - Parameters as views of one buffer -*- C++ -*-===//
//
// ZeRO and fsdp move parameters as one flat buffer per group, as PyTorch's
// FSDP FlatParameter does: the group's parameters are re-pointed (set_data)
// to views of a buffer [N * chunk] laid out by FlatShardLayout, so a rank's
// chunk is one contiguous view and an all_gather fills every parameter at
// once. The parameters stay the same leaf tensors (the Executor, autograd
// and the optimizer keep their handles).
//
// fsdp frees the buffer's storage between uses (release) and gathers it back
// (gather). Autograd's saved references to a parameter are views of that
// storage, so the values written by a re-gather are what backward reads;
// collectives write through the raw pointer and do not bump the version
// counter, which is why a free/re-gather between forward and backward is
// legal.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SHARDING_FLATPARAMETERGROUP_H
#define SNN_RUNTIME_SHARDING_FLATPARAMETERGROUP_H

#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Sharding/FlatShardLayout.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace snn::runtime {

class FlatParameterGroup {
public:
  /// Copies the values of `params` (float32 leaves, in model order) into a
  /// new flat buffer and re-points them to views of it. Throws Error for a
  /// parameter of another dtype.
  FlatParameterGroup(std::vector<at::Tensor> params, int ranks, int rank);

  const FlatShardLayout &layout() const { return shardLayout; }
  const std::vector<at::Tensor> &params() const { return tensors; }
  int rank() const { return ownRank; }

  /// The whole buffer [paddedTotal]; its storage is empty while released.
  const at::Tensor &flat() const { return buffer; }
  /// This rank's chunk of the buffer, a view [chunk].
  at::Tensor ownChunk() const;
  /// This rank's pieces (FlatShardLayout::piecesOf(rank)).
  const std::vector<ShardPiece> &ownPieces() const { return pieces; }
  /// Own piece `piece` within `chunk`, a [chunk] tensor laid out like
  /// ownChunk() (the chunk itself, a kept copy, or a gradient chunk).
  at::Tensor pieceOfChunk(const at::Tensor &chunk,
                          const ShardPiece &piece) const;

  bool materialized() const;
  /// Frees the buffer's storage (every parameter's data with it).
  void release();
  /// all_gather of every rank's `shard` [chunk] into the buffer (allocated
  /// first if released): every parameter holds the full values again.
  void gather(const dist::Group &group, const at::Tensor &shard);
  /// gather() started in the background; the parameters must not be read
  /// before the returned collective is waited for.
  dist::PendingCollective gatherAsync(const dist::Group &group,
                                      const at::Tensor &shard);

  /// The parameters' gradients laid out like the buffer (zeros for padding
  /// and for a parameter without a gradient).
  at::Tensor flatGradients() const;
  /// Parameter bytes this rank holds now (0 while released).
  int64_t residentBytes() const;

private:
  void allocate();
  /// Where this rank's chunk starts in the flat buffer.
  int64_t chunkStart() const { return shardLayout.chunk() * ownRank; }

  FlatShardLayout shardLayout;
  std::vector<at::Tensor> tensors;
  std::vector<ShardPiece> pieces;
  at::Tensor buffer;
  int ownRank = 0;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_SHARDING_FLATPARAMETERGROUP_H
