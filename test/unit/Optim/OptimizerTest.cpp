//===- OptimizerTest.cpp - Optimizers and LR schedules --------------------===//
//
// Expected values are torch.optim's (PyTorch 1.13, foreach=False) after two
// steps from p = [1, -2, 0.5] with grads [0.1, -0.2, 0.3] then
// [-0.4, 0.5, 0.05], printed with 9 significant digits.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Optim/LrSchedule.h"

#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

using namespace snn::runtime;

namespace {

at::Tensor vec(std::vector<float> values) { return at::tensor(values); }

void expectValues(const at::Tensor &tensor, std::vector<float> expected) {
  ASSERT_EQ(tensor.numel(), int64_t(expected.size()));
  at::Tensor dense = tensor.detach().contiguous();
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_FLOAT_EQ(dense.data_ptr<float>()[i], expected[i]) << "index " << i;
}

/// Two steps of `config` with learning rates lr1 and lr2; returns the
/// parameter after each.
struct TwoSteps {
  at::Tensor param = vec({1.0f, -2.0f, 0.5f});
  std::vector<at::Tensor> after;
  ParamState state;

  TwoSteps(const OptimizerConfig &config, double lr1, double lr2) {
    const std::vector<float> grads[2] = {{0.1f, -0.2f, 0.3f},
                                         {-0.4f, 0.5f, 0.05f}};
    double lrs[2] = {lr1, lr2};
    for (int i = 0; i < 2; ++i) {
      applyUpdate(config, lrs[i], {{param, vec(grads[i]), &state}});
      after.push_back(param.clone());
    }
  }
};

OptimizerConfig config(OptimizerKind kind, double weightDecay,
                       double momentum = 0.0) {
  OptimizerConfig c;
  c.kind = kind;
  c.weightDecay = weightDecay;
  c.momentum = momentum;
  return c;
}

} // namespace

TEST(Optimizer, SgdWithMomentumAndWeightDecay) {
  TwoSteps run(config(OptimizerKind::Sgd, 0.01, 0.9), 0.1, 0.05);
  expectValues(run.after[0], {0.989000022f, -1.97800004f, 0.469500005f});
  expectValues(run.after[1], {1.00355554f, -1.99211109f, 0.453040242f});
  expectValues(run.state.momentumBuffer,
               {-0.291110009f, 0.282220006f, 0.329195023f});
}

TEST(Optimizer, PlainSgdKeepsNoBuffer) {
  TwoSteps run(config(OptimizerKind::Sgd, 0.0), 0.1, 0.05);
  expectValues(run.after[0], {0.99000001f, -1.98000002f, 0.469999999f});
  expectValues(run.after[1], {1.00999999f, -2.00500011f, 0.467500001f});
  EXPECT_FALSE(run.state.momentumBuffer.defined());
}

TEST(Optimizer, AdamWithCoupledWeightDecay) {
  TwoSteps run(config(OptimizerKind::Adam, 0.1), 0.01, 0.02);
  expectValues(run.after[0], {0.99000001f, -1.99000001f, 0.49000001f});
  expectValues(run.after[1], {0.994983792f, -1.98824537f, 0.473052621f});
  EXPECT_EQ(run.state.step, 2);
  expectValues(run.state.expAvg,
               {-0.012099999f, -0.00590000162f, 0.0414000042f});
  expectValues(run.state.expAvgSq,
               {0.000130561006f, 0.000250441022f, 0.000132178538f});
}

TEST(Optimizer, AdamWDecouplesWeightDecay) {
  TwoSteps run(config(OptimizerKind::AdamW, 0.05), 0.01, 0.02);
  expectValues(run.after[0], {0.989499986f, -1.98899996f, 0.489749998f});
  expectValues(run.after[1], {0.999700546f, -1.99585521f, 0.473593712f});
  expectValues(run.state.expAvg,
               {-0.0310000014f, 0.0319999978f, 0.0320000015f});
  expectValues(run.state.expAvgSq,
               {0.000169990017f, 0.000289960008f, 9.24100095e-05f});
}

