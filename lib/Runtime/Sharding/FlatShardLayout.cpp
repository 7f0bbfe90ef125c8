//===- FlatShardLayout.cpp - Tensors laid end to end, cut in N ------------===//

#include "snn/Runtime/Sharding/FlatShardLayout.h"
#include "snn/Runtime/Support/Error.h"

#include <algorithm>

namespace snn::runtime {

FlatShardLayout::FlatShardLayout(std::vector<int64_t> sizes, int ranks)
    : numels(std::move(sizes)), rankCount(ranks) {
  if (ranks < 1)
    throw Error("a shard layout needs at least one rank");
  for (int64_t numel : numels) {
    if (numel < 0)
      throw Error("a shard layout cannot hold a negative element count");
    offsets.push_back(totalElements);
    totalElements += numel;
  }
  chunkElements = (totalElements + ranks - 1) / ranks;
}

std::vector<ShardPiece> FlatShardLayout::piecesOf(int rank) const {
  if (rank < 0 || rank >= rankCount)
    throw Error("rank " + std::to_string(rank) + " is outside a layout of " +
                std::to_string(rankCount) + " ranks");
  const int64_t begin = chunkElements * rank;
  const int64_t end = std::min(begin + chunkElements, totalElements);
  std::vector<ShardPiece> pieces;
  for (size_t i = 0; i < numels.size(); ++i) {
    int64_t first = std::max(begin, offsets[i]);
    int64_t last = std::min(end, offsets[i] + numels[i]);
    if (first < last)
      pieces.push_back({i, first - offsets[i], last - first, first});
  }
  return pieces;
}

} // namespace snn::runtime
