//===- LossTest.cpp - Losses and accuracy on the firing rate --------------===//
//
// Expected values: F.mse_loss(rate, F.one_hot(y, 3).float()) and
// F.cross_entropy(rate, y) in PyTorch 1.13.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

using namespace snn::runtime;

namespace {

at::Tensor rates() {
  return at::tensor({0.25f, 0.75f, 0.0f, 0.5f, 0.5f, 0.0f}).reshape({2, 3});
}

at::Tensor labels() { return at::tensor({int64_t(1), int64_t(2)}); }

} // namespace

TEST(Loss, MseAgainstOneHot) {
  EXPECT_FLOAT_EQ(computeLoss(rates(), labels(), LossKind::Mse).item<float>(),
                  0.270833343f);
}

TEST(Loss, CrossEntropyOnRates) {
  EXPECT_FLOAT_EQ(
      computeLoss(rates(), labels(), LossKind::CrossEntropy).item<float>(),
      1.09492886f);
}

TEST(Loss, FirstMaximumWinsTies) {
  // Row 1 ties classes 0 and 1: argmax picks 0, which is not label 2.
  EXPECT_EQ(countCorrect(rates(), labels()), 1);
  EXPECT_EQ(countCorrect(rates(), at::tensor({int64_t(1), int64_t(0)})), 2);
}

TEST(Loss, FiringRateIsTheMeanOverTime) {
  at::Tensor output =
      at::tensor({1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 1.0f})
          .reshape({2, 2, 2}); // [T=2, N=2, classes=2]
  at::Tensor rate = firingRate(output, true);
  EXPECT_TRUE(rate.equal(at::tensor({1.0f, 0.5f, 0.0f, 0.5f}).reshape({2, 2})));
  EXPECT_TRUE(firingRate(rate, false).equal(rate));
  EXPECT_THROW(firingRate(output, false), Error);
}

TEST(Loss, GradientFlowsToTheRate) {
  at::Tensor rate = rates().requires_grad_(true);
  computeLoss(rate, labels(), LossKind::Mse).backward();
  // d/drate mean((rate - onehot)^2) = 2 (rate - onehot) / 6
  EXPECT_FLOAT_EQ(rate.grad()[0][1].item<float>(), 2.0f * (0.75f - 1.0f) / 6);
}

TEST(Loss, Names) {
  EXPECT_EQ(parseLossKind("ce"), LossKind::CrossEntropy);
  EXPECT_STREQ(lossKindName(LossKind::Mse), "mse");
  EXPECT_THROW(parseLossKind("nll"), Error);
}
