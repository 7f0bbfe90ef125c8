//===- PipelineEngineTest.cpp - A pipeline's step in one process ----------===//
//
// With a pp axis of one, every stage of a pipeline artifact runs in this
// process and the boundary tensors are handed over directly, so every
// schedule's step can be compared with the unsplit program accumulating over
// the same microbatches (loss_m / M, fresh neurons and batch statistics per
// microbatch): the same gradients, losses and running statistics, bit for
// bit (the same kernels on the same tensors, gradients accumulated in
// microbatch order; a split backward runs the same GEMMs).
//
//===----------------------------------------------------------------------===//

#include "PipelineTestSupport.h"
#include "TestSupport.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace snn::runtime;
using snn::test::PipelineSpec;
using snn::test::TempDir;

namespace {

struct Reference {
  std::map<std::string, at::Tensor> grads;
  double lossSum = 0.0;
  int64_t correct = 0;
  at::Tensor runningMean;
};

/// The unsplit program over M microbatches, as the reference trainer
/// accumulates.
Reference accumulate(Model &model, const at::Tensor &x, const at::Tensor &y,
                     int64_t microbatches, LossKind kind) {
  Reference ref;
  int64_t n = x.size(1) / microbatches;
  for (int64_t m = 0; m < microbatches; ++m) {
    at::Tensor labels = y.narrow(0, m * n, n);
    at::Tensor rate = model.forward(x.narrow(1, m * n, n), true);
    at::Tensor loss = computeLoss(rate, labels, kind);
    ref.lossSum += double(loss.item<float>());
    ref.correct += countCorrect(rate.detach(), labels);
    (microbatches > 1 ? loss / double(microbatches) : loss).backward();
  }
  for (const auto &entry : model.params().entries())
    if (entry.kind == ParameterKind::Parameter)
      ref.grads[entry.name] = entry.tensor.grad();
  ref.runningMean = model.params().get("bn2.running_mean").clone();
  return ref;
}

PipelinePlace localPlace(const Artifact &artifact) {
  PipelinePlace place;
  place.layout = readPipelineLayout(artifact.dir, artifact.manifest);
  return place;
}

void expectSameStep(const std::string &schedule, int64_t stages, int64_t microbatches,
                    bool delayWgrad = false, const std::vector<int64_t> &recompute = {}) {
  // Bit for bit with a split backward: dense kernels on both sides.
  snn::test::DenseKernels dense;
  std::string what = schedule + " K=" + std::to_string(stages) +
                     " M=" + std::to_string(microbatches) + (delayWgrad ? " delay" : "") +
                     (recompute.empty() ? "" : " recomputing " + std::to_string(recompute.size()));
  TempDir dir;
  PipelineSpec spec;
  spec.stages = stages;
  spec.schedule = schedule;
  spec.microbatches = microbatches;
  spec.delayWgrad = delayWgrad;
  spec.recompute = recompute;
  snn::test::writePipelineArtifact(dir.file("pp"), spec);
  snn::test::writeUnsplitPipelineModel(dir.file("whole"));
  Artifact pp = loadArtifact(dir.file("pp")), whole = loadArtifact(dir.file("whole"));
  Model split(pp), reference(whole);
  at::Generator g = at::detail::createCPUGenerator(17);
  at::Tensor x = at::rand({snn::test::kPipeSteps, 6, snn::test::kPipeFeatures}, g);
  at::Tensor y = at::arange(6, at::kLong).remainder(snn::test::kPipeClasses);
  snn::test::expectModeratePipelineRates(x);
  // Both from the same generator state: Dropout (unit 1) must draw the
  // same masks, microbatch after microbatch, whatever the schedule.
  at::manual_seed(23);
  Reference ref = accumulate(reference, x, y, microbatches, LossKind::CrossEntropy);
  at::Tensor generatorAfter = cpuGeneratorState();
  PipelineEngine engine(split, localPlace(pp), LossKind::CrossEntropy);
  at::manual_seed(23);
  PipelineStepResult step = engine.trainStep(x, y);
  EXPECT_TRUE(cpuGeneratorState().equal(generatorAfter)) << what;
  EXPECT_TRUE(step.hasMetrics);
  EXPECT_EQ(step.lossSum, ref.lossSum) << what;
  EXPECT_EQ(step.correct, ref.correct) << what;
  EXPECT_GT(step.seconds, 0.0);
  EXPECT_LE(step.busySeconds, step.seconds);
  for (const auto &[name, grad] : ref.grads) {
    const at::Tensor &got = split.params().get(name).grad();
    ASSERT_TRUE(got.defined()) << what << ": " << name;
    EXPECT_GT(grad.abs().max().item<float>(), 0.0f) << name;
    EXPECT_TRUE(got.equal(grad)) << what << ": " << name << " differs by "
                                 << (got - grad).abs().max().item<float>();
  }
  EXPECT_TRUE(split.params().get("bn2.running_mean").equal(ref.runningMean)) << what;
}

} // namespace

