//===- ModelTest.cpp - Training-mode executor, Model and ParameterStore ---===//
//
// A small CSNN-like artifact (conv, BatchNorm, IF, pool, Dropout, linear,
// PLIF, mean over T) run through Model in training and eval mode against the
// same network written with ATen ops and differentiated by LibTorch autograd.
//
//===----------------------------------------------------------------------===//

#include "NeuronGradReference.h"
#include "TestSupport.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Execution/Model.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <limits>

using namespace snn::runtime;
using snn::test::floatAttr;
using snn::test::intAttr;
using snn::test::intsAttr;
using snn::test::ProgramBuilder;
using snn::test::stringAttr;

namespace {

constexpr int64_t kSteps = 3, kBatch = 2;
constexpr double kMomentum = 0.1, kEps = 1e-5;
constexpr double kDropout = 0.25;

/// Manifest order (module order), deliberately not alphabetical.
const std::vector<std::string> kNames = {
    "conv.weight",    "conv.bias", "bn.weight", "bn.bias", "bn.running_mean",
    "bn.running_var", "fc.weight", "fc.bias",   "sn.w"};

bool isBuffer(const std::string &name) {
  return name.find("running") != std::string::npos;
}

std::map<std::string, at::Tensor> initialValues() {
  at::manual_seed(1);
  return {{"conv.weight", at::randn({4, 1, 3, 3}) * 0.6},
          {"conv.bias", at::randn({4}) * 0.1},
          {"bn.weight", at::rand({4}) + 0.5},
          {"bn.bias", at::randn({4}) * 0.1},
          {"bn.running_mean", at::randn({4}) * 0.1},
          {"bn.running_var", at::rand({4}) + 0.5},
          {"fc.weight", at::randn({5, 36}) * 0.4},
          {"fc.bias", at::randn({5}) * 0.1},
          {"sn.w", at::full({}, -0.2f)}};
}

NeuronConfig ifConfig() {
  NeuronConfig config;
  config.vThreshold = 0.5f;
  return config;
}

NeuronConfig plifConfig() {
  NeuronConfig config;
  config.kind = NeuronKind::PLIF;
  config.vThreshold = 0.3f;
  config.surrogate = Surrogate::ATan;
  config.alpha = 2.0f;
  return config;
}

void writeTinyArtifact(const std::string &dir) {
  std::map<std::string, at::Tensor> values = initialValues();
  ProgramBuilder b;
  for (const std::string &name : kNames)
    b.addInitializer(name, values[name]);
  std::string v = b.addNode("conv2d", {"input", "conv.weight", "conv.bias"},
                            {intsAttr("padding", {1, 1})});
  v = b.addNode(
      "batch_norm",
      {v, "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
      {floatAttr("eps", float(kEps)), floatAttr("momentum", float(kMomentum))});
  v = b.addNode("if_node", {v},
                {floatAttr("v_threshold", 0.5f), floatAttr("v_reset", 0.0f),
                 stringAttr("surrogate", "sigmoid"), floatAttr("alpha", 4.0f)});
  v = b.addNode("max_pool2d", {v}, {intsAttr("kernel_size", {2, 2})});
  v = b.addNode("flatten", {v});
  v = b.addNode("dropout", {v}, {floatAttr("p", float(kDropout))});
  v = b.addNode("linear", {v, "fc.weight", "fc.bias"});
  v = b.addNode("plif_node", {v, "sn.w"},
                {floatAttr("v_threshold", 0.3f), floatAttr("v_reset", 0.0f),
                 intAttr("decay_input", 1), stringAttr("surrogate", "atan"),
                 floatAttr("alpha", 2.0f)});
  b.addNode("mean_time", {v}, {}, "output");

  nlohmann::json manifest =
      snn::test::makeManifest({kSteps, -1, 1, 6, 6}, {-1, 5}, false);
  for (const std::string &name : kNames)
    manifest["parameters"].push_back(
        {{"name", name},
         {"shape", values[name].sizes().vec()},
         {"kind", isBuffer(name) ? "buffer" : "parameter"},
         {"sharding", "replicated"}});
  snn::test::writeArtifact(dir, b, manifest);
}

/// [T, N, ...] -> [T*N, ...] -> f -> [T, N, ...].
template <typename F> at::Tensor folded(const at::Tensor &x, F f) {
  at::Tensor y = f(x.flatten(0, 1));
  std::vector<int64_t> sizes{x.size(0), x.size(1)};
  sizes.insert(sizes.end(), y.sizes().begin() + 1, y.sizes().end());
  return y.reshape(sizes);
}

/// The same network in ATen ops; `p` holds leaves and running buffers.
/// `conv`, if given, receives the conv output [T*N, C, H, W] with its
/// gradient retained.
at::Tensor referenceForward(std::map<std::string, at::Tensor> &p,
                            const at::Tensor &x, bool training,
                            at::Tensor *conv = nullptr) {
  at::Tensor y = folded(x, [&](const at::Tensor &z) {
    at::Tensor c =
        at::conv2d(z, p["conv.weight"], p["conv.bias"], {1, 1}, {1, 1});
    if (conv && c.requires_grad()) {
      c.retain_grad();
      *conv = c;
    }
    return at::batch_norm(c, p["bn.weight"], p["bn.bias"], p["bn.running_mean"],
                          p["bn.running_var"], training, kMomentum, kEps, true);
  });
  y = snn::test::atenSurrogateNeuron(y, ifConfig(), {});
  y = folded(y, [](const at::Tensor &z) { return at::max_pool2d(z, {2, 2}); });
  y = y.flatten(2);
  if (training)
    y = folded(
        y, [](const at::Tensor &z) { return at::dropout(z, kDropout, true); });
  y = folded(y, [&](const at::Tensor &z) {
    return at::linear(z, p["fc.weight"], p["fc.bias"]);
  });
  y = snn::test::atenSurrogateNeuron(y, plifConfig(), p["sn.w"]);
  return y.mean(0);
}

std::map<std::string, at::Tensor> referenceLeaves() {
  std::map<std::string, at::Tensor> p = initialValues();
  for (auto &entry : p)
    if (!isBuffer(entry.first))
      entry.second.requires_grad_(true);
  return p;
}

at::Tensor sampleInput() {
  at::manual_seed(2);
  return at::rand({kSteps, kBatch, 1, 6, 6}) * 2.0;
}

at::Tensor lossOf(const at::Tensor &rates) {
  at::Tensor target = at::zeros({kBatch, 5});
  target[0][1] = 1.0f;
  target[1][3] = 1.0f;
  return (rates - target).pow(2).mean();
}

double relativeError(const at::Tensor &got, const at::Tensor &want) {
  double scale = want.abs().max().item<double>();
  double error = (got - want).abs().max().item<double>();
  return scale > 0 ? error / scale : error;
}

class ModelTest : public ::testing::Test {
protected:
  void SetUp() override {
    writeTinyArtifact(dir.path());
    artifact = loadArtifact(dir.path());
  }

  /// Runs a seeded training forward of `model` and of the reference.
  std::pair<at::Tensor, at::Tensor>
  trainForward(Model &model, std::map<std::string, at::Tensor> &reference,
               const at::Tensor &x, at::Tensor *conv = nullptr) {
    at::manual_seed(77);
    at::Tensor got = model.forward(x, true);
    at::manual_seed(77);
    at::Tensor want = referenceForward(reference, x, true, conv);
    return {got, want};
  }

  snn::test::TempDir dir;
  Artifact artifact;
};

} // namespace

TEST_F(ModelTest, StoreHoldsParametersAndBuffersInManifestOrder) {
  Model model(artifact);
  const ParameterStore &store = model.params();
  ASSERT_EQ(store.size(), kNames.size());
  std::vector<std::string> parameterNames;
  for (size_t i = 0; i < kNames.size(); ++i) {
    const ParameterStore::Entry &entry = store.entries()[i];
    EXPECT_EQ(entry.name, kNames[i]);
    bool buffer = isBuffer(kNames[i]);
    EXPECT_EQ(entry.kind,
              buffer ? ParameterKind::Buffer : ParameterKind::Parameter);
    EXPECT_EQ(entry.tensor.requires_grad(), !buffer);
    if (!buffer)
      parameterNames.push_back(kNames[i]);
  }
  EXPECT_EQ(store.parameterNames(), parameterNames);
  EXPECT_EQ(store.parameters().size(), parameterNames.size());
  EXPECT_EQ(store.buffers().size(), 2u);
  EXPECT_TRUE(store.parameters()[0].is_same(store.get("conv.weight")));
  EXPECT_TRUE(at::equal(store.get("fc.weight"),
                        artifact.program.initializers.at("fc.weight")));
  EXPECT_TRUE(store.contains("sn.w"));
  EXPECT_FALSE(store.contains("nope"));
  try {
    store.get("nope");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos);
  }
}

