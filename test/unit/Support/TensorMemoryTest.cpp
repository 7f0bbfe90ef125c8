//===- TensorMemoryTest.cpp - Counting the bytes of CPU tensors -----------===//
#include "snn/Runtime/Support/TensorMemory.h"

#include <ATen/ATen.h>

#include <gtest/gtest.h>

using snn::runtime::TensorMemory;

TEST(TensorMemory, CountsLiveTensorsAndTheirPeak) {
  TensorMemory::install();
  TensorMemory::install(); // idempotent
  ASSERT_TRUE(TensorMemory::installed());
  int64_t base = TensorMemory::liveBytes();
  TensorMemory::resetPeak();
  {
    at::Tensor a = at::empty({1000}, at::kFloat);
    EXPECT_EQ(TensorMemory::liveBytes() - base, 4000);
    {
      at::Tensor b = at::zeros({250, 4}, at::kDouble);
      EXPECT_EQ(TensorMemory::liveBytes() - base, 12000);
    }
    EXPECT_EQ(TensorMemory::liveBytes() - base, 4000);
    // Results of ops and autograd's saved tensors are counted like any other.
    at::Tensor c = (a.fill_(1.0) * 2).sum();
    EXPECT_FLOAT_EQ(c.item<float>(), 2000.0f);
  }
  EXPECT_EQ(TensorMemory::liveBytes(), base);
  EXPECT_GE(TensorMemory::peakBytes() - base, 12000);
  TensorMemory::resetPeak();
  EXPECT_EQ(TensorMemory::peakBytes(), TensorMemory::liveBytes());
}
