//===- OpGradTest.cpp - Every layer op's backward vs finite differences ---===//
//
// The executor's op kernels, built from nodes as the artifact holds them and
// run in float64: autograd's gradient of sum(g * op(inputs)) against central
// finite differences for every input element.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/OpRegistry.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>

using namespace snn::runtime;

namespace {

Attribute ints(std::vector<int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::Ints;
  attribute.ints = std::move(values);
  return attribute;
}

Attribute integer(int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::Int;
  attribute.i = value;
  return attribute;
}

Attribute real(float value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::Float;
  attribute.f = value;
  return attribute;
}

/// op(inputs) as the executor runs it.
using Op = std::function<at::Tensor(const std::vector<at::Tensor> &)>;

Op buildOp(const std::string &opType,
           std::map<std::string, Attribute> attributes, bool training) {
  Node node;
  node.name = "op";
  node.opType = opType;
  node.domain = "spikemesh";
  node.attributes = std::move(attributes);
  node.outputs = {"y"};
  Kernel kernel = OpRegistry::builtin().lookup(opType)->build(node);
  RunContext context;
  context.training = training;
  return [kernel, context](const std::vector<at::Tensor> &inputs) {
    return kernel(inputs, context);
  };
}

at::Tensor random(at::IntArrayRef shape) {
  return at::randn(shape, at::kDouble);
}

/// Checks d sum(g * op(inputs)) / d inputs[i] for every i in `wrt` against
/// central differences. `before` runs ahead of every evaluation (reseeding
/// for dropout).
void expectFiniteDifferences(
    const Op &op, const std::vector<at::Tensor> &inputs,
    const std::vector<size_t> &wrt,
    const std::function<void()> &before = [] {}) {
  std::vector<at::Tensor> leaves;
  for (const at::Tensor &input : inputs)
    leaves.push_back(input.clone());
  for (size_t i : wrt)
    leaves[i].requires_grad_(true);
  before();
  at::Tensor out = op(leaves);
  at::manual_seed(99);
  at::Tensor g = at::randn(out.sizes(), at::kDouble);
  (out * g).sum().backward();

  at::NoGradGuard noGrad;
  auto loss = [&](std::vector<at::Tensor> values) {
    before();
    return (op(values) * g).sum().item<double>();
  };
  const double eps = 1e-6;
  for (size_t i : wrt) {
    ASSERT_TRUE(leaves[i].grad().defined()) << "input " << i;
    at::Tensor analytic = leaves[i].grad().contiguous();
    double scale = std::max(1.0, analytic.abs().max().item<double>());
    at::Tensor flat = inputs[i].contiguous().view({-1});
    for (int64_t j = 0; j < flat.numel(); ++j) {
      std::vector<at::Tensor> plus = inputs, minus = inputs;
      plus[i] = inputs[i].clone();
      minus[i] = inputs[i].clone();
      plus[i].view({-1})[j] += eps;
      minus[i].view({-1})[j] -= eps;
      double numeric = (loss(plus) - loss(minus)) / (2 * eps);
      ASSERT_NEAR(analytic.view({-1})[j].item<double>(), numeric, 1e-6 * scale)
          << "input " << i << " element " << j;
    }
  }
}

class OpGrad : public ::testing::Test {
protected:
  void SetUp() override { at::manual_seed(7); }
};

} // namespace

TEST_F(OpGrad, Linear) {
  Op op = buildOp("linear", {}, true);
  expectFiniteDifferences(op, {random({2, 3, 5}), random({4, 5}), random({4})},
                          {0, 1, 2});
  // Without bias, and a [T, N, ..., in] input with an extra dim.
  expectFiniteDifferences(op, {random({2, 2, 3, 5}), random({4, 5})}, {0, 1});
}

TEST_F(OpGrad, Conv2d) {
  Op plain = buildOp("conv2d", {{"padding", ints({1})}}, true);
  expectFiniteDifferences(
      plain, {random({2, 2, 2, 5, 5}), random({3, 2, 3, 3}), random({3})},
      {0, 1, 2});
  Op grouped = buildOp("conv2d",
                       {{"stride", ints({2, 1})},
                        {"padding", ints({1, 0})},
                        {"dilation", ints({1, 2})},
                        {"groups", integer(2)}},
                       true);
  expectFiniteDifferences(
      grouped, {random({2, 1, 4, 5, 6}), random({4, 2, 2, 2})}, {0, 1});
}

