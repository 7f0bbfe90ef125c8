//===- BatchNormTest.cpp - The runtime's training BatchNorm vs ATen's -----===//
//
// The forward (output, saved mean and invstd, running statistics) and the
// gradients must equal ATen's training batch_norm bit for bit, for channel
// counts that fill the eight-channel blocks and ones that do not. The
// kernel is float32-only (float64 runs take ATen's batch_norm, which
// OpGradTest checks against finite differences); its backward is
// BatchNormBackwardTest's.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/BatchNormAutograd.h"
#include "snn/Runtime/Kernels/BatchNormKernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace snn::runtime;

namespace {

struct Operands {
  at::Tensor x, weight, bias, mean, var;
};

Operands randomOperands(at::IntArrayRef shape) {
  int64_t c = shape[1];
  return {at::randn(shape) * 1.7 + 0.4, at::randn({c}), at::randn({c}),
          at::randn({c}) * 0.1, at::rand({c}) + 0.5};
}

void expectForwardMatches(at::IntArrayRef shape, double momentum,
                          double eps) {
  SCOPED_TRACE(::testing::Message() << "shape " << shape);
  Operands a = randomOperands(shape);
  Operands b{a.x, a.weight, a.bias, a.mean.clone(), a.var.clone()};
  ASSERT_TRUE(batchNormKernelApplies(a.x, a.weight, a.bias, a.mean, a.var));
  auto [y, mean, invstd] = at::native_batch_norm(
      a.x, a.weight, a.bias, a.mean, a.var, true, momentum, eps);
  BatchNormForwardResult r = batchNormTrainingForward(
      b.x, b.weight, b.bias, b.mean, b.var, momentum, eps);
  EXPECT_TRUE(at::equal(r.output, y));
  EXPECT_TRUE(at::equal(r.mean, mean));
  EXPECT_TRUE(at::equal(r.invstd, invstd));
  EXPECT_TRUE(at::equal(b.mean, a.mean));
  EXPECT_TRUE(at::equal(b.var, a.var));
}

} // namespace

TEST(BatchNormKernels, ForwardMatchesATenBitForBit) {
  if (!batchNormKernelAvailable())
    GTEST_SKIP() << "ATen's rounding on this machine is not reproduced; "
                    "the runtime uses ATen's batch_norm";
  at::manual_seed(11);
  expectForwardMatches({32, 16, 14, 14}, 0.1, 1e-5);
  expectForwardMatches({6, 13, 5, 7}, 0.3, 1e-3); // a partial block of 8
  expectForwardMatches({4, 9, 11}, 0.1, 1e-5);    // [N, C, L]
}

