//===- SpikingBlockTest.cpp - BatchNorm + neuron + pool in one pass -------===//
//
// The spiking block against the same layers run one at a time (the runtime's
// BatchNorm, neuron and max-pool kernels, each checked against ATen and the
// PyTorch reference elsewhere): spikes, running statistics and gradients bit
// for bit (PLIF's dL/dw within the rounding of its products, summed in
// another order). Every case fires 5-50 %.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Autograd/BatchNormAutograd.h"
#include "snn/Runtime/Autograd/MaxPoolAutograd.h"
#include "snn/Runtime/Autograd/NeuronAutograd.h"
#include "snn/Runtime/Autograd/SpikingBlockAutograd.h"
#include "snn/Runtime/Execution/ConvolutionLayout.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/OnnxLoader.h"
#include "snn/Runtime/Execution/ParameterStore.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Execution/TimeInvariance.h"
#include "snn/Runtime/Kernels/BatchNormBackwardKernels.h"
#include "snn/Runtime/Kernels/SpikingBlockKernels.h"

#include "snn/Schema/Surrogates.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace snn::runtime;
using snn::test::float32Gamma;

namespace {

struct Case {
  const char *name;
  NeuronConfig neuron;
  bool norm;
  std::optional<MaxPoolWindow> pool;
};

NeuronConfig neuronOf(NeuronKind kind, bool hardReset, Surrogate surrogate, bool decayInput,
                      bool detachReset) {
  NeuronConfig c;
  c.kind = kind;
  c.hardReset = hardReset;
  c.vReset = hardReset ? -0.1f : 0.0f;
  c.surrogate = surrogate;
  const snn::schema::SurrogateSpec &spec = snn::schema::surrogateSpecs()[size_t(surrogate)];
  c.alpha = spec.alpha.defaultValue;
  c.beta = spec.beta.defaultValue;
  c.tau = 1.7f;
  c.decayInput = decayInput;
  c.detachReset = detachReset;
  c.vThreshold = 0.8f;
  return c;
}

std::vector<Case> cases() {
  MaxPoolWindow two{2, 2, 2, 2}, overlapping{3, 2, 2, 1};
  return {
      {"if_bn_pool", neuronOf(NeuronKind::IF, true, Surrogate::ATan, true, false), true, two},
      {"lif_bn_pool_sigmoid", neuronOf(NeuronKind::LIF, true, Surrogate::Sigmoid, true, true),
       true, two},
      {"lif_nodecay_soft_bn", neuronOf(NeuronKind::LIF, false, Surrogate::ATan, false, false),
       true, std::nullopt},
      {"plif_bn_pool", neuronOf(NeuronKind::PLIF, true, Surrogate::ATan, true, true), true, two},
      {"plif_soft_overlapping_pool",
       neuronOf(NeuronKind::PLIF, false, Surrogate::Sigmoid, false, false), false, overlapping},
      {"if_soft_pool_only", neuronOf(NeuronKind::IF, false, Surrogate::Sigmoid, true, false),
       false, overlapping},
      // The surrogates without their own loop (the per-element evaluator).
      {"lif_bn_pool_erf", neuronOf(NeuronKind::LIF, true, Surrogate::Erf, true, false), true,
       two},
      {"plif_soft_bn_s2nn", neuronOf(NeuronKind::PLIF, false, Surrogate::S2NN, false, true),
       true, std::nullopt},
  };
}

struct Operands {
  at::Tensor x, weight, bias, runningMean, runningVar, plif;
};

/// [T, N, C, H, W] = [3, 4, C, 7, 6]: odd sizes leave rows and columns no
/// window covers.
Operands operandsFor(const Case &c, int64_t channels = 5) {
  at::manual_seed(7);
  Operands o;
  o.x = at::randn({3, 4, channels, 7, 6}) * 0.9 + 0.2;
  o.weight = at::rand({channels}) * 0.5 + 0.6;
  o.bias = at::randn({channels}) * 0.2 + 0.25;
  o.runningMean = at::randn({channels}) * 0.1;
  o.runningVar = at::rand({channels}) + 0.5;
  o.plif = at::full({1}, 0.3f);
  return o;
}

BlockOperands blockOperands(const Case &c, const Operands &o) {
  BlockOperands b{std::nullopt, c.neuron, o.plif, c.pool};
  if (c.norm)
    b.norm = BlockNorm{o.weight, o.bias, o.runningMean, o.runningVar, 0.1, 1e-5};
  return b;
}

/// The layers one at a time, as the executor runs them without blocks.
at::Tensor unfused(const Case &c, const Operands &o, bool training) {
  at::Tensor y = o.x;
  if (c.norm) {
    at::Tensor folded = y.flatten(0, 1);
    at::Tensor out =
        training ? batchNormTrainingWithGrad(folded, o.weight, o.bias, o.runningMean,
                                             o.runningVar, 0.1, 1e-5)
                 : at::batch_norm(folded, o.weight, o.bias, o.runningMean, o.runningVar,
                                  false, 0.1, 1e-5, true);
    y = out.view(o.x.sizes());
  }
  at::Tensor spikes = neuronSpikesWithGrad(y, o.plif, c.neuron);
  if (!c.pool)
    return spikes;
  at::Tensor pooled = maxPoolWithGrad(spikes.flatten(0, 1), *c.pool);
  return pooled.view({o.x.size(0), o.x.size(1), pooled.size(1), pooled.size(2), pooled.size(3)});
}

Operands cloneWithGrad(const Operands &o, bool grad) {
  Operands r{o.x.clone(),           o.weight.clone(),     o.bias.clone(),
             o.runningMean.clone(), o.runningVar.clone(), o.plif.clone()};
  for (at::Tensor *t : {&r.x, &r.weight, &r.bias, &r.plif})
    t->requires_grad_(grad);
  return r;
}

/// The share of ones among the neuron's spikes (before pooling).
double firingRate(const Case &c, const Operands &o) {
  Case noPool = c;
  noPool.pool.reset();
  c10::NoGradGuard noGrad;
  Operands copy = cloneWithGrad(o, false);
  return unfused(noPool, copy, /*training=*/true).mean().item<double>();
}

/// Runs `check` for every case on every instruction set this build and CPU
/// have, then restores the best one.
template <typename Check> void forEachIsaAndCase(Check check) {
  KernelIsa best = neuronKernelIsa();
  for (KernelIsa isa : {KernelIsa::Baseline, KernelIsa::Avx2}) {
    if (!setNeuronKernelIsa(isa))
      continue; // this CPU or build has no AVX2 loops
    for (const Case &c : cases()) {
      SCOPED_TRACE(::testing::Message() << c.name << (isa == KernelIsa::Avx2 ? " avx2" : " baseline"));
      check(c);
    }
  }
  setNeuronKernelIsa(best);
}

/// b's gradients are a's: the input's and BatchNorm's bit for bit; PLIF's
/// dL/dk to the roundings of its double sums of float products, which the
/// two sides add in different orders (per plane, per tile or per pixel).
void expectGradientsMatch(const Case &c, const Operands &a, const Operands &b) {
  EXPECT_TRUE(at::equal(b.x.grad(), a.x.grad()));
  if (c.norm) {
    EXPECT_TRUE(at::equal(b.weight.grad(), a.weight.grad()));
    EXPECT_TRUE(at::equal(b.bias.grad(), a.bias.grad()));
  }
  if (c.neuron.kind == NeuronKind::PLIF) {
    double g = a.plif.grad().item<double>();
    EXPECT_NEAR(b.plif.grad().item<double>(), g,
                2 * float32Gamma(1) * a.x.numel() * std::abs(g) + 1e-12);
  }
}

} // namespace

