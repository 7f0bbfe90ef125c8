//===- FiringCountsTest.cpp - Spikes counted by the kernels that fire them -===//
//
// The counts the neuron kernels return equal the spikes they wrote (the
// plain multi-step kernel, the spiking block on NCHW planes and NHWC steps,
// pooled or not, on every ISA this CPU has), and an executor run adds each
// neuron layer under its node's name, whichever kernel ran it. Every layer
// compared fires 5-50 %.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Execution/OnnxLoader.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Kernels/SpikingBlockKernels.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

using namespace snn::runtime;
using snn::test::floatAttr;
using snn::test::intAttr;
using snn::test::intsAttr;
using snn::test::ProgramBuilder;

namespace {

NeuronConfig lif() {
  NeuronConfig c;
  c.kind = NeuronKind::LIF;
  c.tau = 1.7f;
  c.vThreshold = 0.6f;
  return c;
}

int64_t ones(const at::Tensor &spikes) { return spikes.sum().item<double>(); }

void expectNonTrivial(int64_t fired, int64_t elements) {
  double rate = double(fired) / double(elements);
  EXPECT_GE(rate, 0.05);
  EXPECT_LE(rate, 0.5);
}

/// Runs `body` on every ISA this build and CPU have, then restores the best.
template <typename Body> void onEveryIsa(Body body) {
  KernelIsa best = neuronKernelIsa();
  for (KernelIsa isa : {KernelIsa::Baseline, KernelIsa::Avx2})
    if (setNeuronKernelIsa(isa)) {
      SCOPED_TRACE(isa == KernelIsa::Avx2 ? "avx2" : "baseline");
      body();
    }
  setNeuronKernelIsa(best);
}

} // namespace

TEST(FiringCounts, NeuronKernelCountsItsSpikes) {
  at::manual_seed(5);
  at::Tensor x = at::randn({4, 3, 1000}) * 0.6 + 0.2;
  onEveryIsa([&] {
    NeuronForwardResult r = neuronForward(x, lif());
    EXPECT_EQ(r.fired, ones(r.spikes));
    expectNonTrivial(r.fired, x.numel());
    NeuronForwardResult d = neuronForward(x.to(at::kDouble), lif(), 0.0, /*saveH=*/true);
    EXPECT_EQ(d.fired, ones(d.spikes));
  });
}

TEST(FiringCounts, SpikingBlockCountsBeforeThePool) {
  at::manual_seed(6);
  const int64_t channels = 6;
  at::Tensor x = at::randn({3, 4, channels, 9, 8}) * 0.9 + 0.2;
  at::Tensor weight = at::rand({channels}) * 0.5 + 0.6, bias = at::randn({channels}) * 0.2;
  at::Tensor mean = at::randn({channels}) * 0.1, var = at::rand({channels}) + 0.5;
  std::optional<ChannelAffine> affine = batchNormInferenceAffine(weight, bias, mean, var, 1e-5);
  ASSERT_TRUE(affine);
  at::Tensor normed = at::batch_norm(x.flatten(0, 1), weight, bias, mean, var, false, 0.1,
                                     1e-5, true)
                          .view(x.sizes());
  const int64_t want = ones(neuronForward(normed, lif()).spikes);
  expectNonTrivial(want, x.numel());
  at::Tensor nhwc =
      x.flatten(0, 1).contiguous(at::MemoryFormat::ChannelsLast).view(x.sizes());
  onEveryIsa([&] {
    for (const at::Tensor &input : {x, nhwc})
      for (std::optional<MaxPoolWindow> pool :
           {std::optional<MaxPoolWindow>(), std::optional<MaxPoolWindow>({2, 2, 2, 2})}) {
        SpikingBlock block{affine, lif(), 0.0, pool};
        ASSERT_TRUE(spikingBlockApplies(input, block));
        EXPECT_EQ(spikingBlockForward(input, block, /*save=*/false).fired, want);
      }
  });
}