// A channels-last conv2d's output: the NCHW ATen reference's statistics and
// values bit for bit, the output in the input's layout. 21 channels: two
// whole eights of the NHWC sums and a tail.
TEST(BatchNormKernels, ChannelsLastInputGivesThePlanesBits) {
  if (!batchNormKernelAvailable())
    GTEST_SKIP() << "ATen's rounding on this machine is not reproduced";
  at::manual_seed(12);
  Operands a = randomOperands({6, 21, 9, 5});
  at::Tensor nhwc = a.x.contiguous(at::MemoryFormat::ChannelsLast);
  ASSERT_FALSE(nhwc.is_contiguous());
  ASSERT_TRUE(batchNormKernelApplies(nhwc, a.weight, a.bias, a.mean, a.var));
  Operands b{nhwc, a.weight, a.bias, a.mean.clone(), a.var.clone()};
  auto [y, mean, invstd] =
      at::native_batch_norm(a.x, a.weight, a.bias, a.mean, a.var, true, 0.1, 1e-5);
  BatchNormForwardResult r =
      batchNormTrainingForward(b.x, b.weight, b.bias, b.mean, b.var, 0.1, 1e-5);
  EXPECT_TRUE(r.output.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(at::equal(r.output, y));
  EXPECT_TRUE(at::equal(r.mean, mean));
  EXPECT_TRUE(at::equal(r.invstd, invstd));
  EXPECT_TRUE(at::equal(b.mean, a.mean));
  EXPECT_TRUE(at::equal(b.var, a.var));
  // Its statistics alone, as the spiking block takes them.
  at::Tensor m = a.mean.clone(), v = a.var.clone();
  BatchNormForwardResult stats = batchNormTrainingStatistics(nhwc, m, v, 0.1, 1e-5);
  EXPECT_TRUE(at::equal(stats.mean, mean));
  EXPECT_TRUE(at::equal(stats.invstd, invstd));
}

// A channels-last input of many 256 KiB chunks: the chunks' double sums
// added in chunk order are the planes' sums to double rounding, so the float
// mean and invstd are ATen's to within one float rounding (in practice the
// same bits), and they do not depend on the thread count.
TEST(BatchNormKernels, ChannelsLastStatisticsInChunksDoNotDependOnThreads) {
  if (!batchNormKernelAvailable())
    GTEST_SKIP() << "ATen's rounding on this machine is not reproduced";
  at::manual_seed(14);
  Operands a = randomOperands({64, 70, 24, 24}); // 36864 pixels: 40 chunks of 936
  at::Tensor nhwc = a.x.contiguous(at::MemoryFormat::ChannelsLast);
  auto [y, mean, invstd] =
      at::native_batch_norm(a.x, a.weight, a.bias, a.mean, a.var, true, 0.1, 1e-5);
  auto statistics = [&](int threads) {
    int before = at::get_num_threads();
    at::set_num_threads(threads);
    at::Tensor m = a.mean.clone(), v = a.var.clone();
    BatchNormForwardResult r = batchNormTrainingStatistics(nhwc, m, v, 0.1, 1e-5);
    at::set_num_threads(before);
    return std::vector<at::Tensor>{r.mean, r.invstd, m, v};
  };
  std::vector<at::Tensor> one = statistics(1), two = statistics(2), three = statistics(3);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(at::equal(two[i], one[i])) << i;
    EXPECT_TRUE(at::equal(three[i], one[i])) << i;
  }
  const double ulp = std::ldexp(1.0, -23); // one float rounding, relative
  EXPECT_TRUE(at::allclose(one[0], mean, ulp, 0.0));
  EXPECT_TRUE(at::allclose(one[1], invstd, ulp, 0.0));
}

TEST(BatchNormKernels, GradientsMatchATen) {
  if (!batchNormKernelAvailable())
    GTEST_SKIP() << "the runtime uses ATen's batch_norm on this machine";
  at::manual_seed(12);
  Operands a = randomOperands({8, 12, 6, 5});
  auto leaves = [&] {
    return std::vector<at::Tensor>{a.x.clone().requires_grad_(true),
                                   a.weight.clone().requires_grad_(true),
                                   a.bias.clone().requires_grad_(true)};
  };
  std::vector<at::Tensor> ours = leaves(), theirs = leaves();
  at::Tensor g = at::randn(a.x.sizes());
  at::Tensor y = batchNormTrainingWithGrad(ours[0], ours[1], ours[2],
                                           a.mean.clone(), a.var.clone(), 0.1,
                                           1e-5);
  at::Tensor yRef = at::batch_norm(theirs[0], theirs[1], theirs[2],
                                   a.mean.clone(), a.var.clone(), true, 0.1,
                                   1e-5, false);
  EXPECT_TRUE(at::equal(y, yRef));
  (y * g).sum().backward();
  (yRef * g).sum().backward();
  for (size_t i = 0; i < ours.size(); ++i)
    EXPECT_TRUE(at::equal(ours[i].grad(), theirs[i].grad())) << "input " << i;
}

TEST(BatchNormKernels, AppliesOnlyToContiguousFloat32) {
  Operands a = randomOperands({4, 3, 2, 2});
  EXPECT_TRUE(batchNormKernelApplies(a.x, a.weight, a.bias, a.mean, a.var));
  EXPECT_FALSE(batchNormKernelApplies(a.x.transpose(2, 3), a.weight, a.bias,
                                      a.mean, a.var));
  EXPECT_FALSE(batchNormKernelApplies(a.x.to(at::kDouble), a.weight, a.bias,
                                      a.mean, a.var));
  EXPECT_FALSE(
      batchNormKernelApplies(a.x, at::Tensor(), a.bias, a.mean, a.var));
  // [N, C] and [N, C, 1, 1]: ATen reduces them as channels-last.
  Operands features = randomOperands({8, 3});
  EXPECT_FALSE(batchNormKernelApplies(features.x, a.weight, a.bias, a.mean,
                                      a.var));
  EXPECT_FALSE(batchNormKernelApplies(features.x.view({8, 3, 1, 1}), a.weight,
                                      a.bias, a.mean, a.var));
}
