//===- NeuronBackwardTest.cpp - Neuron BPTT vs autograd and finite diffs --===//

#include "NeuronGradReference.h"
#include "TestSupport.h"

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Autograd/NeuronAutograd.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Schema/Surrogates.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace snn::runtime;
using snn::test::allGradConfigs;
using snn::test::describeGrad;

namespace {

class NeuronBptt : public ::testing::TestWithParam<NeuronConfig> {};

bool isPLIF(const NeuronConfig &config) {
  return config.kind == NeuronKind::PLIF;
}

/// Inputs in [-1, 2): many spikes, many silent steps, both reset paths.
at::Tensor randomInput(at::IntArrayRef shape, uint64_t seed,
                       at::ScalarType dtype = at::kFloat) {
  at::manual_seed(seed);
  return (at::rand(shape, at::kDouble) * 3.0 - 1.0).to(dtype);
}

/// max |got - want| / max |want|: the error relative to the gradient's scale.
double relativeError(const at::Tensor &got, const at::Tensor &want) {
  double scale = want.abs().max().item<double>();
  double error =
      (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  return scale > 0 ? error / scale : error;
}

Attribute floatAttribute(float value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::Float;
  attribute.f = value;
  return attribute;
}

Attribute intAttribute(int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::Int;
  attribute.i = value;
  return attribute;
}

/// The artifact node that carries `config`, as the exporter writes it.
Node neuronNode(const NeuronConfig &config) {
  const char *ops[] = {"if_node", "lif_node", "plif_node"};
  Node node;
  node.name = "sn";
  node.opType = ops[int(config.kind)];
  node.domain = "spikemesh";
  node.inputs = isPLIF(config) ? std::vector<std::string>{"x", "sn.w"}
                               : std::vector<std::string>{"x"};
  node.outputs = {"y"};
  auto &a = node.attributes;
  a["v_threshold"] = floatAttribute(config.vThreshold);
  if (config.hardReset)
    a["v_reset"] = floatAttribute(config.vReset);
  a["detach_reset"] = intAttribute(config.detachReset);
  Attribute surrogate;
  surrogate.kind = Attribute::Kind::String;
  const snn::schema::SurrogateSpec &spec =
      snn::schema::surrogateSpecs()[size_t(config.surrogate)];
  surrogate.s = spec.name;
  a["surrogate"] = surrogate;
  a["alpha"] = floatAttribute(config.alpha);
  if (spec.hasBeta())
    a["beta"] = floatAttribute(config.beta);
  if (config.kind == NeuronKind::LIF)
    a["tau"] = floatAttribute(config.tau);
  if (config.kind != NeuronKind::IF)
    a["decay_input"] = intAttribute(config.decayInput);
  return node;
}

/// The op kernel the executor would run for `config`.
Kernel neuronKernel(const NeuronConfig &config) {
  Node node = neuronNode(config);
  return OpRegistry::builtin().lookup(node.opType)->build(node);
}

std::vector<double> toDoubles(const at::Tensor &t) {
  at::Tensor dense = t.to(at::kDouble).contiguous();
  return std::vector<double>(dense.data_ptr<double>(),
                             dense.data_ptr<double>() + dense.numel());
}

} // namespace

TEST_P(NeuronBptt, MatchesAutogradThroughPerStepAtenOps) {
  const NeuronConfig &config = GetParam();
  // 300 neurons per step: two tiles, one of them partial.
  at::Tensor x = randomInput({6, 2, 150}, 11);
  at::Tensor w = at::full({}, -0.4f);
  at::manual_seed(12);
  at::Tensor g = at::randn(x.sizes());

  at::Tensor xRef = x.clone().requires_grad_(true);
  at::Tensor wRef = w.clone().requires_grad_(isPLIF(config));
  at::Tensor want = snn::test::atenSurrogateNeuron(xRef, config, wRef);
  (want * g).sum().backward();

  at::Tensor xGot = x.clone().requires_grad_(true);
  at::Tensor wGot = w.clone().requires_grad_(isPLIF(config));
  at::Tensor got = neuronSpikesWithGrad(xGot, wGot, config);
  (got * g).sum().backward();

  EXPECT_TRUE(at::equal(got.detach(), want.detach()));
  double rate = want.mean().item<double>();
  EXPECT_GT(rate, 0.05);
  EXPECT_LT(rate, 0.95);
  ASSERT_TRUE(xGot.grad().defined());
  EXPECT_GT(xRef.grad().abs().max().item<double>(), 0.0);
  // Per element: no sum across neurons or BLAS, only the recurrence over T
  // steps (a few roundings each, associated differently by the kernel and by
  // autograd), far below 1e-4 of the largest gradient in any order.
  EXPECT_LE(relativeError(xGot.grad(), xRef.grad()), 1e-4);
  if (isPLIF(config)) {
    ASSERT_TRUE(wGot.grad().defined());
    EXPECT_EQ(wGot.grad().sizes(), w.sizes());
    // dL/dw sums one term per step and neuron, which the kernel and
    // autograd add in their own orders; each term comes out of a recurrence
    // over at most T steps of a few roundings each. A copy of w per step and
    // neuron gives the terms themselves.
    at::Tensor wTerms = w.expand(x.sizes()).clone().requires_grad_(true);
    (snn::test::atenSurrogateNeuron(x.clone(), config, wTerms) * g)
        .sum()
        .backward();
    at::Tensor magnitude = wTerms.grad().abs().to(at::kDouble).sum();
    int64_t steps = x.size(0);
    snn::test::expectSameSumUpToOrder(wGot.grad(), wRef.grad(), magnitude,
                                      x.numel() + 4 * steps);
  }
}

TEST_P(NeuronBptt, OpGradientMatchesFiniteDifferencesInFloat64) {
  const NeuronConfig &config = GetParam();
  const int64_t steps = 5, batch = 2, features = 4;
  at::Tensor x0 = randomInput({steps, batch, features}, 21, at::kDouble);
  double w0 = 0.3;
  at::manual_seed(22);
  at::Tensor g = at::randn(x0.sizes(), at::kDouble);

  // Analytic: the executor's op in grad mode (autograd Function, float64).
  at::Tensor x = x0.clone().requires_grad_(true);
  at::Tensor w = at::full({}, w0, at::kDouble).requires_grad_(isPLIF(config));
  RunContext training;
  training.training = true;
  at::Tensor spikes =
      neuronKernel(config)(isPLIF(config) ? std::vector<at::Tensor>{x, w}
                                          : std::vector<at::Tensor>{x},
                           training);
  (spikes * g).sum().backward();

  int64_t neurons = batch * features;
  std::vector<double> xs = toDoubles(x0), gs = toDoubles(g);
  snn::test::LinearisedNeuron smooth(config, xs, w0, steps, neurons);
  // Same spikes: the linearisation is taken at the point the op ran.
  EXPECT_NEAR(smooth.loss(xs, w0, gs), (spikes * g).sum().item<double>(), 1e-9);

  const double eps = 1e-6;
  std::vector<double> analytic = toDoubles(x.grad());
  double scale = 1.0;
  for (double value : analytic)
    scale = std::max(scale, std::abs(value));
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<double> plus = xs, minus = xs;
    plus[i] += eps;
    minus[i] -= eps;
    double numeric =
        (smooth.loss(plus, w0, gs) - smooth.loss(minus, w0, gs)) / (2 * eps);
    EXPECT_NEAR(analytic[i], numeric, 1e-6 * scale) << "x[" << i << "]";
  }
  if (isPLIF(config)) {
    double numeric =
        (smooth.loss(xs, w0 + eps, gs) - smooth.loss(xs, w0 - eps, gs)) /
        (2 * eps);
    EXPECT_NEAR(w.grad().item<double>(), numeric,
                1e-6 * std::max(1.0, std::abs(numeric)));
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllConfigs, NeuronBptt, ::testing::ValuesIn(allGradConfigs()),
    [](const ::testing::TestParamInfo<NeuronConfig> &info) {
      return describeGrad(info.param);
    });

INSTANTIATE_TEST_SUITE_P(
    AllSurrogates, NeuronBptt, ::testing::ValuesIn(snn::test::surrogateGradConfigs()),
    [](const ::testing::TestParamInfo<NeuronConfig> &info) {
      return describeGrad(info.param);
    });

TEST(NeuronBpttKernel, MatchesHandDerivedIFGradient) {
  // IF, v_threshold 1, hard reset to 0, Sigmoid(4): x = 0.5, 0.75.
  // H0 = 0.5 (no spike, V0 = 0.5), H1 = 1.25 (spike). With dL/dS = 1, 1:
  //   dH1 = sg'(0.25);  dV0 = dH1
  //   dH0 = (1 + dV0 * (v_reset - H0)) * sg'(-0.5) + dV0 * (1 - S0)
  NeuronConfig config;
  auto sg = [](double u) {
    double s = 1.0 / (1.0 + std::exp(-4.0 * u));
    return 4.0 * s * (1.0 - s);
  };
  double dH1 = sg(0.25);
  double dH0 = (1.0 + dH1 * (0.0 - 0.5)) * sg(-0.5) + dH1;
  float x[] = {0.5f, 0.75f}, spikes[2], h[2], gs[] = {1.0f, 1.0f}, gx[2];
  neuronForwardRaw(config, 0.0f, x, spikes, h, 2, 1);
  ASSERT_EQ(spikes[0], 0.0f);
  ASSERT_EQ(spikes[1], 1.0f);
  EXPECT_EQ(neuronBackwardRaw(config, 0.0f, gs, h, nullptr, gx, 2, 1), 0.0);
  EXPECT_NEAR(gx[1], dH1, 1e-6);
  EXPECT_NEAR(gx[0], dH0, 1e-6);

  // detach_reset drops the reset's dV/dS term; ATan(2) for variety.
  config.detachReset = true;
  config.surrogate = Surrogate::ATan;
  config.alpha = 2.0f;
  auto atan = [](double u) { return 1.0 / (1.0 + std::pow(M_PI * u, 2)); };
  neuronBackwardRaw(config, 0.0f, gs, h, nullptr, gx, 2, 1);
  EXPECT_NEAR(gx[1], atan(0.25), 1e-6);
  EXPECT_NEAR(gx[0], atan(-0.5) + atan(0.25), 1e-6);
}

TEST(NeuronBpttKernel, PLIFReductionIsDeterministic) {
  NeuronConfig config;
  config.kind = NeuronKind::PLIF;
  config.hardReset = false;
  // 20 tiles and several parallel chunks.
  at::Tensor x = randomInput({4, 5000}, 31);
  at::manual_seed(32);
  at::Tensor g = at::randn(x.sizes());
  double k = plifDecay(at::full({}, 0.2f));
  NeuronForwardResult forward = neuronForward(x, config, k, true);
  NeuronBackwardResult first = neuronBackward(g, forward.h, x, config, k);
  NeuronBackwardResult second = neuronBackward(g, forward.h, x, config, k);
  EXPECT_TRUE(at::equal(first.gradX, second.gradX));
  EXPECT_EQ(std::memcmp(&first.gradW, &second.gradW, sizeof(double)), 0);

  int threads = at::get_num_threads();
  at::set_num_threads(1);
  NeuronBackwardResult serial = neuronBackward(g, forward.h, x, config, k);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(first.gradX, serial.gradX));
  EXPECT_EQ(std::memcmp(&first.gradW, &serial.gradW, sizeof(double)), 0);
}