TEST(FiringCounts, AddMergePack) {
  FiringCounts a;
  a.add("conv.2", 3, 10, "neuron");
  a.add("fc.1", 1, 4, "fused block");
  a.add("conv.2", 2, 10, "neuron");
  ASSERT_EQ(a.layers().size(), 2u);
  EXPECT_DOUBLE_EQ(a.layers()[0].rate(), 0.25);
  FiringCounts b;
  b.add("fc.1", 3, 4, "neuron");
  b.add("out", 0, 2, "neuron");
  a.merge(b);
  std::vector<std::pair<std::string, double>> rates = a.rates();
  ASSERT_EQ(rates.size(), 3u);
  EXPECT_EQ(rates[1], std::make_pair(std::string("fc.1"), 0.5));
  EXPECT_EQ(rates[2], std::make_pair(std::string("out"), 0.0));
  std::vector<double> packed(6);
  a.pack(packed.data());
  for (double &v : packed)
    v *= 2; // two ranks that counted alike
  a.unpack(packed.data());
  EXPECT_DOUBLE_EQ(a.layers()[0].spikes, 10);
  EXPECT_DOUBLE_EQ(a.layers()[0].rate(), 0.25);
}

TEST(FiringCounts, ExecutorCountsEveryNeuronLayerByName) {
  at::manual_seed(8);
  const int64_t channels = 4;
  ProgramBuilder b;
  b.addInitializer("bn.weight", at::rand({channels}) + 0.5);
  b.addInitializer("bn.bias", at::randn({channels}) * 0.1);
  b.addInitializer("bn.running_mean", at::randn({channels}) * 0.1);
  b.addInitializer("bn.running_var", at::rand({channels}) + 0.5);
  std::string v = b.addNode("batch_norm",
                            {"input", "bn.weight", "bn.bias", "bn.running_mean",
                             "bn.running_var"},
                            {floatAttr("eps", 1e-5f), floatAttr("momentum", 0.1f)});
  v = b.addNode("if_node", {v}, {floatAttr("v_threshold", 0.5f), floatAttr("v_reset", 0.0f)});
  v = b.addNode("max_pool2d", {v},
                {intsAttr("kernel_size", {2, 2}), intsAttr("stride", {2, 2}),
                 intsAttr("padding", {0, 0}), intsAttr("dilation", {1, 1}),
                 intAttr("ceil_mode", 0)});
  v = b.addNode("flatten", {v});
  b.addNode("lif_node", {v}, {floatAttr("v_threshold", 0.6f), floatAttr("tau", 2.0f)},
            "output");
  Graph graph = parseOnnxProgram(b.serialize(), "test.onnx");
  Executor executor(graph, "input", "output");
  at::Tensor x = at::randn({3, 2, channels, 8, 8}) + 0.3;
  for (bool fusion : {true, false}) {
    SCOPED_TRACE(fusion ? "spiking blocks" : "node by node");
    setSpikingBlocksEnabled(fusion);
    FiringCounts counts;
    RunContext context;
    context.firing = &counts;
    at::Tensor out;
    {
      c10::InferenceMode guard;
      out = executor.run(x, context);
    }
    ASSERT_EQ(counts.layers().size(), 2u);
    const LayerFiring &conv = counts.layers()[0], &fc = counts.layers()[1];
    EXPECT_EQ(conv.layer, graph.nodes[1].name);
    EXPECT_EQ(fc.layer, graph.nodes[4].name);
    EXPECT_EQ(conv.elements, double(x.numel()));
    EXPECT_EQ(fc.elements, double(out.numel()));
    EXPECT_EQ(fc.spikes, double(ones(out)));
    EXPECT_EQ(conv.kernel.rfind(fusion ? "fused block" : "neuron", 0), 0u) << conv.kernel;
    expectNonTrivial(int64_t(conv.spikes), int64_t(conv.elements));
    expectNonTrivial(int64_t(fc.spikes), int64_t(fc.elements));
  }
  setSpikingBlocksEnabled(true);
}
