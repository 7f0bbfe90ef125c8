//===- RecurrentNeuronTest.cpp - A described neuron fed back its output ----===//
//
// recurrentNeuronSteps against (a) the fused evaluator on the same description where the
// feedback is zero, (b) a CubaLIF with its feedback written here as per-step ATen ops, and
// (c) for the gradients of the feedback weight and bias, central differences in float64
// through a neuron that does not spike (the membrane is its output).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/RecurrentNeuronAutograd.h"
#include "snn/Schema/NeuronProgram.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

using namespace snn::runtime;
using snn::schema::NeuronDescription;
using snn::schema::ResetRule;

namespace {

GenericNeuron compile(const NeuronDescription &d) {
  snn::schema::NeuronCompileResult r = snn::schema::compileNeuron(d);
  EXPECT_EQ(r.error, "");
  return GenericNeuron(r.program, d.stateInit, Surrogate::Sigmoid, 4.0f, 0.0f);
}

/// NIR's CubaLIF stepped by dt as the importer writes it.
NeuronDescription cubaLif() {
  NeuronDescription d;
  d.states = {"v", "i"};
  d.stateInit = {0.0, 0.0};
  d.constants = {{"tau_syn", 2.5}, {"w_in", 1.5},        {"tau", 4.0},    {"r", 2.0},
                 {"v_leak", 0.0},  {"v_threshold", 1.0}, {"v_reset", 0.0}};
  d.charge = {"i = i + (w_in * x - i) / tau_syn", "h = v + (r * i - (v - v_leak)) / tau"};
  d.fire = "h - v_threshold";
  d.reset = ResetRule::Hard;
  return d;
}

at::Tensor normal(at::IntArrayRef shape, uint64_t seed, double scale,
                  at::ScalarType dtype = at::kFloat) {
  at::manual_seed(seed);
  return (at::randn(shape, at::kDouble) * scale).to(dtype);
}

TEST(RecurrentNeuron, ZeroFeedbackIsTheFusedNeuron) {
  GenericNeuron neuron = compile(cubaLif());
  at::Tensor x = normal({12, 3, 5}, 1, 1.5);
  RecurrentNeuronResult got =
      recurrentNeuronSteps(neuron, x, at::zeros({5, 5}), at::zeros({5}), {});
  GenericNeuronForwardResult want = genericNeuronForward(neuron, x, {}, false);
  double rate = want.output.mean().item<double>();
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.5);
  EXPECT_TRUE(at::equal(got.output, want.output));
  EXPECT_EQ(got.fired, want.fired);
}

TEST(RecurrentNeuron, FeedbackIsTheStepBeforesSpikes) {
  GenericNeuron neuron = compile(cubaLif());
  at::Tensor x = normal({12, 3, 5}, 2, 1.5), w = normal({5, 5}, 3, 0.8), b = normal({5}, 4, 0.2);
  RecurrentNeuronResult got = recurrentNeuronSteps(neuron, x, w, b, {});
  // The same steps written out: s[-1] = 0, the input of step t adds s[t-1] W^T + b.
  at::Tensor v = at::zeros({3, 5}), i = at::zeros({3, 5}), s = at::zeros({3, 5});
  std::vector<at::Tensor> want;
  for (int64_t t = 0; t < 12; ++t) {
    at::Tensor in = x[t] + at::linear(s, w, b);
    i = i + (in * 1.5 - i) / 2.5;
    at::Tensor h = v + (i * 2.0 - (v - 0.0)) / 4.0;
    s = (h - 1.0).ge(0).to(at::kFloat);
    v = s * 0.0 + (1 - s) * h;
    want.push_back(s);
  }
  at::Tensor spikes = at::stack(want);
  double rate = spikes.mean().item<double>();
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.5);
  EXPECT_TRUE(at::equal(got.output, spikes));
  EXPECT_EQ(got.fired, spikes.sum().item<int64_t>());
  // The feedback changes the spikes: without it they differ.
  EXPECT_FALSE(at::equal(
      recurrentNeuronSteps(neuron, x, at::zeros_like(w), at::zeros_like(b), {}).output, spikes));
}

TEST(RecurrentNeuron, GradientsAreBackpropagationThroughTheFeedback) {
  // A leaky integrator read out as its potential: smooth, so differences check autograd.
  NeuronDescription d;
  d.states = {"v"};
  d.stateInit = {0.0};
  d.operands = {"k"};
  d.operandPerStep = {false};
  d.charge = {"h = v + (tanh(x) * k - v) / 3"};
  d.reset = ResetRule::None;
  d.output = "h";
  GenericNeuron neuron = compile(d);
  at::Tensor x = normal({6, 2, 4}, 5, 1.0, at::kDouble);
  at::Tensor w = normal({4, 4}, 6, 0.5, at::kDouble).requires_grad_();
  at::Tensor b = normal({4}, 7, 0.3, at::kDouble).requires_grad_();
  at::Tensor k = (at::ones({4}, at::kDouble) * 1.2).requires_grad_();
  at::Tensor probe = normal({6, 2, 4}, 8, 1.0, at::kDouble);
  auto loss = [&](const at::Tensor &wv, const at::Tensor &bv, const at::Tensor &kv) {
    return (recurrentNeuronSteps(neuron, x, wv, bv, {kv}).output * probe).sum();
  };
  std::vector<at::Tensor> grads = torch::autograd::grad({loss(w, b, k)}, {w, b, k});
  at::NoGradGuard noGrad;
  for (auto [param, grad] : {std::pair{w, grads[0]}, {b, grads[1]}, {k, grads[2]}}) {
    at::Tensor flat = param.detach().reshape({-1});
    for (int64_t e = 0; e < flat.numel(); ++e) {
      double h = 1e-6, keep = flat[e].item<double>();
      flat[e] = keep + h;
      double up = loss(w.detach(), b.detach(), k.detach()).item<double>();
      flat[e] = keep - h;
      double down = loss(w.detach(), b.detach(), k.detach()).item<double>();
      flat[e] = keep;
      EXPECT_NEAR(grad.reshape({-1})[e].item<double>(), (up - down) / (2 * h), 1e-7)
          << "element " << e;
    }
  }
  EXPECT_GT(grads[0].abs().max().item<double>(), 1e-3); // the feedback weight gets a gradient
}

TEST(RecurrentNeuron, ShapesThatDoNotFitAreOneLine) {
  GenericNeuron neuron = compile(cubaLif());
  at::Tensor x = at::zeros({4, 2, 3});
  try {
    recurrentNeuronSteps(neuron, x, at::zeros({3, 2}), at::zeros({3}), {});
    FAIL() << "no error";
  } catch (const std::exception &e) {
    EXPECT_EQ(std::string(e.what()),
              "the recurrent weight [3, 2] and bias [3] do not fit the input [4, 2, 3]");
  }
  EXPECT_THROW(
      recurrentNeuronSteps(neuron, at::zeros({4, 2, 3, 1}), at::zeros({3, 3}), at::zeros({3}), {}),
      std::exception);
}

} // namespace
