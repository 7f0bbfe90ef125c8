//===- SampleOrderTest.cpp - The SplitMix64 order of docs/training.md -----===//
//
// Expected values come from a direct Python transcription of the
// specification (64-bit masks on Python ints), independent of this code.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Data/SampleOrder.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace snn::runtime;

TEST(SampleOrder, SplitMix64MatchesTheReferenceStream) {
  // The published first outputs of SplitMix64 from state 0.
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(rng.next(), 0x06c45d188009454full);
}

TEST(SampleOrder, ShuffleMatchesTheSpecification) {
  EXPECT_EQ(shuffledOrder(0, 0, 10),
            (std::vector<int64_t>{4, 2, 8, 1, 9, 3, 0, 6, 7, 5}));
  EXPECT_EQ(shuffledOrder(42, 3, 10),
            (std::vector<int64_t>{6, 9, 7, 0, 5, 4, 2, 1, 8, 3}));
  // seed * golden wraps modulo 2^64.
  EXPECT_EQ(shuffledOrder(~uint64_t(0), 0, 7),
            (std::vector<int64_t>{0, 1, 3, 2, 4, 5, 6}));
}

TEST(SampleOrder, FashionMnistSizedOrder) {
  std::vector<int64_t> order = shuffledOrder(1, 2, 60000);
  EXPECT_EQ(std::vector<int64_t>(order.begin(), order.begin() + 5),
            (std::vector<int64_t>{59384, 24240, 58895, 20217, 22327}));
  EXPECT_EQ(std::vector<int64_t>(order.end() - 5, order.end()),
            (std::vector<int64_t>{30271, 26274, 23775, 54286, 51561}));
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, fileOrder(60000));
}

TEST(SampleOrder, TinyAndEmptyDatasets) {
  EXPECT_EQ(shuffledOrder(7, 0, 1), std::vector<int64_t>{0});
  EXPECT_EQ(shuffledOrder(7, 0, 2), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(shuffledOrder(7, 0, 0).empty());
  EXPECT_EQ(fileOrder(3), (std::vector<int64_t>{0, 1, 2}));
}

TEST(SampleOrder, EpochsDiffer) {
  EXPECT_NE(shuffledOrder(5, 0, 100), shuffledOrder(5, 1, 100));
  EXPECT_EQ(shuffledOrder(5, 1, 100), shuffledOrder(5, 1, 100));
}