TEST(SpikingBlock, TrainingForwardEqualsTheLayersOneAtATime) {
  forEachIsaAndCase([](const Case &c) {
    Operands base = operandsFor(c);
    double rate = firingRate(c, base);
    EXPECT_GT(rate, 0.05);
    EXPECT_LT(rate, 0.5);
    Operands a = cloneWithGrad(base, true), b = cloneWithGrad(base, true);
    at::Tensor expected = unfused(c, a, /*training=*/true);
    at::Tensor actual = spikingBlockWithGrad(b.x, blockOperands(c, b));
    EXPECT_TRUE(at::equal(actual, expected));
    EXPECT_TRUE(at::equal(b.runningMean, a.runningMean));
    EXPECT_TRUE(at::equal(b.runningVar, a.runningVar));
  });
}

TEST(SpikingBlock, InferenceForwardEqualsTheLayersOneAtATime) {
  c10::InferenceMode guard;
  forEachIsaAndCase([](const Case &c) {
    Operands o = operandsFor(c);
    at::Tensor expected = unfused(c, o, /*training=*/false);
    SpikingBlock block{std::nullopt, c.neuron, 0.0, c.pool};
    if (c.norm) {
      block.affine = batchNormInferenceAffine(o.weight, o.bias, o.runningMean, o.runningVar,
                                              1e-5);
      ASSERT_TRUE(block.affine.has_value()) << "no variant reproduces ATen's eval BatchNorm";
    }
    if (c.neuron.kind == NeuronKind::PLIF)
      block.k = plifDecay(o.plif);
    ASSERT_TRUE(spikingBlockApplies(o.x, block));
    EXPECT_TRUE(at::equal(spikingBlockForward(o.x, block, false).output, expected));
  });
}

