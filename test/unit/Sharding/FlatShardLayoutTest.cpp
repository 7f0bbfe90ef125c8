//===- FlatShardLayoutTest.cpp - Flat shard layout and state pieces -------===//

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Sharding/FlatShardLayout.h"
#include "snn/Runtime/Sharding/ShardPieceState.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>

#include <gtest/gtest.h>

#include <vector>

using namespace snn::runtime;

namespace {

TEST(FlatShardLayout, ChunksCoverEveryElementOnce) {
  // 5 + 3 + 4 = 12 elements over 5 ranks: chunks of 3, the last all padding.
  FlatShardLayout layout({5, 3, 4}, 5);
  EXPECT_EQ(layout.total(), 12);
  EXPECT_EQ(layout.chunk(), 3);
  EXPECT_EQ(layout.paddedTotal(), 15);
  std::vector<int> seen(12, 0);
  for (int rank = 0; rank < 5; ++rank)
    for (const ShardPiece &piece : layout.piecesOf(rank)) {
      EXPECT_GE(piece.flatOffset, rank * layout.chunk());
      EXPECT_LE(piece.flatOffset + piece.length, (rank + 1) * layout.chunk());
      EXPECT_EQ(piece.flatOffset, layout.offsetOf(piece.tensor) + piece.offset);
      for (int64_t i = 0; i < piece.length; ++i)
        ++seen[size_t(piece.flatOffset + i)];
    }
  for (int count : seen)
    EXPECT_EQ(count, 1);
  EXPECT_TRUE(layout.piecesOf(4).empty());
  // Rank 1 holds [3, 6): the end of tensor 0 and the start of tensor 1.
  std::vector<ShardPiece> rank1 = layout.piecesOf(1);
  ASSERT_EQ(rank1.size(), 2u);
  EXPECT_EQ(rank1[0].tensor, 0u);
  EXPECT_EQ(rank1[0].offset, 3);
  EXPECT_EQ(rank1[0].length, 2);
  EXPECT_EQ(rank1[1].tensor, 1u);
  EXPECT_EQ(rank1[1].offset, 0);
  EXPECT_EQ(rank1[1].length, 1);
}

TEST(FlatShardLayout, RejectsBadArguments) {
  EXPECT_THROW(FlatShardLayout({4}, 0), Error);
  EXPECT_THROW(FlatShardLayout({-1}, 2), Error);
  EXPECT_THROW(FlatShardLayout({4}, 2).piecesOf(2), Error);
}

TEST(ShardPieceState, SliceIsThePieceOfTheWholeState) {
  ParamState whole;
  whole.step = 4;
  whole.expAvg = at::arange(12, at::kFloat).view({3, 4});
  whole.expAvgSq = at::arange(12, at::kFloat).view({3, 4}).mul(2);
  ShardPiece piece{0, 5, 4, 5};
  ParamState slice = sliceParamState(whole, piece);
  EXPECT_EQ(slice.step, 4);
  EXPECT_TRUE(at::equal(slice.expAvg, at::arange(5, 9, at::kFloat)));
  EXPECT_TRUE(at::equal(slice.expAvgSq, at::arange(5, 9, at::kFloat).mul(2)));
  EXPECT_FALSE(slice.momentumBuffer.defined());
}

} // namespace
