//===- SplitBackwardTest.cpp - B and W of a zero-bubble backward ----------===//
//
// With RunContext::weightGrads, linear and conv2d compute only their input's
// gradient in backward and queue their weight and bias gradients; running
// the queues later (microbatch by microbatch, as the schedule's W's do)
// gives the parameters the same gradients as autograd's unsplit backward.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Autograd/WeightGradQueue.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/OnnxLoader.h"
#include "snn/Runtime/Execution/ParameterStore.h"
#include "snn/Runtime/Optim/Loss.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

using namespace snn::runtime;
using snn::test::floatAttr;
using snn::test::intAttr;
using snn::test::intsAttr;
using snn::test::ProgramBuilder;

namespace {

struct ThreadCount {
  explicit ThreadCount(int n) : saved(at::get_num_threads()) { at::set_num_threads(n); }
  ~ThreadCount() { at::set_num_threads(saved); }
  int saved;
};

/// conv (bias) -> lif -> flatten -> linear (bias) -> lif -> linear -> mean_time
/// over [T, N, 2, 6, 6]; `hidden` sizes the middle layer.
Graph convNet(int64_t hidden) {
  at::manual_seed(7);
  ProgramBuilder b;
  b.addInitializer("conv.weight", at::rand({4, 2, 3, 3}) * 0.3);
  b.addInitializer("conv.bias", at::rand({4}) * 0.3);
  b.addInitializer("fc1.weight", at::rand({hidden, 4 * 36}) * 0.07 - 0.01);
  b.addInitializer("fc1.bias", at::rand({hidden}) * 0.3);
  b.addInitializer("fc2.weight", at::randn({5, hidden}) * 0.3 + 0.05);
  std::vector<onnx::AttributeProto> lif = {floatAttr("v_threshold", 1.0f),
                                           floatAttr("v_reset", 0.0f), floatAttr("tau", 2.0f)};
  std::string v = b.addNode("conv2d", {"input", "conv.weight", "conv.bias"},
                            {intsAttr("padding", {1, 1})});
  v = b.addNode("lif_node", {v}, lif);
  v = b.addNode("flatten", {v});
  v = b.addNode("linear", {v, "fc1.weight", "fc1.bias"});
  v = b.addNode("lif_node", {v}, lif);
  v = b.addNode("linear", {v, "fc2.weight"});
  b.addNode("mean_time", {v}, {}, "output");
  return parseOnnxProgram(b.serialize(), "net.onnx");
}

Manifest manifestOf(const Graph &graph) {
  Manifest manifest;
  for (const auto &[name, value] : graph.initializers)
    manifest.parameters.push_back({name, value.sizes().vec()});
  return manifest;
}

/// The spike rate of every neuron node.
class RateObserver : public ExecutionObserver {
public:
  explicit RateObserver(const Graph &graph) : graph(graph) {}
  void beforeStep(size_t) override {}
  void afterStep(size_t step, const at::Tensor &output) override {
    if (graph.nodes[step].opType == "lif_node")
      rates.push_back(output.mean().item<double>());
  }
  const Graph &graph;
  std::vector<double> rates;
};

/// Forward and backward of each microbatch; `queues` (one per microbatch)
/// splits the backward and is run after all of them.
std::map<std::string, at::Tensor> gradients(const Graph &graph,
                                            const std::vector<at::Tensor> &inputs,
                                            bool split, bool inputGrad,
                                            size_t *queued = nullptr) {
  ParameterStore store(manifestOf(graph), graph);
  Executor exec(graph, "input", "output", &store);
  std::vector<WeightGradQueue> queues(inputs.size());
  RateObserver rates(graph);
  for (size_t m = 0; m < inputs.size(); ++m) {
    RunContext context;
    context.training = true;
    context.weightGrads = split ? &queues[m] : nullptr;
    // A stage's first layer gets an input without gradient, the others one
    // with: the weights' gradients wait either way.
    at::Tensor x = inputs[m].clone().requires_grad_(inputGrad);
    at::Tensor labels = at::arange(x.size(1)).remainder(5);
    at::Tensor loss =
        computeLoss(exec.run(x, context, &rates), labels, LossKind::CrossEntropy);
    (loss / double(inputs.size())).backward();
    // B alone leaves the linear and conv weights without gradients.
    if (split)
      EXPECT_FALSE(store.get("fc2.weight").grad().defined());
  }
  for (double rate : rates.rates) { // the neurons fire, so gradients flow
    EXPECT_GE(rate, 0.05) << "rates " << ::testing::PrintToString(rates.rates);
    EXPECT_LE(rate, 0.5);
  }
  if (queued)
    *queued = queues[0].size();
  for (WeightGradQueue &queue : queues)
    queue.run();
  std::map<std::string, at::Tensor> grads;
  for (const auto &entry : store.entries())
    grads[entry.name] = entry.tensor.grad();
  return grads;
}

void expectSameGradients(int64_t hidden, int64_t batch, bool inputGrad) {
  snn::test::DenseKernels dense; // a split backward defers dense GEMMs only
  Graph graph = convNet(hidden);
  at::manual_seed(11);
  std::vector<at::Tensor> inputs = {at::rand({4, batch, 2, 6, 6}),
                                    at::rand({4, batch, 2, 6, 6})};
  size_t queued = 0;
  auto split = gradients(graph, inputs, true, inputGrad, &queued);
  auto whole = gradients(graph, inputs, false, inputGrad);
  EXPECT_EQ(queued, 3u); // conv2d, fc1, fc2
  for (const auto &[name, grad] : whole) {
    ASSERT_TRUE(split[name].defined()) << name;
    EXPECT_GT(grad.abs().max().item<float>(), 0.0f) << name;
    // The same kernels on the same tensors, accumulated in the same order.
    EXPECT_TRUE(split[name].equal(grad))
        << name << ": max difference " << (split[name] - grad).abs().max().item<float>();
  }
}

} // namespace

TEST(SplitBackward, WeightGradientsQueuedForLaterEqualAutogradsOnOneThread) {
  ThreadCount threads(1);
  expectSameGradients(16, 3, true);
  expectSameGradients(16, 3, false);
}

TEST(SplitBackward, WeightGradientsQueuedForLaterEqualAutogradsWithSplitGemms) {
  // Large enough that fc1's GEMMs split over two threads (LinearAutograd.h).
  ThreadCount threads(2);
  expectSameGradients(512, 32, true);
}

TEST(SplitBackward, AccumulateGradFollowsAutograd) {
  at::Tensor p = at::zeros({3}).requires_grad_(true);
  at::Tensor first = at::ones({3});
  accumulateGrad(p, first);
  EXPECT_TRUE(p.grad().is_same(first)); // taken as is, like AccumulateGrad
  accumulateGrad(p, at::full({3}, 2.0));
  EXPECT_TRUE(p.grad().equal(at::full({3}, 3.0)));
}
