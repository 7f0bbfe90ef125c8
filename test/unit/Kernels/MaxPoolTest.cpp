//===- MaxPoolTest.cpp - The runtime's max pool against ATen's ------------===//
//
// Forward values and backward gradients must equal ATen's max_pool2d bit for
// bit, ties (spikes are 0 or 1) and NaNs included; the autograd Function's
// gradient is checked against finite differences in float64.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/MaxPoolAutograd.h"
#include "snn/Runtime/Kernels/MaxPoolKernels.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace snn::runtime;

namespace {

/// Equal including NaNs in the same places.
void expectSame(const at::Tensor &actual, const at::Tensor &expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  at::Tensor nanA = actual.isnan(), nanE = expected.isnan();
  EXPECT_TRUE(at::equal(nanA, nanE));
  EXPECT_TRUE(at::equal(actual.masked_fill(nanA, 0), expected.masked_fill(nanE, 0)));
  // The sign of zero too (the backward adds to +0 as ATen does).
  EXPECT_TRUE(at::equal(actual.signbit(), expected.signbit()));
}

/// Spike-like input: mostly ties, with a few NaNs and negative zeros.
at::Tensor tiedInput(at::IntArrayRef shape, at::ScalarType type) {
  at::Tensor x = (at::rand(shape) < 0.3).to(type);
  x.masked_fill_(at::rand(shape) < 0.02, std::nan(""));
  x.masked_fill_(at::rand(shape) < 0.05, -0.0);
  return x;
}

void expectMatchesATen(at::IntArrayRef shape, MaxPoolWindow window,
                       at::ScalarType type) {
  at::Tensor x = tiedInput(shape, type);
  std::vector<int64_t> kernel{window.kernelH, window.kernelW};
  std::vector<int64_t> stride{window.strideH, window.strideW};
  auto [expected, indices] =
      at::max_pool2d_with_indices(x, kernel, stride, {0, 0}, {1, 1}, false);
  MaxPoolForwardResult result = maxPoolForward(x, window, true);
  expectSame(result.output, expected);
  expectSame(maxPoolForward(x, window, false).output, expected);

  at::Tensor g = at::randn(expected.sizes(), x.options());
  g.masked_fill_(at::rand(g.sizes()) < 0.1, -0.0);
  at::Tensor gradExpected = at::max_pool2d_with_indices_backward(
      g, x, kernel, stride, {0, 0}, {1, 1}, false, indices);
  expectSame(maxPoolBackward(g, result.argmax, x.sizes(), window),
             gradExpected);
}

} // namespace

TEST(MaxPoolKernels, MatchesATenBitForBit) {
  at::manual_seed(3);
  for (at::ScalarType type : {at::kFloat, at::kDouble}) {
    expectMatchesATen({4, 3, 8, 6}, {2, 2, 2, 2}, type);   // tiles the plane
    // Rows wide enough for the 4-window vector loop, plus a scalar tail.
    expectMatchesATen({3, 4, 10, 22}, {2, 2, 2, 2}, type);
    expectMatchesATen({2, 3, 9, 19}, {2, 2, 2, 2}, type);
    expectMatchesATen({2, 2, 9, 20}, {2, 2, 1, 1}, type);  // 2x2 overlapping
    expectMatchesATen({2, 3, 7, 9}, {2, 2, 2, 2}, type);   // odd: drops edges
    expectMatchesATen({2, 2, 9, 8}, {3, 3, 2, 2}, type);   // overlapping
    expectMatchesATen({2, 2, 6, 7}, {2, 3, 1, 3}, type);   // rectangular
    expectMatchesATen({1, 2, 5, 5}, {1, 1, 1, 1}, type);   // identity
  }
}

TEST(MaxPoolKernels, AppliesOnlyWithoutPaddingDilationOrCeil) {
  EXPECT_TRUE(maxPoolKernelApplies({2, 2}, {2, 2}, {0, 0}, {1, 1}, false));
  EXPECT_FALSE(maxPoolKernelApplies({2, 2}, {2, 2}, {1, 0}, {1, 1}, false));
  EXPECT_FALSE(maxPoolKernelApplies({2, 2}, {2, 2}, {0, 0}, {2, 1}, false));
  EXPECT_FALSE(maxPoolKernelApplies({2, 2}, {2, 2}, {0, 0}, {1, 1}, true));
  EXPECT_FALSE(maxPoolKernelApplies({17, 17}, {1, 1}, {0, 0}, {1, 1}, false));
}

TEST(MaxPoolKernels, GradientMatchesFiniteDifferences) {
  at::manual_seed(5);
  MaxPoolWindow window{3, 2, 2, 1};
  at::Tensor x = at::randn({2, 2, 7, 5}, at::kDouble);
  at::Tensor leaf = x.clone().requires_grad_(true);
  at::Tensor out = maxPoolWithGrad(leaf, window);
  at::Tensor g = at::randn(out.sizes(), at::kDouble);
  (out * g).sum().backward();
  at::NoGradGuard noGrad;
  auto loss = [&](const at::Tensor &input) {
    return (maxPoolForward(input, window, false).output * g).sum().item<double>();
  };
  const double eps = 1e-6;
  at::Tensor flat = x.view({-1});
  for (int64_t j = 0; j < flat.numel(); ++j) {
    at::Tensor plus = x.clone(), minus = x.clone();
    plus.view({-1})[j] += eps;
    minus.view({-1})[j] -= eps;
    double numeric = (loss(plus) - loss(minus)) / (2 * eps);
    ASSERT_NEAR(leaf.grad().view({-1})[j].item<double>(), numeric, 1e-6)
        << "element " << j;
  }
}
