//===- BatchNormBackwardTest.cpp - Training BatchNorm backward vs ATen's --===//
//
// The runtime's BatchNorm backward must give ATen's native_batch_norm_backward
// bit for bit: plane sizes that are multiples of the vector lanes and ones
// with a tail, inputs that repeat one step over T (read in place, not
// copied), partial masks, in place, and the plane sums handed in by the
// caller as the spiking block computes them.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Kernels/BatchNormBackwardKernels.h"
#include "snn/Runtime/Kernels/BatchNormKernels.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

using namespace snn::runtime;

namespace {

struct Case {
  at::Tensor dy, x, weight, mean, invstd;
};

/// x's batch statistics, as a training forward saves them.
Case randomCase(at::IntArrayRef shape) {
  at::Tensor x = at::randn(shape) * 1.3 + 0.2;
  at::Tensor fold = x.dim() == 5 ? x.flatten(0, 1) : x;
  at::Tensor mean = fold.mean({0, 2, 3});
  at::Tensor invstd = (fold.var({0, 2, 3}, /*unbiased=*/false) + 1e-5).rsqrt();
  return {at::randn(shape), x, at::rand({shape[x.dim() - 3]}) + 0.5, mean, invstd};
}

/// ATen's backward on the NCHW fold of the same values, whatever c's layout.
void expectMatches(const Case &c, std::array<bool, 3> mask = {true, true, true}) {
  at::Tensor fold = (c.x.dim() == 5 ? c.x.contiguous().flatten(0, 1) : c.x).contiguous();
  at::Tensor dyFold = (c.dy.dim() == 5 ? c.dy.contiguous().flatten(0, 1) : c.dy).contiguous();
  auto [gx, gw, gb] = at::native_batch_norm_backward(dyFold, fold, c.weight, {}, {}, c.mean,
                                                     c.invstd, true, 1e-5, mask);
  BatchNormBackwardResult r =
      batchNormTrainingBackward(c.dy, c.x, c.weight, c.mean, c.invstd, mask);
  ASSERT_EQ(r.gradInput.defined(), mask[0]);
  ASSERT_EQ(r.gradWeight.defined(), mask[1]);
  ASSERT_EQ(r.gradBias.defined(), mask[2]);
  if (mask[0]) {
    EXPECT_EQ(r.gradInput.strides(), c.dy.strides()); // the gradient keeps the layout
    EXPECT_TRUE(at::equal(r.gradInput.reshape(dyFold.sizes()), gx));
  }
  if (mask[1])
    EXPECT_TRUE(at::equal(r.gradWeight, gw));
  if (mask[2])
    EXPECT_TRUE(at::equal(r.gradBias, gb));
}

bool available() { return batchNormBackwardKernelAvailable(); }

} // namespace

// Both kernels reproduce the same ATen build: where its forward's rounding
// is matched, a backward that matches no variant is a bug here, not a
// property of the machine (the runtime would quietly fall back to ATen).
TEST(BatchNormBackwardKernels, ReproducedWhereverTheForwardIs) {
  if (!batchNormKernelAvailable())
    GTEST_SKIP() << "the forward is not reproduced on this machine either";
  EXPECT_TRUE(batchNormBackwardKernelAvailable());
}

TEST(BatchNormBackwardKernels, MatchesATenBitForBit) {
  if (!available())
    GTEST_SKIP() << "ATen's backward rounding on this machine is not reproduced; "
                    "the runtime uses ATen's backward";
  at::manual_seed(3);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{8, 4, 28, 28}, {6, 5, 14, 14},
                                     {3, 7, 4, 4}, {5, 3, 17, 1}, {4, 2, 9, 7}, {2, 3, 5, 5}}) {
    SCOPED_TRACE(::testing::Message() << "shape " << at::IntArrayRef(shape));
    if (shape[2] * shape[3] < 16) {
      EXPECT_FALSE(batchNormBackwardKernelApplies(at::zeros(shape)));
      continue;
    }
    expectMatches(randomCase(shape));
  }
}

TEST(BatchNormBackwardKernels, StepsAndRepeatedStep) {
  if (!available())
    GTEST_SKIP() << "not reproduced on this machine";
  at::manual_seed(4);
  expectMatches(randomCase({3, 4, 6, 10, 10})); // [T, N, C, H, W]
  // One step repeated over T (a time-invariant input): stride 0, read in place.
  Case c = randomCase({1, 4, 6, 10, 10});
  c.x = c.x.expand({5, 4, 6, 10, 10});
  c.dy = at::randn({5, 4, 6, 10, 10});
  ASSERT_EQ(c.x.stride(0), 0);
  ASSERT_TRUE(batchNormBackwardKernelApplies(c.x));
  expectMatches(c);
}

/// Every step of x [T, N, C, H, W] (or x [N, C, H, W]) stored channels-last.
at::Tensor channelsLast(const at::Tensor &x) {
  if (x.dim() == 4)
    return x.contiguous(at::MemoryFormat::ChannelsLast);
  return x.flatten(0, 1).contiguous(at::MemoryFormat::ChannelsLast).view(x.sizes());
}