TEST(SpikingBlock, GradientsEqualTheLayersOneAtATime) {
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    Operands base = operandsFor(c);
    Operands a = cloneWithGrad(base, true), b = cloneWithGrad(base, true);
    at::Tensor expected = unfused(c, a, /*training=*/true);
    at::Tensor actual = spikingBlockWithGrad(b.x, blockOperands(c, b));
    at::Tensor upstream = at::randn(expected.sizes());
    (expected * upstream).sum().backward();
    int64_t fusedBefore = fusedNormBackwards();
    (actual * upstream).sum().backward();
    // 42 elements per plane: BatchNorm's backward takes its sums in the BPTT
    // pass where ATen's rounding is reproduced here.
    if (c.norm && batchNormBackwardKernelAvailable())
      EXPECT_EQ(fusedNormBackwards(), fusedBefore + 1);
    // The unpooling and BPTT in the same expressions, BatchNorm's backward
    // ATen's arithmetic: bit for bit.
    expectGradientsMatch(c, a, b);
    if (c.neuron.kind == NeuronKind::PLIF)
      EXPECT_NE(a.plif.grad().item<double>(), 0.0);
  }
}

namespace {

/// x with every step a channels-last (NHWC) image batch, as a channels-last
/// conv2d writes it.
at::Tensor channelsLastSteps5d(const at::Tensor &x) {
  return x.flatten(0, 1).contiguous(at::MemoryFormat::ChannelsLast).view(x.sizes());
}

/// Channel counts of the NHWC tests: 13, one whole eight and a tail of five
/// in the statistics and a pixel shorter than the block kernels' chunk
/// (several pixels a chunk, the last one partial); 70, a pixel longer (its
/// channels split across chunks).
constexpr int64_t kChannelsLastChannels[] = {13, 70};

/// The block on channels-last steps gives the planes' spikes, statistics and
/// inference output bit for bit.
void expectChannelsLastForwardMatches(const Case &c, int64_t channels) {
  Operands base = operandsFor(c, channels);
  double rate = firingRate(c, base);
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.5);
  Operands a = cloneWithGrad(base, true), b = cloneWithGrad(base, true);
  at::Tensor planes = spikingBlockWithGrad(a.x, blockOperands(c, a));
  at::Tensor nhwc = channelsLastSteps5d(b.x);
  ASSERT_TRUE(channelsLastSteps(nhwc));
  at::Tensor pixels = spikingBlockWithGrad(nhwc, blockOperands(c, b));
  EXPECT_TRUE(channelsLastSteps(pixels));
  EXPECT_TRUE(at::equal(pixels, planes));
  EXPECT_TRUE(at::equal(b.runningMean, a.runningMean));
  EXPECT_TRUE(at::equal(b.runningVar, a.runningVar));
  // Inference: the same through the eval affine.
  c10::NoGradGuard noGrad;
  SpikingBlock block{std::nullopt, c.neuron, 0.0, c.pool};
  if (c.norm)
    block.affine = batchNormInferenceAffine(base.weight, base.bias, base.runningMean,
                                            base.runningVar, 1e-5);
  if (c.neuron.kind == NeuronKind::PLIF)
    block.k = plifDecay(base.plif);
  EXPECT_TRUE(at::equal(spikingBlockForward(channelsLastSteps5d(base.x), block, false).output,
                        spikingBlockForward(base.x, block, false).output));
}

/// ... and the planes' gradients.
void expectChannelsLastGradientsMatch(const Case &c, int64_t channels) {
  Operands base = operandsFor(c, channels);
  Operands a = cloneWithGrad(base, true), b = cloneWithGrad(base, true);
  at::Tensor planes = spikingBlockWithGrad(a.x, blockOperands(c, a));
  at::Tensor pixels = spikingBlockWithGrad(channelsLastSteps5d(b.x), blockOperands(c, b));
  at::Tensor upstream = at::randn(planes.sizes());
  (planes * upstream).sum().backward();
  (pixels * upstream).sum().backward();
  at::Tensor want = a.x.grad(), got = b.x.grad();
  ASSERT_TRUE(got.defined());
  EXPECT_GT(want.abs().max().item<double>(), 0.0);
  // Unpooling and BPTT: the same expressions in the same order per element;
  // BatchNorm's sums in ATen's NCHW order over NHWC pixels.
  expectGradientsMatch(c, a, b);
}

} // namespace

