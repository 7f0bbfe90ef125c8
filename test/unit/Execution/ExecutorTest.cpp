//===- ExecutorTest.cpp - Programs vs direct ATen computations ------------===//

#include "NeuronReference.h"
#include "TestSupport.h"

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Execution/OnnxLoader.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

using namespace snn::runtime;
using snn::test::floatAttr;
using snn::test::intAttr;
using snn::test::intsAttr;
using snn::test::ProgramBuilder;
using snn::test::stringAttr;

namespace {

at::Tensor run(const ProgramBuilder &builder, const at::Tensor &input) {
  Graph graph = parseOnnxProgram(builder.serialize(), "test.onnx");
  return Executor(graph, "input", "output").run(input);
}

/// The message Executor construction or run throws, or "".
std::string errorOf(const ProgramBuilder &builder, const at::Tensor &input) {
  try {
    run(builder, input);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// [T, N, ...] -> [T*N, ...] -> f -> [T, N, ...], written out by hand.
template <typename F> at::Tensor folded(const at::Tensor &x, F f) {
  std::vector<int64_t> in = x.sizes().vec();
  in.erase(in.begin());
  in[0] = x.size(0) * x.size(1);
  at::Tensor y = f(x.reshape(in));
  std::vector<int64_t> out = y.sizes().vec();
  out[0] = x.size(1);
  out.insert(out.begin(), x.size(0));
  return y.reshape(out);
}

NeuronConfig hardIF(float threshold) {
  NeuronConfig config;
  config.vThreshold = threshold;
  return config;
}

} // namespace

TEST(Executor, ConvNetMatchesAten) {
  at::manual_seed(3);
  at::Tensor x = at::rand({3, 2, 1, 8, 8});
  at::Tensor convW = at::randn({4, 1, 3, 3}) * 0.5, convB = at::randn({4});
  at::Tensor bnW = at::rand({4}) + 0.5, bnB = at::randn({4}) * 0.1;
  at::Tensor mean = at::randn({4}) * 0.1, var = at::rand({4}) + 0.5;
  at::Tensor fcW = at::randn({5, 64}) * 0.3, fcB = at::randn({5}) * 0.1;

  ProgramBuilder b;
  b.addInitializer("conv.weight", convW);
  b.addInitializer("conv.bias", convB);
  b.addInitializer("bn.weight", bnW);
  b.addInitializer("bn.bias", bnB);
  b.addInitializer("bn.running_mean", mean);
  b.addInitializer("bn.running_var", var);
  b.addInitializer("fc.weight", fcW);
  b.addInitializer("fc.bias", fcB);
  std::string v = b.addNode("conv2d", {"input", "conv.weight", "conv.bias"},
                            {intsAttr("stride", {1, 1}),
                             intsAttr("padding", {1, 1}),
                             intsAttr("dilation", {1, 1}), intAttr("groups", 1)});
  v = b.addNode("batch_norm",
                {v, "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
                {floatAttr("eps", 1e-5f), floatAttr("momentum", 0.1f)});
  v = b.addNode("if_node", {v},
                {floatAttr("v_threshold", 0.5f), floatAttr("v_reset", 0.0f),
                 intAttr("detach_reset", 0), stringAttr("surrogate", "sigmoid"),
                 floatAttr("alpha", 4.0f)});
  v = b.addNode("max_pool2d", {v},
                {intsAttr("kernel_size", {2, 2}), intsAttr("stride", {2, 2}),
                 intsAttr("padding", {0, 0}), intsAttr("dilation", {1, 1}),
                 intAttr("ceil_mode", 0)});
  v = b.addNode("flatten", {v});
  v = b.addNode("linear", {v, "fc.weight", "fc.bias"});
  v = b.addNode("lif_node", {v},
                {floatAttr("v_threshold", 0.3f), floatAttr("v_reset", 0.0f),
                 floatAttr("tau", 2.0f), intAttr("decay_input", 1)});
  b.addNode("mean_time", {v}, {}, "output");

  at::Tensor want = folded(x, [&](const at::Tensor &y) {
    at::Tensor c = at::conv2d(y, convW, convB, {1, 1}, {1, 1});
    return at::batch_norm(c, bnW, bnB, mean, var, false, 0.1, 1e-5, true);
  });
  want = snn::test::atenNeuron(want, hardIF(0.5f), {});
  want = folded(want, [](const at::Tensor &y) {
    return at::max_pool2d(y, {2, 2}, {2, 2});
  });
  want = want.flatten(2);
  want = folded(want, [&](const at::Tensor &y) {
    return at::linear(y, fcW, fcB);
  });
  NeuronConfig lif;
  lif.kind = NeuronKind::LIF;
  lif.vThreshold = 0.3f;
  want = snn::test::atenNeuron(want, lif, {}).mean(0);

  at::Tensor got = run(b, x);
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_TRUE(at::equal(got, want));
  EXPECT_GT(want.sum().item<float>(), 0.0f);
}

TEST(Executor, PoolingResidualAndPLIFMatchAten) {
  at::manual_seed(4);
  at::Tensor x = at::rand({4, 2, 3, 6, 6}) * 2;
  at::Tensor w = at::full({}, 0.3f);
  ProgramBuilder b;
  b.addInitializer("sn.w", w);
  std::string a = b.addNode("avg_pool2d", {"input"},
                            {intsAttr("kernel_size", {2, 2}),
                             intsAttr("stride", {1, 1}), intsAttr("padding", {1, 1}),
                             intAttr("ceil_mode", 0), intAttr("count_include_pad", 0)});
  a = b.addNode("adaptive_avg_pool2d", {a}, {intsAttr("output_size", {3, 3})});
  std::string d = b.addNode("dropout", {a}, {floatAttr("p", 0.2f)});
  std::string s = b.addNode("add", {a, d});
  s = b.addNode("mul", {s, s});
  // Soft reset PLIF, no decay_input.
  b.addNode("plif_node", {s, "sn.w"},
            {floatAttr("v_threshold", 1.0f), intAttr("decay_input", 0),
             stringAttr("surrogate", "atan"), floatAttr("alpha", 2.0f)},
            "output");

  at::Tensor want = folded(x, [](const at::Tensor &y) {
    at::Tensor p = at::avg_pool2d(y, {2, 2}, {1, 1}, {1, 1}, false, false);
    return at::adaptive_avg_pool2d(p, {3, 3});
  });
  want = (want + want) * (want + want);
  NeuronConfig plif;
  plif.kind = NeuronKind::PLIF;
  plif.hardReset = false;
  plif.decayInput = false;
  want = snn::test::atenNeuron(want, plif, w);

  at::Tensor got = run(b, x);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::equal(got, want));
}

TEST(Executor, LinearOnTimeMajorInputAndFloatData) {
  at::manual_seed(5);
  at::Tensor x = at::randn({2, 3, 6});
  at::Tensor weight = at::randn({4, 6});
  ProgramBuilder b;
  b.addInitializer("fc.weight", weight, /*raw=*/false);
  b.addNode("linear", {"input", "fc.weight"}, {}, "output");
  at::Tensor got = run(b, x);
  at::Tensor want = at::linear(x.view({6, 6}), weight).view({2, 3, 4});
  EXPECT_TRUE(at::equal(got, want));
}

TEST(Executor, RejectsUnknownOp) {
  ProgramBuilder b;
  b.addNode("relu", {"input"}, {}, "output");
  EXPECT_EQ(errorOf(b, at::zeros({1, 1, 2})),
            "test.onnx: node 'layer0' has unknown op_type 'relu'");
}

TEST(Executor, RejectsUndefinedInput) {
  ProgramBuilder b;
  b.addNode("add", {"input", "v7"}, {}, "output");
  EXPECT_NE(errorOf(b, at::zeros({1, 1, 2}))
                .find("node 'layer0' (add) uses 'v7', which no earlier node"),
            std::string::npos);
}

TEST(Executor, RejectsWrongArityAndAttributes) {
  ProgramBuilder arity;
  arity.addNode("linear", {"input"}, {}, "output");
  EXPECT_NE(errorOf(arity, at::zeros({1, 1, 2})).find("takes 2 to 3 inputs, got 1"),
            std::string::npos);

  ProgramBuilder missing;
  missing.addNode("max_pool2d", {"input"}, {}, "output");
  EXPECT_NE(errorOf(missing, at::zeros({1, 1, 1, 2, 2}))
                .find("(max_pool2d): missing attribute 'kernel_size'"),
            std::string::npos);

  ProgramBuilder typed;
  typed.addNode("conv2d", {"input", "input"},
                {stringAttr("stride", "2")}, "output");
  EXPECT_NE(errorOf(typed, at::zeros({1})).find("attribute 'stride' must be"),
            std::string::npos);

  ProgramBuilder tau;
  tau.addNode("lif_node", {"input"}, {floatAttr("tau", 1.0f)}, "output");
  EXPECT_NE(errorOf(tau, at::zeros({1, 1}))
                .find("'tau' must be finite and > 1, got 1"),
            std::string::npos);

  ProgramBuilder surrogate;
  surrogate.addNode("if_node", {"input"}, {stringAttr("surrogate", "relu")},
                    "output");
  EXPECT_NE(errorOf(surrogate, at::zeros({1, 1})).find("unknown surrogate"),
            std::string::npos);
}

/// The error of a one-node program `opType` with `attribute`, run on `input`.
std::string attributeError(const char *opType, int inputs, onnx::AttributeProto attribute,
                           const at::Tensor &input) {
  ProgramBuilder b;
  std::vector<std::string> names(inputs, "input");
  b.addNode(opType, names, {std::move(attribute)}, "output");
  return errorOf(b, input);
}

TEST(Executor, RejectsOutOfRangeAttributes) {
  at::Tensor x = at::zeros({1, 1, 2, 4, 4});
  float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    const char *opType;
    int inputs;
    onnx::AttributeProto attribute;
    const char *message;
  } cases[] = {
      {"batch_norm", 5, floatAttr("eps", 0.0f), "attribute 'eps' must be finite and > 0, got 0"},
      {"batch_norm", 5, floatAttr("eps", nan), "attribute 'eps' must be finite and > 0, got nan"},
      {"batch_norm", 5, floatAttr("momentum", 2.0f),
       "attribute 'momentum' must be finite and in [0, 1], got 2"},
      {"if_node", 1, floatAttr("alpha", 0.0f),
       "sigmoid surrogate: alpha (alpha) must be a finite number > 0, got 0"},
      {"lif_node", 1, floatAttr("alpha", nan),
       "sigmoid surrogate: alpha (alpha) must be a finite number > 0, got nan"},
      {"dropout", 1, floatAttr("p", 1.5f), "attribute 'p' must be finite and in [0, 1], got 1.5"},
      {"conv2d", 2, intAttr("groups", int64_t(1) << 62), "attribute 'groups' must be in [1, "},
      {"conv2d", 2, intsAttr("stride", {0, 1}), "attribute 'stride' must be in [1, "},
      {"conv2d", 2, intsAttr("padding", {-1}), "attribute 'padding' must be in [0, "},
      {"max_pool2d", 1, intsAttr("kernel_size", {-2, 2}), "attribute 'kernel_size' must be in [1, "},
      {"avg_pool2d", 1, intsAttr("kernel_size", {int64_t(1) << 40}),
       "attribute 'kernel_size' must be in [1, "},
  };
  for (Case &c : cases) {
    std::string message = attributeError(c.opType, c.inputs, c.attribute, x);
    EXPECT_NE(message.find(c.message), std::string::npos) << c.opType << ": " << message;
  }
}

TEST(Executor, ConvGroupsMustDivideTheChannels) {
  ProgramBuilder b;
  b.addInitializer("w", at::zeros({4, 1, 3, 3}));
  b.addNode("conv2d", {"input", "w"}, {intAttr("groups", 3)}, "output");
  EXPECT_NE(errorOf(b, at::zeros({1, 1, 3, 5, 5}))
                .find("3 groups do not divide 3 input and 4 output channels"),
            std::string::npos);
}

TEST(Executor, RejectsMissingGraphOutput) {
  ProgramBuilder b;
  b.addNode("flatten", {"input"});
  EXPECT_NE(errorOf(b, at::zeros({1, 1, 2}))
                .find("graph output 'output' is not produced by any node"),
            std::string::npos);
}

TEST(Executor, RuntimeFailuresNameTheNode) {
  ProgramBuilder b;
  b.addInitializer("w", at::zeros({4, 3, 3, 3}));
  b.addNode("conv2d", {"input", "w"}, {}, "output");
  // Two channels where the weight expects three: ATen's message, one line.
  std::string message = errorOf(b, at::zeros({1, 1, 2, 5, 5}));
  EXPECT_EQ(message.rfind("test.onnx: node 'layer0' (conv2d): ", 0), 0u)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_NE(errorOf(b, at::zeros({1, 2, 5, 5})).find("expects a [T, N, C, H, W]"),
            std::string::npos);
}

// A parameter read through a value that may be a view of it (here an
// identity collective) is in use where that value is read: fsdp keeps
// its unit gathered until then, or the later read finds freed storage.
TEST(Executor, ParameterUseFollowsViewsOfParameters) {
  ProgramBuilder b;
  b.addInitializer("fc.weight", at::randn({4, 6}));
  b.addInitializer("sn.w", at::full({1}, 0.3f));
  std::string w = b.addNode("backward_all_reduce", {"sn.w"}, {stringAttr("mesh_axis", "tp")});
  std::string y = b.addNode("linear", {"input", "fc.weight"});
  std::string z = b.addNode("add", {y, y});
  b.addNode("plif_node", {z, w},
            {floatAttr("v_threshold", 1.0f), stringAttr("surrogate", "atan")}, "output");
  Graph graph = parseOnnxProgram(b.serialize(), "test.onnx");
  std::vector<ParameterStore::Entry> entries;
  for (const auto &[name, value] : graph.initializers)
    entries.push_back({name, ParameterKind::Parameter, value.clone().requires_grad_()});
  ParameterStore store(std::move(entries));
  Executor executor(graph, "input", "output", &store);
  const std::vector<std::vector<std::string>> &use = executor.parameterUse();
  ASSERT_EQ(use.size(), 4u);
  EXPECT_EQ(use[0], std::vector<std::string>{"sn.w"});
  EXPECT_EQ(use[1], std::vector<std::string>{"fc.weight"});
  EXPECT_TRUE(use[2].empty()); // linear's output is fresh
  EXPECT_EQ(use[3], std::vector<std::string>{"sn.w"});
}

namespace {

/// input -> fc1 -> sn1 -> fc2 -> add(., sn1) -> bn -> sn2 -> dropout -> fc3 -> output, [T, N, 6]
/// values; the parameters in a store so that gradients can be compared.
struct ResidualProgram {
  ResidualProgram() {
    at::manual_seed(3);
    b.addInitializer("fc1.weight", at::randn({6, 6}) * 0.8);
    b.addInitializer("fc2.weight", at::randn({6, 6}) * 0.8);
    b.addInitializer("fc3.weight", at::randn({4, 6}));
    b.addInitializer("bn.weight", at::rand({6}) + 0.5);
    b.addInitializer("bn.bias", at::randn({6}) * 0.1);
    b.addInitializer("bn.running_mean", at::zeros({6}));
    b.addInitializer("bn.running_var", at::ones({6}));
    std::string a = b.addNode("linear", {"input", "fc1.weight"});
    std::string s1 = b.addNode("if_node", {a}, {floatAttr("v_threshold", 0.5f)});
    std::string c = b.addNode("linear", {s1, "fc2.weight"});
    std::string z = b.addNode("add", {c, s1});
    std::string n = b.addNode("batch_norm",
                              {z, "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
                              {floatAttr("eps", 1e-5f), floatAttr("momentum", 0.1f)});
    std::string s2 = b.addNode("if_node", {n}, {floatAttr("v_threshold", 0.5f)});
    std::string d = b.addNode("dropout", {s2}, {floatAttr("p", 0.3f)});
    b.addNode("linear", {d, "fc3.weight"}, {}, "output");
  }

  /// A store over fresh copies of the initial values, and an executor bound to it.
  std::pair<std::unique_ptr<ParameterStore>, std::unique_ptr<Executor>> instance() const {
    Graph graph = parseOnnxProgram(b.serialize(), "test.onnx");
    std::vector<ParameterStore::Entry> entries;
    for (const auto &[name, value] : graph.initializers) {
      bool buffer = name.find("running") != std::string::npos;
      entries.push_back({name, buffer ? ParameterKind::Buffer : ParameterKind::Parameter,
                         buffer ? value.clone() : value.clone().requires_grad_()});
    }
    auto store = std::make_unique<ParameterStore>(std::move(entries));
    auto executor = std::make_unique<Executor>(graph, "input", "output", store.get());
    return {std::move(store), std::move(executor)};
  }

  ProgramBuilder b;
};

} // namespace

// Segments may end where one value is live: after fc1, sn1, the residual sum, sn2 and the
// dropout; not inside the residual branch, where sn1 is live beside fc2's output, nor between
// the BatchNorm and sn2, which run as one spiking block. Each cut says whether a neuron ran
// since the one before.
TEST(Executor, SegmentCutsAreWhereOneValueIsLive) {
  auto [store, executor] = ResidualProgram().instance();
  std::vector<std::pair<size_t, bool>> cuts;
  for (const Executor::SegmentCut &cut : executor->segmentCuts())
    cuts.push_back({cut.step, cut.afterNeuron});
  std::vector<std::pair<size_t, bool>> expected = {
      {0, false}, {1, true}, {3, false}, {5, true}, {6, false}};
  EXPECT_EQ(cuts, expected);
}

// Training with recomputation gives run()'s output and gradients bit for bit, draws the same
// Dropout mask, and updates BatchNorm's running statistics once.
TEST(Executor, RecomputedSegmentsGiveTheGradientsOfOneRun) {
  ResidualProgram program;
  at::manual_seed(11);
  at::Tensor input = at::randn({4, 5, 6});
  std::vector<std::map<std::string, at::Tensor>> grads, buffers;
  std::vector<at::Tensor> outputs;
  for (bool recompute : {false, true}) {
    auto [store, executor] = program.instance();
    FiringCounts firing;
    RunContext context;
    context.training = true;
    context.firing = &firing;
    at::manual_seed(5); // Dropout's draws
    c10::AutoGradMode gradOn(true);
    at::Tensor out = recompute ? executor->runRecomputingSegments(input, context)
                               : executor->run(input, context);
    out.pow(2).sum().backward();
    outputs.push_back(out.detach());
    ASSERT_EQ(firing.layers().size(), 2u);
    for (const LayerFiring &layer : firing.layers()) // counted once, not by the replay
      EXPECT_EQ(layer.elements, 4 * 5 * 6) << layer.layer;
    for (const auto &[layer, rate] : firing.rates()) {
      EXPECT_GE(rate, 0.05) << layer;
      EXPECT_LE(rate, 0.5) << layer;
    }
    std::map<std::string, at::Tensor> g, r;
    for (const ParameterStore::Entry &entry : store->entries())
      (entry.kind == ParameterKind::Buffer ? r : g)[entry.name] =
          entry.kind == ParameterKind::Buffer ? entry.tensor.clone() : entry.tensor.grad();
    grads.push_back(g);
    buffers.push_back(r);
  }
  EXPECT_TRUE(at::equal(outputs[0], outputs[1]));
  for (const auto &[name, g] : grads[0]) {
    ASSERT_TRUE(g.defined()) << name;
    EXPECT_GT(g.abs().max().item<float>(), 0.0f) << name;
    EXPECT_TRUE(at::equal(g, grads[1].at(name))) << name;
  }
  for (const auto &[name, value] : buffers[0])
    EXPECT_TRUE(at::equal(value, buffers[1].at(name))) << name;
  EXPECT_FALSE(at::equal(buffers[0].at("bn.running_var"), at::ones({6})));
}
