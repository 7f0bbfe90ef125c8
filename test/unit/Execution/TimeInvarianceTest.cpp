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
  auto run = [&](bool oneStep) {
    at::Tensor w = weight.clone().requires_grad_(true), b = bias.clone().requires_grad_(true);
    at::Tensor y;
    if (oneStep) {
      y = conv2dOfRepeatedInput(step, steps, w, b, shape);
    } else {
      at::Tensor fold = repeatedOverTime(step, steps).contiguous().flatten(0, 1);
      y = at::conv2d(fold, w, b, shape.stride, shape.padding, shape.dilation, shape.groups)
              .view(upstream.sizes());
    }
    (y * upstream).sum().backward();
    return std::vector<at::Tensor>{y.detach().contiguous(), w.grad(), b.grad()};
  };
  at::init_num_threads(); // as snn-run does before anything (SpikeBitsTest.cpp)
  std::vector<at::Tensor> expected = run(false), actual = run(true);
  EXPECT_TRUE(at::equal(actual[0], expected[0])) << "output";
  EXPECT_TRUE(at::equal(actual[1], expected[1])) << "weight gradient";
  EXPECT_TRUE(at::equal(actual[2], expected[2])) << "bias gradient";
}