TEST(PipelineEngine, EveryScheduleEqualsAccumulatingTheUnsplitProgram) {
  for (int64_t microbatches : {1, 2, 3}) {
    expectSameStep("gpipe", 1, microbatches);
    expectSameStep("1f1b", 1, microbatches);
    for (int64_t stages : {2, 4}) {
      expectSameStep("gpipe", stages, microbatches);
      expectSameStep("gpipe", stages, microbatches, /*delayWgrad=*/true);
      expectSameStep("interleaved_1f1b", stages, microbatches);
      expectSameStep("zero_bubble", stages, microbatches);
    }
  }
}

// A recomputed stage (pp_memopt_stages) keeps only its inputs and runs its
// forward again before the backward: the same masks (unit 1's Dropout), the
// running statistics (unit 2's BatchNorm) updated once, the same gradients.
TEST(PipelineEngine, RecomputedStagesEqualAccumulatingTheUnsplitProgram) {
  expectSameStep("1f1b", 1, 2, false, {0});
  for (int64_t microbatches : {2, 3}) {
    expectSameStep("gpipe", 2, microbatches, false, {0, 1});
    expectSameStep("gpipe", 4, microbatches, true, {1, 2});
    expectSameStep("interleaved_1f1b", 4, microbatches, false, {0, 1, 2, 3});
    expectSameStep("zero_bubble", 4, microbatches, false, {2, 3});
  }
}

TEST(PipelineEngine, ForwardGivesTheUnsplitOutput) {
  TempDir dir;
  PipelineSpec spec;
  spec.stages = 4;
  snn::test::writePipelineArtifact(dir.file("pp"), spec);
  snn::test::writeUnsplitPipelineModel(dir.file("whole"));
  Artifact pp = loadArtifact(dir.file("pp")), whole = loadArtifact(dir.file("whole"));
  Model split(pp), reference(whole);
  PipelineEngine engine(split, localPlace(pp), LossKind::Mse);
  at::Tensor x = at::rand({snn::test::kPipeSteps, 5, snn::test::kPipeFeatures});
  at::Tensor out = engine.forward(x);
  EXPECT_TRUE(out.equal(reference.forward(x, false)));
  EXPECT_GT(out.sum().item<float>(), 0.0f); // the readout neurons fired
}

TEST(PipelineEngine, ABatchThatDoesNotDivideIntoMicrobatchesIsRefused) {
  TempDir dir;
  PipelineSpec spec;
  spec.microbatches = 4;
  snn::test::writePipelineArtifact(dir.path(), spec);
  Artifact pp = loadArtifact(dir.path());
  Model model(pp);
  PipelineEngine engine(model, localPlace(pp), LossKind::Mse);
  at::Tensor x = at::rand({snn::test::kPipeSteps, 6, snn::test::kPipeFeatures});
  EXPECT_EQ(snn::test::errorOf([&] { engine.trainStep(x, at::zeros({6}, at::kLong)); }),
            "pipeline: a batch of 6 samples does not divide into 4 microbatches "
            "(plan.pp_microbatches)");
}

namespace {

/// A 4-stage artifact on one rank whose stage `stage` program `edit` changes.
Artifact editedStage(const TempDir &dir, int stage,
                     const std::function<void(onnx::GraphProto &)> &edit) {
  PipelineSpec spec;
  spec.stages = 4;
  snn::test::writePipelineArtifact(dir.path(), spec);
  std::string file = dir.file("program_" + std::to_string(stage) + ".onnx");
  onnx::ModelProto model;
  model.ParseFromString(snn::test::readFile(file));
  edit(*model.mutable_graph());
  std::string bytes;
  model.SerializeToString(&bytes);
  snn::test::writeFile(file, bytes);
  return loadArtifact(dir.path());
}

} // namespace

TEST(PipelineEngine, StagesThatDisagreeOnTheirBoundaryAreRefused) {
  TempDir missing;
  Artifact fewer = editedStage(missing, 0, [](onnx::GraphProto &g) {
    g.mutable_node()->RemoveLast(); // the send of slot 1
  });
  Model model(fewer);
  EXPECT_EQ(snn::test::errorOf([&] { PipelineEngine(model, localPlace(fewer), LossKind::Mse); }),
            "pipeline stage 0 sends 1 tensors, but stage 1 receives 2");
  TempDir wider;
  Artifact shape = editedStage(wider, 2, [](onnx::GraphProto &g) {
    g.mutable_value_info(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(2)->set_dim_value(9);
  });
  Model other(shape);
  PipelineEngine engine(other, localPlace(shape), LossKind::Mse);
  at::Tensor x = at::rand({snn::test::kPipeSteps, 4, snn::test::kPipeFeatures});
  EXPECT_EQ(snn::test::errorOf([&] { engine.trainStep(x, at::zeros({4}, at::kLong)); }),
            "pipeline stage 1 sends slot 0 of shape [4, 2, 8], but stage 2's recv (layer0) "
            "declares [4, 2, 9]");
}