TEST(NeuronBpttKernel, AcceptsExpandedGradientsAndEdgeShapes) {
  NeuronConfig config;
  config.kind = NeuronKind::LIF;
  at::Tensor x = randomInput({3, 2, 5}, 41);
  NeuronForwardResult forward = neuronForward(x, config, 0.0, true);
  // mean_time's backward hands over a stride-0 expansion over T.
  at::Tensor perStep = at::full({1, 2, 5}, 1.0f / 3);
  at::Tensor expanded = perStep.expand({3, 2, 5});
  at::Tensor dense = expanded.contiguous();
  EXPECT_TRUE(
      at::equal(neuronBackward(expanded, forward.h, {}, config, 0).gradX,
                neuronBackward(dense, forward.h, {}, config, 0).gradX));

  // One step: no history; empty: nothing to do.
  NeuronForwardResult one = neuronForward(x.slice(0, 0, 1), config, 0.0, true);
  at::Tensor g1 = at::ones({1, 2, 5});
  EXPECT_EQ(neuronBackward(g1, one.h, {}, config, 0).gradX.sizes(), g1.sizes());
  at::Tensor empty = at::zeros({3, 0, 5});
  EXPECT_EQ(neuronBackward(empty, empty, {}, config, 0).gradX.sizes(),
            empty.sizes());
}