TEST(SpikingBlock, ChannelsLastStepsGiveThePlanesSpikesAndStatistics) {
  forEachIsaAndCase([](const Case &c) {
    for (int64_t channels : kChannelsLastChannels) {
      SCOPED_TRACE(channels);
      expectChannelsLastForwardMatches(c, channels);
    }
  });
}

TEST(SpikingBlock, ChannelsLastGradientsMatchThePlanes) {
  for (const Case &c : cases())
    for (int64_t channels : kChannelsLastChannels) {
      SCOPED_TRACE(::testing::Message() << c.name << " " << channels);
      expectChannelsLastGradientsMatch(c, channels);
    }
}

namespace {

/// The block on one step repeated over T, given that step (repeatSteps), against
/// the block on the repeated view with autograd's expand summing the steps'
/// gradients: the same spikes and statistics; the step's gradient is the same
/// sum in another order (the steps' BPTT gradients added before BatchNorm's
/// backward instead of after).
void expectRepeatedStepGradientsMatch(const Case &c, bool channelsLast) {
  Operands base = operandsFor(c, 13);
  const int64_t steps = base.x.size(0);
  base.x = base.x.select(0, 0).contiguous(channelsLast ? at::MemoryFormat::ChannelsLast
                                                       : at::MemoryFormat::Contiguous);
  Operands a = cloneWithGrad(base, true), b = cloneWithGrad(base, true);
  at::Tensor viewA = repeatedOverTime(a.x, steps);
  at::Tensor perStep; // the view's gradient: each step's dL/dx
  viewA.register_hook([&](const at::Tensor &g) { perStep = g.clone(); });
  at::Tensor want = spikingBlockWithGrad(viewA, blockOperands(c, a));
  at::Tensor got = spikingBlockWithGrad(b.x, blockOperands(c, b), steps);
  ASSERT_TRUE(at::equal(got, want));
  EXPECT_TRUE(at::equal(b.runningMean, a.runningMean));
  double rate = firingRate(c, Operands{repeatedOverTime(base.x, steps).contiguous(), base.weight,
                                       base.bias, base.runningMean.clone(),
                                       base.runningVar.clone(), base.plif});
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.5);
  at::Tensor upstream = at::randn(want.sizes());
  (want * upstream).sum().backward();
  (got * upstream).sum().backward();
  ASSERT_TRUE(perStep.defined() && b.x.grad().defined());
  EXPECT_EQ(b.x.grad().sizes(), base.x.sizes());
  // BatchNorm's backward sums over the n = T*N*H*W elements of a channel and
  // the steps add up T terms: each side is within gamma(n) of the exact
  // value for each of its three terms, bounded by the steps' |dL/dx| summed.
  const int64_t n = steps * base.x.numel() / base.x.size(1);
  at::Tensor magnitude = perStep.abs().to(at::kDouble).sum(0);
  double tolerance = 3 * 2 * float32Gamma(n) * magnitude.max().item<double>();
  EXPECT_LE((b.x.grad().to(at::kDouble) - a.x.grad().to(at::kDouble)).abs().max().item<double>(),
            tolerance);
  EXPECT_GT(a.x.grad().abs().max().item<double>(), 100 * tolerance);
  if (!c.norm)
    return;
  // Its weight's and bias's gradients: sums of the same n terms (dL/dy and
  // dL/dy * x-hat), each |dL/dy| about |dL/dx| / (weight * invstd).
  at::Tensor step = base.x.to(at::kDouble);
  at::Tensor invstd = (step.var({0, 2, 3}, /*unbiased=*/false) + 1e-5).rsqrt();
  at::Tensor xhat = ((step - step.mean({0, 2, 3}, true)) * invstd.view({1, -1, 1, 1})).abs();
  at::Tensor dy = magnitude / (base.weight.to(at::kDouble) * invstd).view({1, -1, 1, 1});
  for (auto [mine, theirs, scale] :
       {std::tuple{b.bias.grad(), a.bias.grad(), dy.sum({0, 2, 3})},
        std::tuple{b.weight.grad(), a.weight.grad(), (dy * (xhat + 1)).sum({0, 2, 3})}}) {
    at::Tensor diff = (mine.to(at::kDouble) - theirs.to(at::kDouble)).abs();
    EXPECT_TRUE((diff <= scale * (2 * 2 * float32Gamma(n))).all().item<bool>())
        << diff.max().item<double>();
  }
}

} // namespace

