//===- InferTest.cpp - Input shape rules and the infer command ------------===//

#include "TestSupport.h"

#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Commands/InferCommand.h"
#include "snn/Runtime/Support/Npy.h"

#include <ATen/ops/equal.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>

using namespace snn::runtime;
using snn::test::TempDir;

namespace {

TensorSpec inputSpec(std::vector<int64_t> shape) {
  return TensorSpec{"input", std::move(shape), true};
}

std::string prepareError(const at::Tensor &input, const TensorSpec &spec,
                         int64_t repeatTime) {
  try {
    prepareInput(input, spec, repeatTime, "x.npy");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// linear (weights of ones) -> if_node -> mean_time: [4, N, 3] -> [N, 2]. `repeated`: the
/// manifest says the model repeats its static [N, 3] input over T itself.
void writeTinyArtifact(const std::string &dir, bool repeated = false) {
  snn::test::ProgramBuilder b;
  b.addInitializer("fc.weight", at::ones({2, 3}));
  std::string v = b.addNode("linear", {"input", "fc.weight"});
  v = b.addNode("if_node", {v}, {snn::test::floatAttr("v_threshold", 1.0f),
                                 snn::test::floatAttr("v_reset", 0.0f)});
  b.addNode("mean_time", {v}, {}, "output");
  nlohmann::json manifest = snn::test::makeManifest({4, -1, 3}, {-1, 2}, false);
  manifest["parameters"] = {{{"name", "fc.weight"},
                             {"shape", {2, 3}},
                             {"kind", "parameter"},
                             {"sharding", "replicated"}}};
  if (repeated)
    manifest["input"]["repeated_over_time"] = true;
  snn::test::writeArtifact(dir, b, manifest);
}

/// The tiny artifact's input: each linear output is the sum of 3 inputs; 0.4 each -> H 1.2
/// fires at every step; 0.2 each -> 0.6, fires at steps 1 and 3.
const std::vector<float> kTinyInput{0.4f, 0.4f, 0.4f, 0.2f, 0.2f, 0.2f};
const std::vector<float> kTinyRates{1.0f, 1.0f, 0.5f, 0.5f};

std::string inferError(const InferOptions &options) {
  try {
    runInfer(options);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Boundary, AcceptsMatchingShapesWithDynamicBatch) {
  at::Tensor x = at::rand({4, 7, 1, 2});
  EXPECT_TRUE(prepareInput(x, inputSpec({4, -1, 1, 2}), 0, "x.npy").equal(x));
}

TEST(Boundary, NamesExpectedAndActualShapes) {
  TensorSpec spec = inputSpec({4, -1, 1, 28, 28});
  EXPECT_EQ(prepareError(at::rand({3, 2, 1, 28, 28}), spec, 0),
            "x.npy: input has shape [3, 2, 1, 28, 28], the artifact expects "
            "[4, ?, 1, 28, 28]");
  EXPECT_EQ(prepareError(at::rand({2, 1, 28, 28}), spec, 0),
            "x.npy: input has shape [2, 1, 28, 28], the artifact expects "
            "[4, ?, 1, 28, 28] (a static [N, ...] input needs --repeat-time T)");
}

TEST(Boundary, RepeatsStaticInputOverTime) {
  at::Tensor x = at::rand({2, 1, 3, 3});
  at::Tensor repeated = prepareInput(x, inputSpec({4, -1, 1, 3, 3}), 4, "x.npy");
  ASSERT_EQ(repeated.sizes(), (std::vector<int64_t>{4, 2, 1, 3, 3}));
  for (int64_t t = 0; t < 4; ++t)
    EXPECT_TRUE(repeated[t].equal(x));
  EXPECT_NE(prepareError(x, inputSpec({4, -1, 1, 3, 3}), 5)
                .find("--repeat-time 5 does not match the artifact's T = 4"),
            std::string::npos);
  EXPECT_NE(prepareError(at::rand({4, 2, 1, 3, 3}), inputSpec({4, -1, 1, 3, 3}), 4)
                .find("per time step (with --repeat-time)"),
            std::string::npos);
}

TEST(Boundary, RepeatsTheStaticInputOfAModelThatRepeatsItself) {
  TensorSpec spec = inputSpec({4, -1, 1, 3, 3});
  spec.repeatedOverTime = true;
  at::Tensor x = at::rand({2, 1, 3, 3});
  EXPECT_TRUE(takesStaticInput(x.sizes(), spec, 0));
  at::Tensor repeated = prepareInput(x, spec, 0, "x.npy");
  ASSERT_EQ(repeated.sizes(), (std::vector<int64_t>{4, 2, 1, 3, 3}));
  for (int64_t t = 0; t < 4; ++t)
    EXPECT_TRUE(repeated[t].equal(x));
  // The whole [T, N, ...] passes as it is; --repeat-time of the artifact's T still repeats.
  at::Tensor sequence = at::rand({4, 2, 1, 3, 3});
  EXPECT_FALSE(takesStaticInput(sequence.sizes(), spec, 0));
  EXPECT_TRUE(prepareInput(sequence, spec, 0, "x.npy").equal(sequence));
  EXPECT_TRUE(prepareInput(x, spec, 4, "x.npy").equal(repeated));
  EXPECT_EQ(prepareError(x, spec, 5), "--repeat-time 5 does not match the artifact's T = 4");
  EXPECT_EQ(prepareError(at::rand({2, 1, 3, 4}), spec, 0),
            "x.npy: input has shape [2, 1, 3, 4], the artifact expects [?, 1, 3, 3], which its "
            "model repeats over T, or [4, ?, 1, 3, 3]");
  spec.shape[0] = -1;
  EXPECT_EQ(prepareError(x, spec, 0),
            "x.npy: a static [N, ...] input needs --repeat-time T (the artifact's T is dynamic)");
  // Without the manifest's word a static input still needs --repeat-time.
  spec = inputSpec({4, -1, 1, 3, 3});
  EXPECT_FALSE(takesStaticInput(x.sizes(), spec, 0));
  EXPECT_NE(prepareError(x, spec, 0).find("needs --repeat-time T"), std::string::npos);
}

TEST(Boundary, ChecksOutputAgainstManifest) {
  EXPECT_NO_THROW(checkOutput(at::rand({3, 2}), TensorSpec{"output", {-1, 2}, false}));
  EXPECT_THROW(checkOutput(at::rand({3, 5}), TensorSpec{"output", {-1, 2}, false}),
               Error);
}

TEST(Infer, RunsAnArtifactEndToEnd) {
  TempDir dir;
  writeTinyArtifact(dir.file("artifact"));
  writeNpy(dir.file("x.npy"), {2, 3}, kTinyInput.data());
  InferOptions options;
  options.artifactDir = dir.file("artifact");
  options.inputPath = dir.file("x.npy");
  options.outputPath = dir.file("y.npy");
  options.repeatTime = 4;
  options.threads = 1;
  runInfer(options);
  NpyArray y = readNpy(dir.file("y.npy"));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(y.data, kTinyRates);
}

TEST(Infer, TakesTheStaticInputOfAModelThatRepeatsIt) {
  TempDir dir;
  writeTinyArtifact(dir.file("artifact"), /*repeated=*/true);
  writeNpy(dir.file("x.npy"), {2, 3}, kTinyInput.data());
  std::vector<float> sequence;
  for (int t = 0; t < 4; ++t)
    sequence.insert(sequence.end(), kTinyInput.begin(), kTinyInput.end());
  writeNpy(dir.file("seq.npy"), {4, 2, 3}, sequence.data());
  InferOptions options;
  options.artifactDir = dir.file("artifact");
  options.outputPath = dir.file("y.npy");
  options.threads = 1;
  // [N, ...] without --repeat-time, whole or streamed one sample at a time; [T, N, ...];
  // [N, ...] with --repeat-time of the artifact's T.
  for (auto [input, repeat, batch] : {std::tuple{"x.npy", 0, 0}, std::tuple{"x.npy", 0, 1},
                                      std::tuple{"seq.npy", 0, 0}, std::tuple{"x.npy", 4, 0}}) {
    options.inputPath = dir.file(input);
    options.repeatTime = repeat;
    options.batchSize = batch;
    runInfer(options);
    NpyArray y = readNpy(dir.file("y.npy"));
    EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 2})) << input << " " << repeat << " " << batch;
    EXPECT_EQ(y.data, kTinyRates) << input << " " << repeat << " " << batch;
  }
  options.inputPath = dir.file("x.npy");
  options.repeatTime = 3;
  options.batchSize = 0;
  EXPECT_EQ(inferError(options), "--repeat-time 3 does not match the artifact's T = 4");
}

TEST(Infer, FailuresLeaveNoOutput) {
  TempDir dir;
  writeTinyArtifact(dir.file("artifact"));
  std::vector<float> x(2 * 5, 0.0f);
  writeNpy(dir.file("x.npy"), {2, 5}, x.data());
  InferOptions options;
  options.artifactDir = dir.file("artifact");
  options.inputPath = dir.file("x.npy");
  options.outputPath = dir.file("y.npy");
  options.repeatTime = 4;
  EXPECT_NE(inferError(options).find("input has shape [2, 5]"), std::string::npos);
  options.artifactDir = dir.file("missing");
  EXPECT_NE(inferError(options).find("does not exist"), std::string::npos);
  options.artifactDir = dir.file("artifact");
  options.inputPath = dir.file("missing.npy");
  EXPECT_NE(inferError(options).find("missing.npy: cannot open"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("y.npy")));
  options.outputPath = dir.file("no/such/dir/y.npy");
  EXPECT_NE(inferError(options).find("directory '"), std::string::npos);
}