TEST_F(ModelTest, TrainingForwardAndGradientsMatchAtenAutograd) {
  Model model(artifact);
  std::map<std::string, at::Tensor> reference = referenceLeaves();
  at::Tensor x = sampleInput();
  at::Tensor conv;
  auto [got, want] = trainForward(model, reference, x, &conv);
  ASSERT_TRUE(got.requires_grad());
  EXPECT_TRUE(at::equal(got.detach(), want.detach()));
  lossOf(got).backward();
  lossOf(want).backward();

  for (const std::string &name : model.params().parameterNames()) {
    const at::Tensor &grad = model.params().get(name).grad();
    ASSERT_TRUE(grad.defined()) << name;
    if (name == "conv.bias") {
      // Training BatchNorm subtracts the batch mean: a bias before it has
      // zero gradient, so both sides hold rounding noise only, of two
      // chained sums over a channel's T*N*H*W positions (the batch mean in
      // BatchNorm's backward, then the bias's): each within
      // gamma(2n) * sum|dL/dconv| of the exact 0, whatever their order.
      at::Tensor magnitude = conv.grad().abs().to(at::kDouble).sum({0, 2, 3});
      int64_t n = conv.numel() / conv.size(1);
      at::Tensor zero = at::zeros_like(grad);
      snn::test::expectSameSumUpToOrder(grad, zero, magnitude, 2 * n);
      snn::test::expectSameSumUpToOrder(reference[name].grad(), zero, magnitude,
                                        2 * n);
      continue;
    }
    // conv2d and linear are the same ATen calls on both sides (same shapes,
    // hence the same BLAS kernel and order); the neuron BPTT and BatchNorm
    // kernels round differently, per element or in the reductions bounded
    // above and in BatchNormTest. 1e-4 of the largest gradient leaves ~1700
    // float32 ulps for those roundings to propagate through the network.
    EXPECT_GT(grad.abs().max().item<double>(), 0.0) << name;
    EXPECT_LE(relativeError(grad, reference[name].grad()), 1e-4) << name;
  }
  for (const at::Tensor &buffer : model.params().buffers())
    EXPECT_FALSE(buffer.grad().defined());
}

