//===- PipelineModelTest.cpp - Stage programs, recv/send, the pp Model ----===//
//
// A pipeline artifact's stage programs load, check their boundary against
// the contract (naming the culprit), and, when one process holds every stage
// (a pp axis of one), run as the unsplit program does: the same outputs and,
// through one autograd graph over the stages, the same gradients.
//
//===----------------------------------------------------------------------===//

#include "PipelineTestSupport.h"
#include "TestSupport.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/OnnxLoader.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Execution/StageBoundary.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace snn::runtime;
using snn::test::errorOf;
using snn::test::intAttr;
using snn::test::PipelineSpec;
using snn::test::ProgramBuilder;
using snn::test::TempDir;

namespace {

at::Tensor sampleInput(int64_t n, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::rand({snn::test::kPipeSteps, n, snn::test::kPipeFeatures}, g);
}

/// Training forward + MSE loss + backward; the gradients by parameter name.
std::map<std::string, at::Tensor> gradients(Model &model, const at::Tensor &x,
                                            at::Tensor &output) {
  at::manual_seed(29); // the same Dropout masks for every model
  at::Tensor labels = at::arange(x.size(1), at::kLong).remainder(snn::test::kPipeClasses);
  output = model.forward(x, true);
  computeLoss(output, labels, LossKind::Mse).backward();
  std::map<std::string, at::Tensor> grads;
  for (const auto &entry : model.params().entries())
    if (entry.kind == ParameterKind::Parameter)
      grads[entry.name] = entry.tensor.grad();
  return grads;
}

std::string loadError(const std::string &dir) {
  return errorOf([&] { loadArtifact(dir, 0); });
}

} // namespace

TEST(PipelineModel, StagesInOneProcessEqualTheUnsplitProgram) {
  TempDir dir;
  snn::test::writeUnsplitPipelineModel(dir.file("whole"));
  Artifact whole = loadArtifact(dir.file("whole"));
  at::Tensor x = sampleInput(6, 3);
  snn::test::expectModeratePipelineRates(x);
  for (int64_t stages : {1, 2, 4}) {
    PipelineSpec spec;
    spec.stages = stages;
    std::string path = dir.file("pp" + std::to_string(stages));
    snn::test::writePipelineArtifact(path, spec);
    Artifact artifact = loadArtifact(path);
    ASSERT_EQ(artifact.stages.size(), size_t(stages));
    Model split(artifact), reference(whole);
    EXPECT_EQ(split.stages().size(), size_t(stages));
    EXPECT_TRUE(split.forward(x, false).equal(reference.forward(x, false)));
    at::Tensor a, b;
    auto got = gradients(split, x, a);
    auto want = gradients(reference, x, b);
    EXPECT_TRUE(a.equal(b));
    ASSERT_EQ(got.size(), want.size());
    for (const auto &[name, grad] : want) {
      ASSERT_TRUE(got[name].defined()) << name;
      EXPECT_TRUE(got[name].equal(grad)) << name << " with " << stages << " stages";
      EXPECT_GT(grad.abs().max().item<float>(), 0.0f) << name;
    }
    // Training updated the running statistics of stage 2's BatchNorm alike.
    EXPECT_TRUE(split.params().get("bn2.running_mean")
                    .equal(reference.params().get("bn2.running_mean")));
  }
}