TEST(Optimizer, SlicesOfOneParameterUpdateLikeTheWhole) {
  // A ZeRO-style split into two views must give the whole-tensor result.
  OptimizerConfig c = config(OptimizerKind::Adam, 0.1);
  at::Tensor whole = vec({1.0f, -2.0f, 0.5f, 3.0f});
  at::Tensor split = whole.clone();
  at::Tensor grad = vec({0.1f, -0.2f, 0.3f, 0.7f});
  ParamState wholeState, left, right;
  for (int i = 0; i < 3; ++i) {
    applyUpdate(c, 0.01, {{whole, grad, &wholeState}});
    applyUpdate(c, 0.01,
                {{split.narrow(0, 0, 1), grad.narrow(0, 0, 1), &left},
                 {split.narrow(0, 1, 3), grad.narrow(0, 1, 3), &right}});
  }
  EXPECT_TRUE(whole.equal(split));
}

TEST(Optimizer, SkipsParametersWithoutGradient) {
  at::Tensor param = vec({1.0f});
  ParamState state;
  applyUpdate(config(OptimizerKind::Adam, 0.0), 0.1, {{param, {}, &state}});
  EXPECT_EQ(param.item<float>(), 1.0f);
  EXPECT_EQ(state.step, 0);
}

TEST(Optimizer, UsesParameterGradients) {
  at::Tensor param = vec({1.0f, 2.0f}).requires_grad_(true);
  param.mutable_grad() = vec({0.5f, -0.5f});
  Optimizer optimizer(config(OptimizerKind::Sgd, 0.0), {"p"}, {param});
  optimizer.step(0.1);
  expectValues(param, {0.95f, 2.05f});
  EXPECT_FALSE(param.grad().requires_grad());
}

TEST(Optimizer, NamesAndDefaults) {
  EXPECT_EQ(parseOptimizerKind("adamw"), OptimizerKind::AdamW);
  EXPECT_STREQ(optimizerKindName(OptimizerKind::Sgd), "sgd");
  EXPECT_THROW(parseOptimizerKind("rmsprop"), Error);
  EXPECT_EQ(defaultWeightDecay(OptimizerKind::AdamW), 0.01);
  EXPECT_EQ(defaultWeightDecay(OptimizerKind::Adam), 0.0);
}

TEST(Optimizer, StateTensorsByTorchName) {
  ParamState state;
  setStateTensor(state, "exp_avg", vec({1.0f}));
  setStateTensor(state, "exp_avg_sq", vec({2.0f}));
  auto named = namedStateTensors(state);
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "exp_avg");
  EXPECT_EQ(named[1].first, "exp_avg_sq");
  EXPECT_THROW(setStateTensor(state, "velocity", vec({1.0f})), Error);
}

TEST(LrSchedule, ConstantStepAndCosine) {
  LrSchedule schedule;
  schedule.lr = 0.1;
  EXPECT_EQ(schedule.at(0), 0.1);
  EXPECT_EQ(schedule.at(1000), 0.1);

  schedule.kind = ScheduleKind::Step;
  schedule.stepSize = 3;
  schedule.gamma = 0.5;
  // Python: 0.1 * 0.5 ** (s // 3), bit for bit.
  EXPECT_EQ(schedule.at(0), 0.10000000000000001);
  EXPECT_EQ(schedule.at(2), 0.10000000000000001);
  EXPECT_EQ(schedule.at(3), 0.050000000000000003);
  EXPECT_EQ(schedule.at(7), 0.025000000000000001);

  schedule.kind = ScheduleKind::Cosine;
  schedule.etaMin = 0.001;
  schedule.totalSteps = 10;
  EXPECT_EQ(schedule.at(0), 0.10000000000000001);
  EXPECT_EQ(schedule.at(3), 0.079595369988477424);
  EXPECT_EQ(schedule.at(10), 0.001);
}

TEST(LrSchedule, Names) {
  EXPECT_EQ(parseScheduleKind("cosine"), ScheduleKind::Cosine);
  EXPECT_STREQ(scheduleKindName(ScheduleKind::Step), "step");
  EXPECT_THROW(parseScheduleKind("linear"), Error);
}