TEST_F(ModelTest, TrainingUpdatesRunningStatisticsInTheStore) {
  Model model(artifact);
  std::map<std::string, at::Tensor> reference = referenceLeaves();
  at::Tensor x = sampleInput();
  at::Tensor mean0 = model.params().get("bn.running_mean").clone();
  at::Tensor var0 = model.params().get("bn.running_var").clone();
  trainForward(model, reference, x);
  const at::Tensor &mean = model.params().get("bn.running_mean");
  const at::Tensor &var = model.params().get("bn.running_var");
  EXPECT_TRUE(at::equal(mean, reference["bn.running_mean"]));
  EXPECT_TRUE(at::equal(var, reference["bn.running_var"]));

  // Independently: statistics over T*N*H*W, unbiased running variance.
  at::Tensor conv;
  {
    at::NoGradGuard noGrad;
    conv = at::conv2d(x.flatten(0, 1), model.params().get("conv.weight"),
                      model.params().get("conv.bias"), {1, 1}, {1, 1});
  }
  at::Tensor perChannel = conv.transpose(0, 1).flatten(1).to(at::kDouble);
  at::Tensor batchMean = perChannel.mean(1);
  at::Tensor batchVar = perChannel.var(1, /*unbiased=*/true);
  // The kernel sums the n values of a channel in its own order (and float32
  // may be all it uses): its batch mean is within gamma(n) * mean|x| of this
  // float64 one, its variance, a sum of n + 2-operation nonnegative terms,
  // within gamma(n + 2) * var; the float32 update rounds a few times more.
  int64_t n = perChannel.size(1);
  double gamma = snn::test::float32Gamma(n + 2);
  double ulps = 4 * std::numeric_limits<float>::epsilon();
  auto expectUpdate = [&](const at::Tensor &got, const at::Tensor &before,
                          const at::Tensor &batch, const at::Tensor &scale) {
    at::Tensor want = (1 - kMomentum) * before + kMomentum * batch;
    at::Tensor bound =
        kMomentum * gamma * scale +
        ulps * ((1 - kMomentum) * before.abs() + kMomentum * batch.abs());
    at::Tensor excess = (got.to(at::kDouble) - want).abs() - bound;
    EXPECT_LE(excess.max().item<double>(), 0.0);
  };
  expectUpdate(mean, mean0.to(at::kDouble), batchMean,
               perChannel.abs().mean(1));
  expectUpdate(var, var0.to(at::kDouble), batchVar, batchVar);

  // A second training forward moves them again, as PyTorch's would.
  at::Tensor meanAfterOne = mean.clone();
  trainForward(model, reference, x * 0.5);
  EXPECT_FALSE(at::equal(mean, meanAfterOne));
  EXPECT_TRUE(at::equal(mean, reference["bn.running_mean"]));
  EXPECT_TRUE(at::equal(var, reference["bn.running_var"]));
  // The loaded artifact keeps its original values.
  EXPECT_TRUE(
      at::equal(artifact.program.initializers.at("bn.running_mean"), mean0));
}