TEST(SpikingBlock, ARepeatedStepGetsTheStepsSummedGradient) {
  forEachIsaAndCase([](const Case &c) {
    for (bool channelsLast : {false, true}) {
      SCOPED_TRACE(channelsLast ? "nhwc" : "nchw");
      expectRepeatedStepGradientsMatch(c, channelsLast);
    }
  });
}

TEST(SpikingBlock, AOneSampleMicrobatchOnChannelsLastStepsRunsAsOneBlock) {
  // A pipeline's one-sample microbatch: the convolution writes [T, 1, C, H, W]
  // channels-last with N's stride the channel count's, not T's over N. The
  // block takes it (it ran node by node before, keeping BatchNorm's input and
  // the neuron's H instead of the block's one input) and gives the planes'.
  Case c = cases()[1]; // LIF, BatchNorm, 2x2 pooling
  Operands base = operandsFor(c, 13);
  Operands a = cloneWithGrad(base, true), b = cloneWithGrad(base, true);
  at::Tensor planar = a.x.narrow(1, 0, 1).contiguous();
  int64_t C = 13, H = 7, W = 6;
  at::Tensor nhwc = at::empty_strided({3, 1, C, H, W}, {C * H * W, C, 1, W * C, C});
  nhwc.copy_(b.x.detach().narrow(1, 0, 1));
  nhwc.requires_grad_(true);
  ASSERT_TRUE(channelsLastSteps(nhwc));
  SpikingBlock shape{std::nullopt, c.neuron, 0.0, c.pool};
  ASSERT_TRUE(spikingBlockApplies(nhwc, shape));
  at::Tensor want = spikingBlockWithGrad(planar, blockOperands(c, a));
  at::Tensor got = spikingBlockWithGrad(nhwc, blockOperands(c, b));
  double rate = want.mean().item<double>();
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.5);
  EXPECT_TRUE(at::equal(got, want));
}

TEST(SpikingBlock, RefusesWhatItDoesNotTake) {
  SpikingBlock block{std::nullopt, NeuronConfig{}, 0.0, MaxPoolWindow{2, 2, 2, 2}};
  EXPECT_TRUE(spikingBlockApplies(at::zeros({2, 1, 3, 4, 4}), block));
  EXPECT_FALSE(spikingBlockApplies(at::zeros({2, 1, 3, 16}), block));        // not 5-D
  EXPECT_FALSE(spikingBlockApplies(at::zeros({2, 1, 3, 4, 4}, at::kDouble), block));
  EXPECT_FALSE(spikingBlockApplies(at::zeros({2, 1, 4, 4, 3}).transpose(2, 4), block));
  EXPECT_FALSE(spikingBlockApplies(at::zeros({2, 1, 3, 1, 4}), block));      // window > plane
}

namespace {

/// conv -> batch_norm -> lif -> max_pool2d -> flatten: one block in the middle.
snn::test::ProgramBuilder blockProgram() {
  using namespace snn::test;
  at::manual_seed(3);
  ProgramBuilder b;
  b.addInitializer("w", at::randn({4, 2, 3, 3}) * 0.4);
  b.addInitializer("gamma", at::rand({4}) + 0.5);
  b.addInitializer("beta", at::randn({4}) * 0.2 + 0.3);
  b.addInitializer("rm", at::zeros({4}));
  b.addInitializer("rv", at::ones({4}));
  std::string conv = b.addNode("conv2d", {"input", "w"}, {intsAttr("padding", {1, 1})});
  std::string bn = b.addNode("batch_norm", {conv, "gamma", "beta", "rm", "rv"});
  std::string lif = b.addNode("lif_node", {bn}, {floatAttr("tau", 2.0f)});
  std::string pool = b.addNode("max_pool2d", {lif}, {intsAttr("kernel_size", {2, 2})});
  b.addNode("flatten", {pool}, {}, "output");
  return b;
}

} // namespace