TEST(PipelineModel, ARankHoldsOnlyItsStagesParameters) {
  TempDir dir;
  PipelineSpec spec;
  spec.stages = 4;
  spec.ranks = 2; // rank 1 holds stages 1 and 3
  snn::test::writePipelineArtifact(dir.path(), spec);
  Artifact artifact = loadArtifact(dir.path(), 1);
  ASSERT_EQ(artifact.stages.size(), 2u);
  EXPECT_EQ(artifact.stages[0].stage, 1);
  EXPECT_EQ(artifact.stages[1].stage, 3);
  Model model(artifact);
  std::vector<std::string> names;
  for (const auto &entry : model.params().entries())
    names.push_back(entry.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc3.weight", "fc3.bias"}));
  EXPECT_EQ(model.stageInterface(1).recvs.size(), 2u);
  EXPECT_EQ(model.stageInterface(1).sends.size(), 1u);
  EXPECT_TRUE(model.stageInterface(3).hasOutput);
  EXPECT_NE(errorOf([&] { model.forward(sampleInput(2, 1), false); })
                .find("runs 2 of 4 pipeline stages"),
            std::string::npos);
  PipelineLayout layout = readPipelineLayout(dir.path(), artifact.manifest);
  EXPECT_EQ(layout.virtualStages, 2);
  EXPECT_EQ(layout.stagesOf(1), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(layout.coordinateOf(3), 1);
}

TEST(PipelineModel, RecvAndSendMoveTensorsThroughTheBoundary) {
  ProgramBuilder b;
  b.dropGraphInput();
  b.dropGraphOutput();
  b.addInitializer("w", at::eye(3));
  std::string r0 = b.addNode("recv", {}, {intAttr("peer", 0), intAttr("slot", 0)});
  std::string r1 = b.addNode("recv", {}, {intAttr("peer", 0), intAttr("slot", 1)});
  std::string v = b.addNode("linear", {r0, "w"});
  b.addSink("send", {b.addNode("add", {v, r1})}, {intAttr("peer", 2), intAttr("slot", 0)});
  Graph graph = parseOnnxProgram(b.serialize(), "stage1.onnx");
  Executor exec(graph, "", "");
  StageBoundary boundary;
  at::Tensor x = at::rand({2, 4, 3}), y = at::rand({2, 4, 3});
  boundary.received = {{0, x}, {1, y}};
  RunContext context;
  context.boundary = &boundary;
  EXPECT_FALSE(exec.run(at::Tensor(), context).defined());
  ASSERT_EQ(boundary.sent.size(), 1u);
  EXPECT_TRUE(boundary.sent[0].allclose(x + y));
  // Outside a pipeline, and with a slot missing: errors naming the node.
  EXPECT_NE(errorOf([&] { exec.run(at::Tensor()); }).find("not a stage of a pipeline"),
            std::string::npos);
  boundary.received.erase(1);
  std::string missing = errorOf([&] { exec.run(at::Tensor(), context); });
  EXPECT_NE(missing.find("node 'layer1' (recv): nothing was received from stage 0 in slot 1"),
            std::string::npos)
      << missing;
}

TEST(PipelineModel, ProgramsWithoutOutputsNeedASendNode) {
  ProgramBuilder b;
  b.dropGraphOutput();
  b.addNode("mean_time", {"input"});
  EXPECT_NE(errorOf([&] { parseOnnxProgram(b.serialize(), "cut.onnx"); })
                .find("cut.onnx: graph has no outputs and no send node"),
            std::string::npos);
}

namespace {

/// A valid 2-stage artifact whose stage-1 program `edit` then rewrites.
std::string brokenStage(const TempDir &dir, const std::string &name,
                        const std::function<void(onnx::GraphProto &)> &edit,
                        int stage = 1) {
  std::string path = dir.file(name);
  PipelineSpec spec;
  spec.stages = 2;
  snn::test::writePipelineArtifact(path, spec);
  std::string file = path + "/program_" + std::to_string(stage) + ".onnx";
  onnx::ModelProto model;
  model.ParseFromString(snn::test::readFile(file));
  edit(*model.mutable_graph());
  std::string bytes;
  model.SerializeToString(&bytes);
  snn::test::writeFile(file, bytes);
  return path;
}

onnx::NodeProto &firstOf(onnx::GraphProto &graph, const std::string &op) {
  for (auto &node : *graph.mutable_node())
    if (node.op_type() == op)
      return node;
  throw std::logic_error("no " + op);
}

void setInt(onnx::NodeProto &node, const std::string &name, int64_t value) {
  for (auto &attribute : *node.mutable_attribute())
    if (attribute.name() == name)
      attribute.set_i(value);
}

} // namespace

TEST(PipelineModel, MalformedStageProgramsAreRefusedNamingTheNode) {
  TempDir dir;
  std::string peer = loadError(brokenStage(dir, "peer", [](onnx::GraphProto &g) {
    setInt(firstOf(g, "recv"), "peer", 3);
  }));
  EXPECT_NE(peer.find("program_1.onnx: node 'layer"), std::string::npos) << peer;
  EXPECT_NE(peer.find("names peer stage 3, not 0"), std::string::npos) << peer;
  std::string slot = loadError(brokenStage(dir, "slot", [](onnx::GraphProto &g) {
    setInt(firstOf(g, "recv"), "slot", 1);
  }));
  EXPECT_NE(slot.find("has slot 1; the stage's recv slots must be 0 to 0, once each"),
            std::string::npos)
      << slot;
  std::string shape = loadError(brokenStage(dir, "shape", [](onnx::GraphProto &g) {
    g.clear_value_info();
  }));
  EXPECT_NE(shape.find("has no declared shape (value_info)"), std::string::npos) << shape;
  std::string input = loadError(brokenStage(dir, "input", [](onnx::GraphProto &g) {
    g.add_input()->set_name("input");
  }));
  EXPECT_NE(input.find("pipeline stage 1 of 2 must have no graph input"), std::string::npos)
      << input;
  std::string output = loadError(brokenStage(
      dir, "output", [](onnx::GraphProto &g) { g.add_output()->set_name("output"); }, 0));
  EXPECT_NE(output.find("program_0.onnx: pipeline stage 0 of 2 must have no graph output"),
            std::string::npos)
      << output;
}

TEST(PipelineModel, InconsistentLayoutsAreRefused) {
  TempDir dir;
  PipelineSpec spec;
  spec.stages = 4;
  spec.ranks = 2;
  snn::test::writePipelineArtifact(dir.path(), spec);
  Manifest manifest = loadArtifact(dir.path()).manifest;
  auto layoutError = [&](const Manifest &m) {
    return errorOf([&] { readPipelineLayout("art", m); });
  };
  Manifest swapped = manifest;
  swapped.programs[2].ranks = {1};
  swapped.programs[3].ranks = {0};
  EXPECT_NE(layoutError(swapped).find("programs of pipeline stage 2 must list the "
                                      "ranks at pp coordinate 0"),
            std::string::npos)
      << layoutError(swapped);
  Manifest three = manifest;
  three.mesh = {{"pp"}, {3}};
  EXPECT_NE(layoutError(three).find("4 pipeline stages do not divide over a pp axis of 3"),
            std::string::npos);
  Manifest axes = manifest;
  axes.mesh = {{"tp"}, {2}};
  EXPECT_NE(layoutError(axes).find("needs the mesh axes [pp], [dp, pp], [pp, tp] or "
                                   "[dp, pp, tp]"),
            std::string::npos);
  Manifest order = manifest;
  order.mesh = {{"pp", "dp"}, {2, 1}};
  EXPECT_NE(layoutError(order).find("the artifact's mesh has [pp, dp]"), std::string::npos);
  // With a tp axis, one program per (stage, tp coordinate); one listing both coordinates
  // of a stage is refused.
  Manifest mixed = manifest;
  mixed.mesh = {{"pp", "tp"}, {1, 2}};
  mixed.plan.ppVirtualStages = 0;
  mixed.programs[0].ranks = {0, 1};
  EXPECT_NE(layoutError(mixed).find("lists ranks at several tp coordinates"), std::string::npos)
      << layoutError(mixed);
  Manifest noSchedule = manifest;
  noSchedule.plan.ppSchedule.reset();
  EXPECT_NE(layoutError(noSchedule).find("needs a pp_schedule"), std::string::npos);
  Manifest virtualStages = manifest;
  virtualStages.plan.ppVirtualStages = 4;
  EXPECT_NE(layoutError(virtualStages).find("pp_virtual_stages is 4"), std::string::npos);
  Manifest parameter = manifest;
  parameter.parameters[0].stage = -1;
  EXPECT_NE(layoutError(parameter).find("parameter 'fc0.weight' must name the stage"),
            std::string::npos);
  Manifest recompute = manifest;
  recompute.plan.ppMemoptStages = {1, 4};
  EXPECT_NE(layoutError(recompute).find("pp_memopt_stages names stage 4; the pipeline has "
                                        "stages 0 to 3"),
            std::string::npos);
  recompute.plan.ppMemoptStages = {2, 2};
  EXPECT_NE(layoutError(recompute).find("pp_memopt_stages names stage 2 twice"),
            std::string::npos);
}

TEST(PipelineModel, AParameterInAnotherStagesProgramIsRefused) {
  TempDir dir;
  std::string path = brokenStage(dir, "misplaced", [](onnx::GraphProto &g) {
    auto *init = g.add_initializer();
    init->set_name("fc0.bias");
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_dims(8);
    for (int i = 0; i < 8; ++i)
      init->add_float_data(0.0f);
  });
  EXPECT_NE(loadError(path).find("initializer 'fc0.bias' belongs to pipeline stage 0 "
                                 "(manifest.json), not to stage 1"),
            std::string::npos)
      << loadError(path);
}