TEST_F(OpGrad, BatchNormTrainingUsesBatchStatistics) {
  Op op = buildOp("batch_norm",
                  {{"eps", real(1e-5f)}, {"momentum", real(0.1f)}}, true);
  at::Tensor mean = at::zeros({3}, at::kDouble),
             var = at::ones({3}, at::kDouble);
  // Statistics over T*N*H*W couple every element: the gradient shows it.
  expectFiniteDifferences(
      op, {random({2, 2, 3, 3, 2}), random({3}), random({3}), mean, var},
      {0, 1, 2});
  // [T, N, C] (BatchNorm1d on features).
  expectFiniteDifferences(
      op, {random({3, 2, 3}), random({3}), random({3}), mean, var}, {0, 1, 2});
}

TEST_F(OpGrad, BatchNormEvalUsesRunningStatistics) {
  Op op = buildOp("batch_norm", {}, false);
  at::Tensor mean = random({3}), var = at::rand({3}, at::kDouble) + 0.5;
  expectFiniteDifferences(
      op, {random({2, 2, 3, 2, 2}), random({3}), random({3}), mean, var},
      {0, 1, 2});
}

TEST_F(OpGrad, Pools) {
  // Random values: no ties for max_pool's argmax.
  expectFiniteDifferences(
      buildOp("max_pool2d", {{"kernel_size", ints({2})}}, true),
      {random({2, 2, 2, 4, 6})}, {0});
  expectFiniteDifferences(buildOp("max_pool2d",
                                  {{"kernel_size", ints({3})},
                                   {"stride", ints({2})},
                                   {"padding", ints({1})},
                                   {"ceil_mode", integer(1)}},
                                  true),
                          {random({2, 1, 2, 5, 5})}, {0});
  expectFiniteDifferences(buildOp("avg_pool2d",
                                  {{"kernel_size", ints({3, 2})},
                                   {"stride", ints({2, 1})},
                                   {"padding", ints({1, 1})},
                                   {"ceil_mode", integer(1)},
                                   {"count_include_pad", integer(0)}},
                                  true),
                          {random({2, 2, 1, 5, 4})}, {0});
  expectFiniteDifferences(
      buildOp("adaptive_avg_pool2d", {{"output_size", ints({3, 2})}}, true),
      {random({2, 2, 2, 5, 7})}, {0});
}

TEST_F(OpGrad, ShapeAndElementwiseOps) {
  expectFiniteDifferences(buildOp("flatten", {}, true),
                          {random({2, 3, 2, 2, 2})}, {0});
  expectFiniteDifferences(buildOp("add", {}, true),
                          {random({2, 3, 4}), random({2, 3, 4})}, {0, 1});
  expectFiniteDifferences(buildOp("mul", {}, true),
                          {random({2, 3, 4}), random({2, 3, 4})}, {0, 1});
  expectFiniteDifferences(buildOp("mean_time", {}, true), {random({4, 3, 5})},
                          {0});
}

TEST_F(OpGrad, DropoutWithAFixedSeed) {
  Op op = buildOp("dropout", {{"p", real(0.3f)}}, true);
  auto reseed = [] { at::manual_seed(1234); };
  expectFiniteDifferences(op, {random({3, 4, 5})}, {0}, reseed);
  // The mask is the one F.dropout draws on the [T*N, ...] fold.
  at::Tensor x = random({3, 4, 5});
  reseed();
  at::Tensor got = op({x});
  reseed();
  at::Tensor want = at::dropout(x.view({12, 5}), 0.3, true).view({3, 4, 5});
  EXPECT_TRUE(at::equal(got, want));
  EXPECT_GT((got == 0).sum().item<int64_t>(), 0);
  // Eval: identity.
  at::Tensor same = buildOp("dropout", {{"p", real(0.3f)}}, false)({x});
  EXPECT_TRUE(at::equal(same, x));
}

TEST_F(OpGrad, BiasAddAlongEachAxis) {
  // x + bias broadcast along `axis`: the bias gradient sums over the others.
  expectFiniteDifferences(buildOp("bias_add", {{"axis", integer(2)}}, true),
                          {random({2, 3, 4}), random({4})}, {0, 1});
  expectFiniteDifferences(buildOp("bias_add", {{"axis", integer(1)}}, true),
                          {random({2, 3, 4}), random({3})}, {0, 1});
  expectFiniteDifferences(buildOp("bias_add", {{"axis", integer(-3)}}, true),
                          {random({2, 3, 4}), random({2})}, {0, 1});
}