TEST_F(ModelTest, EvalUsesRunningStatisticsWithoutGraphOrDropout) {
  Model model(artifact);
  std::map<std::string, at::Tensor> reference = referenceLeaves();
  at::Tensor x = sampleInput();
  at::Tensor got = model.forward(x, false);
  EXPECT_FALSE(got.requires_grad());
  at::Tensor want;
  {
    at::NoGradGuard noGrad;
    want = referenceForward(reference, x, false);
  }
  EXPECT_TRUE(at::equal(got, want));
  // Eval twice: same result, running statistics untouched.
  EXPECT_TRUE(at::equal(model.forward(x, false), got));
  EXPECT_TRUE(at::equal(model.params().get("bn.running_mean"),
                        initialValues()["bn.running_mean"]));
}

TEST_F(ModelTest, InPlaceUpdatesReachTheNextForward) {
  Model model(artifact);
  at::Tensor x = sampleInput();
  at::manual_seed(3);
  lossOf(model.forward(x, true)).backward();
  // One plain SGD step, in place, as an optimizer does it.
  {
    at::NoGradGuard noGrad;
    for (const at::Tensor &p : model.params().parameters())
      p.sub_(p.grad() * 0.5);
  }
  std::map<std::string, at::Tensor> reference = referenceLeaves();
  for (const ParameterStore::Entry &entry : model.params().entries())
    reference[entry.name] = entry.tensor.detach().clone();
  at::Tensor got = model.forward(x, false);
  at::Tensor want;
  {
    at::NoGradGuard noGrad;
    want = referenceForward(reference, x, false);
  }
  EXPECT_TRUE(at::equal(got, want));

  // set() copies into the bound tensor.
  model.params().set("fc.bias", at::full({5}, 3.0f));
  reference["fc.bias"] = at::full({5}, 3.0f);
  at::Tensor shifted = model.forward(x, false);
  {
    at::NoGradGuard noGrad;
    want = referenceForward(reference, x, false);
  }
  EXPECT_TRUE(at::equal(shifted, want));
  EXPECT_FALSE(at::equal(shifted, got));
  EXPECT_TRUE(model.params().get("fc.bias").requires_grad());
  EXPECT_THROW(model.params().set("fc.bias", at::zeros({4})), Error);
  EXPECT_THROW(model.params().set("missing", at::zeros({4})), Error);
}

TEST_F(ModelTest, ZeroGradClearsOrZeroesGradients) {
  Model model(artifact);
  at::manual_seed(4);
  lossOf(model.forward(sampleInput(), true)).backward();
  const at::Tensor &w = model.params().get("fc.weight");
  ASSERT_TRUE(w.grad().defined());
  model.params().zeroGrad(/*setToNone=*/false);
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().abs().sum().item<float>(), 0.0f);
  model.params().zeroGrad();
  EXPECT_FALSE(w.grad().defined());
}

TEST_F(ModelTest, TrainingStepsAreReproducibleFromTheSeed) {
  // Two models, same seed: identical outputs and grads (Dropout included).
  Model a(artifact), b(artifact);
  at::Tensor x = sampleInput();
  at::manual_seed(9);
  at::Tensor outA = a.forward(x, true);
  at::manual_seed(9);
  at::Tensor outB = b.forward(x, true);
  EXPECT_TRUE(at::equal(outA, outB));
  lossOf(outA).backward();
  lossOf(outB).backward();
  for (const std::string &name : a.params().parameterNames())
    EXPECT_TRUE(
        at::equal(a.params().get(name).grad(), b.params().get(name).grad()))
        << name;
}

TEST_F(ModelTest, TrainsOnAnInputMadeUnderInferenceMode) {
  Model model(artifact);
  at::Tensor x;
  {
    c10::InferenceMode inference;
    x = sampleInput();
  }
  ASSERT_TRUE(x.is_inference());
  at::manual_seed(5);
  lossOf(model.forward(x, true)).backward();
  EXPECT_TRUE(model.params().get("conv.weight").grad().defined());
}