TEST(SpikingBlock, ExecutorRunsTheBlockAndFallsBackWhenTurnedOff) {
  Graph graph = parseOnnxProgram(blockProgram().serialize(), "block.onnx");
  Executor executor(graph, "input", "output");
  at::Tensor x = at::rand({4, 3, 2, 8, 8});
  // Bit for bit takes the same convolution: NCHW in both runs.
  setChannelsLastConvolutionEnabled(false);
  auto runOnce = [&](bool fusion) {
    setSpikingBlocksEnabled(fusion);
    at::Tensor input = x.clone().requires_grad_(true);
    at::Tensor out = executor.run(input, /*training=*/true);
    (out * at::linspace(-1, 1, out.numel()).view(out.sizes())).sum().backward();
    return std::make_pair(out.detach(), input.grad());
  };
  SpikingBlockCounts before = spikingBlockCounts();
  auto [fused, fusedGrad] = runOnce(true);
  SpikingBlockCounts middle = spikingBlockCounts();
  auto [plain, plainGrad] = runOnce(false);
  SpikingBlockCounts after = spikingBlockCounts();
  setSpikingBlocksEnabled(true);
  EXPECT_EQ(middle.fused - before.fused, 1);
  EXPECT_EQ(after.fused, middle.fused);
  EXPECT_EQ(after.unfused - middle.unfused, 1);
  EXPECT_TRUE(at::equal(fused, plain));
  double rate = fused.mean().item<double>();
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.9); // pooled: a window fires if any of its four does
  EXPECT_TRUE(at::equal(fusedGrad, plainGrad));
  EXPECT_GT(fusedGrad.abs().max().item<double>(), 0.0);
  // Channels-last: the convolution writes NHWC, the block runs on it.
  setChannelsLastConvolutionEnabled(true);
  int64_t convs = channelsLastConvolutions();
  SpikingBlockCounts nhwcBefore = spikingBlockCounts();
  auto [nhwc, nhwcGrad] = runOnce(true);
  EXPECT_EQ(spikingBlockCounts().fused - nhwcBefore.fused, 1);
  EXPECT_EQ(channelsLastConvolutions() - convs, 1);
  // The convolution's own sums round in another order: the spikes may
  // differ only where a potential lies within rounding of the threshold.
  EXPECT_LE((nhwc - plain).abs().sum().item<double>(), 0.02 * double(plain.numel()));
  EXPECT_GT(nhwcGrad.abs().max().item<double>(), 0.0);
  // ... and node by node on the same NHWC convolution: bit for bit again
  // (the BatchNorm node's statistics are the block's).
  auto [nhwcPlain, nhwcPlainGrad] = runOnce(false);
  setSpikingBlocksEnabled(true);
  EXPECT_TRUE(at::equal(nhwcPlain, nhwc));
  EXPECT_TRUE(at::equal(nhwcPlainGrad, nhwcGrad));
}

namespace {

/// The first autograd node from `output` back whose name contains `name`, or null.
torch::autograd::Node *findNode(const at::Tensor &output, const std::string &name) {
  std::vector<torch::autograd::Node *> todo{output.grad_fn().get()};
  std::set<torch::autograd::Node *> seen;
  while (!todo.empty()) {
    torch::autograd::Node *node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second)
      continue;
    if (node->name().find(name) != std::string::npos)
      return node;
    for (const torch::autograd::Edge &edge : node->next_edges())
      todo.push_back(edge.function.get());
  }
  return nullptr;
}

} // namespace

// A directly encoded input (one image at every step): the convolution runs one
// step and the block takes that step, so the backward hands the convolution
// the steps' summed gradient and never holds one of T steps.
TEST(SpikingBlock, ABlockAfterAConvolutionOfARepeatedInputTakesItsStep) {
  Graph graph = parseOnnxProgram(blockProgram().serialize(), "block.onnx");
  std::vector<ParameterStore::Entry> entries;
  for (const char *name : {"w", "gamma", "beta"})
    entries.push_back({name, ParameterKind::Parameter,
                       graph.initializers.at(name).clone().requires_grad_()});
  ParameterStore store(std::move(entries));
  Executor executor(graph, "input", "output", &store);
  at::Tensor x = repeatedOverTime(at::rand({3, 2, 8, 8}), 4);
  setChannelsLastConvolutionEnabled(true);
  at::Tensor out = executor.run(x, /*training=*/true);
  torch::autograd::Node *block = findNode(out, "SpikingBlock");
  ASSERT_NE(block, nullptr);
  ASSERT_GE(block->num_inputs(), 1u);
  std::string reads = block->next_edges()[0].function->name();
  EXPECT_NE(reads.find("Convolution"), std::string::npos) << reads;
  double rate = out.mean().item<double>();
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.9);
  out.sum().backward();
  EXPECT_GT(store.parameters()[0].grad().abs().max().item<double>(), 0.0);
}