TEST(NeuronBpttKernel, RejectsMismatchedInputs) {
  NeuronConfig config;
  at::Tensor h = at::zeros({2, 3});
  EXPECT_THROW(neuronBackward(at::zeros({2, 4}), h, {}, config, 0), Error);
  EXPECT_THROW(neuronBackward(at::zeros({2, 3}, at::kDouble), h, {}, config, 0),
               Error);
  config.kind = NeuronKind::PLIF;
  EXPECT_THROW(neuronBackward(at::zeros({2, 3}), h, {}, config, 0.5), Error);
  float buffer[6] = {};
  EXPECT_THROW(
      neuronBackwardRaw(config, 0.5f, buffer, buffer, nullptr, buffer, 2, 3),
      Error);
}

TEST(NeuronBpttKernel, OpRecordsAGraphOnlyWhenGradientsAreWanted) {
  NeuronConfig config;
  Kernel kernel = neuronKernel(config);
  RunContext context;
  at::Tensor x = randomInput({2, 2, 3}, 51).requires_grad_(true);
  EXPECT_TRUE(kernel({x}, context).requires_grad());
  EXPECT_FALSE(kernel({x.detach()}, context).requires_grad());
  {
    at::NoGradGuard noGrad;
    EXPECT_FALSE(kernel({x}, context).requires_grad());
  }
  {
    c10::InferenceMode inference;
    at::Tensor y = kernel({x}, context);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(at::equal(y, neuronForward(x.detach(), config).spikes));
  }
}

