//===- NeuronKernelsTest.cpp - Fused neurons vs references ----------------===//

#include "NeuronReference.h"

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace snn::runtime;
using snn::test::allNeuronConfigs;
using snn::test::describe;

namespace {

class NeuronKernels : public ::testing::TestWithParam<NeuronConfig> {};

/// Inputs in [-1, 2): many spikes, many silent steps, both reset paths.
at::Tensor randomInput(at::IntArrayRef shape, uint64_t seed) {
  at::manual_seed(seed);
  return at::rand(shape, at::kFloat) * 3.0f - 1.0f;
}

std::vector<float> toVector(const at::Tensor &tensor) {
  at::Tensor dense = tensor.contiguous();
  return std::vector<float>(dense.data_ptr<float>(),
                            dense.data_ptr<float>() + dense.numel());
}

/// Bit equality, reporting the first difference.
void expectBitEqual(const std::vector<float> &got,
                    const std::vector<float> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << " differs at " << i << ": " << got[i]
                    << " vs " << want[i];
      return;
    }
}

constexpr float kPlifW = -0.4f;

} // namespace

TEST_P(NeuronKernels, MatchesScalarEquations) {
  const NeuronConfig &config = GetParam();
  float k = 1.0f / (1.0f + std::exp(-kPlifW));
  // Odd sizes exercise vector tails, several tiles and parallel chunks.
  for (int64_t neurons : {1, 7, 257, 4099, 70001}) {
    int64_t steps = 9;
    std::vector<float> x = toVector(randomInput({steps, neurons}, 17));
    std::vector<float> spikes(x.size()), h(x.size()), wantH;
    neuronForwardRaw(config, k, x.data(), spikes.data(), h.data(), steps,
                     neurons);
    std::vector<float> want =
        snn::test::scalarNeuron(config, k, x, steps, neurons, &wantH);
    expectBitEqual(spikes, want, "spikes M=" + std::to_string(neurons));
    expectBitEqual(h, wantH, "H M=" + std::to_string(neurons));
    // Without saving H the spikes are the same.
    std::vector<float> spikesOnly(x.size());
    neuronForwardRaw(config, k, x.data(), spikesOnly.data(), nullptr, steps,
                     neurons);
    expectBitEqual(spikesOnly, want, "spikes without H");
  }
}

TEST_P(NeuronKernels, MatchesPerStepAtenOps) {
  const NeuronConfig &config = GetParam();
  at::Tensor x = randomInput({6, 3, 5, 7}, 5);
  at::Tensor w = at::full({}, kPlifW, at::kFloat);
  NeuronForwardResult result = neuronForward(x, config, plifDecay(w), true);
  at::Tensor wantH;
  at::Tensor want = snn::test::atenNeuron(x, config, w, &wantH);
  ASSERT_EQ(result.spikes.sizes(), x.sizes());
  expectBitEqual(toVector(result.spikes), toVector(want), "spikes");
  expectBitEqual(toVector(result.h), toVector(wantH), "H");
  EXPECT_FALSE(neuronForward(x, config, plifDecay(w)).h.defined());
  // The test data must actually exercise both outcomes.
  double rate = want.mean().item<double>();
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.95);
}

TEST_P(NeuronKernels, SavesPreFirePotential) {
  const NeuronConfig &config = GetParam();
  at::Tensor x = randomInput({4, 2, 3}, 9).transpose(1, 2); // non-contiguous
  NeuronForwardResult result = neuronForward(x, config, 0.4f, true);
  ASSERT_TRUE(result.h.defined());
  // Spikes are exactly Heaviside(H - v_threshold).
  at::Tensor fromH = (result.h - config.vThreshold >= 0).to(at::kFloat);
  EXPECT_TRUE(at::equal(fromH, result.spikes));
  // Step 0 starts from the reset potential.
  float v0 = config.hardReset ? config.vReset : 0.0f;
  std::vector<float> x0 = toVector(x[0]);
  std::vector<float> h0 = toVector(result.h[0]);
  float k = 0.4f;
  for (size_t i = 0; i < x0.size(); ++i) {
    float want = config.kind == NeuronKind::IF ? v0 + x0[i]
                 : config.kind == NeuronKind::LIF
                     ? (config.decayInput ? v0 + (x0[i] - (v0 - v0)) / config.tau
                                          : v0 - (v0 - v0) / config.tau + x0[i])
                     : (config.decayInput ? v0 + (x0[i] - (v0 - v0)) * k
                                          : v0 - (v0 - v0) * k + x0[i]);
    EXPECT_EQ(h0[i], want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, NeuronKernels, ::testing::ValuesIn(allNeuronConfigs()),
    [](const ::testing::TestParamInfo<NeuronConfig> &info) {
      return describe(info.param);
    });

TEST(NeuronKernelsEdges, HandlesEmptyAndSingleStep) {
  NeuronConfig config;
  at::Tensor empty = at::zeros({3, 0, 4});
  EXPECT_EQ(neuronForward(empty, config).spikes.sizes(), empty.sizes());
  at::Tensor one = at::tensor({0.5f, 1.0f, 1.5f}).view({1, 3});
  at::Tensor spikes = neuronForward(one, config).spikes;
  EXPECT_TRUE(at::equal(spikes, at::tensor({0.0f, 1.0f, 1.0f}).view({1, 3})));
}

TEST(NeuronKernelsEdges, IFAccumulatesAndHardResets) {
  NeuronConfig config; // IF, v_threshold 1, v_reset 0
  at::Tensor x = at::full({4, 1}, 0.5f);
  at::Tensor spikes = neuronForward(x, config).spikes.view({4});
  EXPECT_TRUE(at::equal(spikes, at::tensor({0.0f, 1.0f, 0.0f, 1.0f})));
}

TEST(NeuronKernelsEdges, SoftResetKeepsRemainder) {
  NeuronConfig config;
  config.hardReset = false;
  at::Tensor x = at::full({3, 1}, 0.75f);
  NeuronForwardResult result = neuronForward(x, config, 0.0f, true);
  // H: 0.75, 1.5 -> fire, V = 0.5; 1.25 -> fire.
  EXPECT_TRUE(at::equal(result.h.view({3}), at::tensor({0.75f, 1.5f, 1.25f})));
  EXPECT_TRUE(at::equal(result.spikes.view({3}), at::tensor({0.0f, 1.0f, 1.0f})));
}

TEST(NeuronKernelsEdges, RejectsBadInputs) {
  NeuronConfig config;
  EXPECT_THROW(neuronForward(at::zeros({2, 2}, at::kInt), config), Error);
  EXPECT_THROW(plifDecay(at::zeros({2})), Error);
  EXPECT_FLOAT_EQ(plifDecay(at::zeros({1})), 0.5f);
}