// NHWC input (a channels-last convolution's output) gives ATen's NCHW bits:
// 13 channels, planes of 63 and 196 pixels (tails for 8 and 16 lanes).
TEST(BatchNormBackwardKernels, ChannelsLastGivesTheNchwBits) {
  if (!available())
    GTEST_SKIP() << "not reproduced on this machine";
  at::manual_seed(8);
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{4, 13, 7, 9}, {3, 2, 13, 14, 14}, {2, 3, 8, 4, 4}}) {
    SCOPED_TRACE(::testing::Message() << "shape " << at::IntArrayRef(shape));
    Case c = randomCase(shape);
    c.x = channelsLast(c.x);
    c.dy = channelsLast(c.dy);
    ASSERT_FALSE(c.x.is_contiguous());
    ASSERT_TRUE(batchNormBackwardKernelApplies(c.x));
    expectMatches(c);
    expectMatches(c, {false, true, false});
  }
  // One NHWC step repeated over T.
  Case c = randomCase({1, 3, 5, 8, 6});
  c.x = channelsLast(c.x).expand({4, 3, 5, 8, 6});
  c.dy = channelsLast(at::randn({4, 3, 5, 8, 6}));
  ASSERT_TRUE(batchNormBackwardKernelApplies(c.x));
  expectMatches(c);
  // The gradient must come in x's layout.
  EXPECT_THROW(batchNormTrainingBackward(c.dy.contiguous(), c.x, c.weight, c.mean, c.invstd,
                                         {true, true, true}),
               std::exception);
}

TEST(BatchNormBackwardKernels, MasksAndInPlace) {
  if (!available())
    GTEST_SKIP() << "not reproduced on this machine";
  at::manual_seed(5);
  Case c = randomCase({4, 3, 12, 12});
  expectMatches(c, {true, false, false});
  expectMatches(c, {false, true, true});
  at::Tensor expected = batchNormTrainingBackward(c.dy, c.x, c.weight, c.mean, c.invstd,
                                                  {true, false, false})
                            .gradInput;
  at::Tensor dy = c.dy.clone();
  BatchNormBackwardResult r = batchNormTrainingBackward(dy, c.x, c.weight, c.mean, c.invstd,
                                                        {true, false, false}, nullptr, true);
  EXPECT_EQ(r.gradInput.data_ptr(), dy.data_ptr());
  EXPECT_TRUE(at::equal(r.gradInput, expected));
}

TEST(BatchNormBackwardKernels, GivenPlaneSumsGiveTheSameBits) {
  if (!available())
    GTEST_SKIP() << "not reproduced on this machine";
  at::manual_seed(6);
  Case c = randomCase({5, 4, 13, 11}); // 143 per plane: a tail
  const int64_t planes = 5 * 4, image = 13 * 11;
  std::vector<float> sum(planes), dot(planes);
  const float *dy = c.dy.data_ptr<float>(), *x = c.x.data_ptr<float>();
  for (int64_t p = 0; p < planes; ++p)
    batchNormPlaneSums(dy + p * image, x + p * image, c.mean.data_ptr<float>()[p % 4], image,
                       sum[size_t(p)], dot[size_t(p)]);
  BatchNormPlaneTotals totals{sum.data(), dot.data()};
  BatchNormBackwardResult given = batchNormTrainingBackward(c.dy, c.x, c.weight, c.mean,
                                                            c.invstd, {true, true, true}, &totals);
  BatchNormBackwardResult own =
      batchNormTrainingBackward(c.dy, c.x, c.weight, c.mean, c.invstd, {true, true, true});
  EXPECT_TRUE(at::equal(given.gradInput, own.gradInput));
  EXPECT_TRUE(at::equal(given.gradWeight, own.gradWeight));
  EXPECT_TRUE(at::equal(given.gradBias, own.gradBias));
  // A plane sum that is off must show: the sums are really used.
  sum[7] += 1.0f;
  BatchNormBackwardResult off = batchNormTrainingBackward(c.dy, c.x, c.weight, c.mean, c.invstd,
                                                          {false, false, true}, &totals);
  EXPECT_FALSE(at::equal(off.gradBias, own.gradBias));
}

TEST(BatchNormBackwardKernels, AppliesOnlyToDenseFloat32Planes) {
  EXPECT_TRUE(batchNormBackwardKernelApplies(at::zeros({2, 3, 4, 4})));
  EXPECT_FALSE(batchNormBackwardKernelApplies(at::zeros({2, 3, 3, 3})));        // < 16 per plane
  EXPECT_FALSE(batchNormBackwardKernelApplies(at::zeros({2, 3, 4, 4}, at::kDouble)));
  EXPECT_FALSE(batchNormBackwardKernelApplies(at::zeros({2, 3, 8, 8}).transpose(2, 3)));
  EXPECT_TRUE(batchNormBackwardKernelApplies(
      at::zeros({2, 3, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast)));
  EXPECT_FALSE(batchNormBackwardKernelApplies(at::zeros({2, 3, 8, 8}).permute({0, 2, 1, 3})));
  EXPECT_FALSE(batchNormBackwardKernelApplies(at::zeros({2, 3, 16})));         // [N, C, L]
}