TEST(NeuronBpttKernel, EveryInstructionSetGivesTheSameBits) {
  KernelIsa best = neuronKernelIsa();
  if (!setNeuronKernelIsa(KernelIsa::Avx2))
    GTEST_SKIP() << "no AVX2 build or CPU";
  // Odd sizes: vector bodies and scalar tails of both widths.
  at::Tensor x = randomInput({5, 3, 1001}, 61);
  at::manual_seed(62);
  at::Tensor g = at::randn(x.sizes());
  for (const NeuronConfig &config : allGradConfigs()) {
    double k = isPLIF(config) ? 0.37 : 0.0;
    NeuronForwardResult results[2];
    NeuronBackwardResult grads[2];
    for (KernelIsa isa : {KernelIsa::Baseline, KernelIsa::Avx2}) {
      ASSERT_TRUE(setNeuronKernelIsa(isa));
      int i = int(isa);
      results[i] = neuronForward(x, config, k, true);
      grads[i] = neuronBackward(g, results[i].h, x, config, k);
    }
    std::string name = describeGrad(config);
    EXPECT_TRUE(at::equal(results[0].spikes, results[1].spikes)) << name;
    EXPECT_TRUE(at::equal(results[0].h, results[1].h)) << name;
    // The surrogate's exp and the sums are per element: same bits too.
    EXPECT_TRUE(at::equal(grads[0].gradX, grads[1].gradX)) << name;
    EXPECT_EQ(grads[0].gradW, grads[1].gradW) << name;
  }
  setNeuronKernelIsa(best);
}

TEST(NeuronSurrogates, TheKernelsEnumFollowsTheSurrogateTable) {
  const std::vector<snn::schema::SurrogateSpec> &specs = snn::schema::surrogateSpecs();
  ASSERT_EQ(specs.size(), size_t(kSurrogateCount));
  EXPECT_STREQ(specs[size_t(Surrogate::Sigmoid)].name, "sigmoid");
  EXPECT_STREQ(specs[size_t(Surrogate::ATan)].name, "atan");
  EXPECT_STREQ(specs[size_t(Surrogate::Erf)].name, "erf");
  EXPECT_STREQ(specs[size_t(Surrogate::S2NN)].name, "s2nn");
  EXPECT_STREQ(specs[size_t(Surrogate::Rect)].name, "rect");
}

TEST(NeuronSurrogates, BadParametersAreRefusedNamingThem) {
  NeuronConfig config;
  config.kind = NeuronKind::IF;
  config.surrogate = Surrogate::QPseudoSpike;
  config.alpha = 1.0f;
  try {
    neuronKernel(config);
    FAIL() << "alpha 1 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("q_pseudo_spike surrogate: alpha (alpha) must be a "
                                         "finite number > 1, got 1"),
              std::string::npos)
        << e.what();
  }
  config.surrogate = Surrogate::SquarewaveFourierSeries;
  config.alpha = 2.5f;
  config.beta = 8.0f;
  EXPECT_THROW(neuronKernel(config), Error);
  config.alpha = 2.0f;
  EXPECT_NO_THROW(neuronKernel(config));
}
