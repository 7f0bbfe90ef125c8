//===- TimeInvarianceTest.cpp - Inputs that are the same at every step ----===//
//
// Which inputs count as the same at every step, and the conv2d that computes
// one step of them: its output and every gradient equal PyTorch's conv2d of
// the whole [T*N] fold bit for bit (the e2e tests check the spikes after it
// against PyTorch too).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/ConvAutograd.h"
#include "snn/Runtime/Execution/TimeInvariance.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <limits>
#include <optional>

using namespace snn::runtime;

TEST(TimeInvariance, RepeatedStepsAreFoundAndOthersAreNot) {
  at::manual_seed(1);
  at::Tensor step = at::rand({3, 2, 5, 5});
  at::Tensor view = repeatedOverTime(step, 4);
  EXPECT_EQ(view.stride(0), 0);
  EXPECT_TRUE(at::equal(timeInvariantStep(view), step));
  at::Tensor copies = view.contiguous();
  EXPECT_TRUE(at::equal(timeInvariantStep(copies), step));
  at::Tensor changed = copies.clone();
  changed[3][2][1][4][4] += 1.0f;
  EXPECT_FALSE(timeInvariantStep(changed).defined());
  // Equal values with history: each step has its own gradient.
  EXPECT_FALSE(timeInvariantStep(copies.clone().requires_grad_(true)).defined());
  EXPECT_FALSE(timeInvariantStep(copies.narrow(0, 0, 1)).defined()); // T = 1
  {
    c10::NoGradGuard noGrad; // no history is recorded: the steps may be collapsed
    EXPECT_TRUE(timeInvariantStep(copies.clone().requires_grad_(true)).defined());
  }
}

TEST(TimeInvariance, ConvOfOneStepGivesTheFoldsOutputAndGradients) {
  at::manual_seed(4);
  const int64_t steps = 4;
  at::Tensor step = at::rand({5, 2, 9, 7});
  at::Tensor weight = at::randn({6, 2, 3, 3}), bias = at::randn({6});
  Conv2dShape shape{{1, 1}, {1, 1}, {1, 1}, 1};
  at::Tensor upstream = at::randn({steps, 5, 6, 9, 7});
  // The [T*N] fold as PyTorch runs it, in `type`; `transform` maps every operand (abs: the
  // sums' magnitudes, which bound their rounding).
  auto run = [&](std::optional<RepeatedInputBackward> oneStep, at::ScalarType type,
                 at::Tensor (*transform)(const at::Tensor &)) {
    at::Tensor w = transform(weight).to(type).clone().requires_grad_(true);
    at::Tensor b = transform(bias).to(type).clone().requires_grad_(true);
    at::Tensor x = transform(step).to(type), up = transform(upstream).to(type);
    at::Tensor y;
    if (oneStep) {
      y = conv2dOfRepeatedInput(x, steps, w, b, shape, *oneStep);
    } else {
      at::Tensor fold = repeatedOverTime(x, steps).contiguous().flatten(0, 1);
      y = at::conv2d(fold, w, b, shape.stride, shape.padding, shape.dilation, shape.groups)
              .view(up.sizes());
    }
    (y * up).sum().backward();
    return std::vector<at::Tensor>{y.detach().contiguous(), w.grad(), b.grad()};
  };
  auto same = [](const at::Tensor &t) { return t; };
  auto magnitude = [](const at::Tensor &t) { return t.abs(); };
  at::init_num_threads(); // as snn-run does before anything (SpikeBitsTest.cpp)
  std::vector<at::Tensor> fold = run(std::nullopt, at::kFloat, same);
  std::vector<at::Tensor> actual = run(RepeatedInputBackward::SumOfSteps, at::kFloat, same);
  std::vector<at::Tensor> exact = run(std::nullopt, at::kDouble, same);
  std::vector<at::Tensor> sizes = run(std::nullopt, at::kDouble, magnitude);
  EXPECT_TRUE(at::equal(actual[0], fold[0])) << "output"; // per sample the same convolution
  // The fold's backward is PyTorch's node's: bit for bit.
  std::vector<at::Tensor> folded = run(RepeatedInputBackward::Fold, at::kFloat, same);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(at::equal(folded[i], fold[i])) << i;
  // Each gradient is a sum of T*N*H*W products (times the input channels and taps for the
  // weight's); both float32 orders are within n eps of the exact sum's magnitudes.
  const double eps = std::numeric_limits<float>::epsilon();
  const double n = double(steps * 5 * 9 * 7 * 2 * 9);
  for (size_t i : {size_t(1), size_t(2)}) {
    at::Tensor bound = sizes[i] * (n * eps);
    EXPECT_TRUE(((actual[i].to(at::kDouble) - exact[i]).abs() <= bound).all().item<bool>())
        << (i == 1 ? "weight gradient" : "bias gradient");
    EXPECT_TRUE(((fold[i].to(at::kDouble) - exact[i]).abs() <= bound).all().item<bool>());
  }
  EXPECT_FALSE(at::equal(actual[1], at::zeros_like(actual[1])));
}
