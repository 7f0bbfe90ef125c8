//===- PipelineCheckpointTest.cpp - Whole checkpoints of a pipeline -------===//
//
// A pipeline rank holds its stages' entries; a whole checkpoint (of one
// process, or gathered over the pp group) is cut back to them, a checkpoint
// of another model is refused, and what one process gathers is in manifest
// order with optimizer state for parameters only.
//
//===----------------------------------------------------------------------===//

#include "PipelineTestSupport.h"
#include "TestSupport.h"

#include "snn/Runtime/Checkpoint/PipelineCheckpoint.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/Model.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>

using namespace snn::runtime;
using snn::test::PipelineSpec;
using snn::test::TempDir;

namespace {

/// The whole model's state, as a one-process run of the pipeline captures
/// it: every entry, and a momentum buffer per parameter.
CheckpointState wholeState(const Model &model) {
  CheckpointState state;
  captureModel(model.params(), state);
  state.optimizer = "sgd";
  for (const std::string &name : model.params().parameterNames())
    state.optimizerState.push_back(
        {name, 3, {{"momentum_buffer", model.params().get(name).detach() * 2}}});
  return state;
}

} // namespace

TEST(PipelineCheckpoint, AWholeCheckpointIsCutToARanksStages) {
  TempDir dir;
  PipelineSpec spec;
  spec.stages = 4;
  spec.ranks = 2;
  snn::test::writePipelineArtifact(dir.file("pp"), spec);
  PipelineSpec local = spec;
  local.ranks = 1;
  snn::test::writePipelineArtifact(dir.file("one"), local);
  Model everything(loadArtifact(dir.file("one")));
  CheckpointState whole = wholeState(everything);
  Artifact rank1 = loadArtifact(dir.file("pp"), 1);
  Model model(rank1);
  CheckpointState part = pipelineLocalCheckpoint(whole, model.params(), rank1.manifest, "ck");
  std::vector<std::string> names, optimized;
  for (const CheckpointTensor &entry : part.model)
    names.push_back(entry.name);
  for (const CheckpointOptimizerEntry &entry : part.optimizerState)
    optimized.push_back(entry.param);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc3.weight", "fc3.bias"}));
  EXPECT_EQ(optimized, names);
  restoreModel(part, model.params(), "ck"); // exactly this rank's entries
  EXPECT_TRUE(model.params().get("fc3.bias").equal(everything.params().get("fc3.bias")));
}

TEST(PipelineCheckpoint, ACheckpointOfAnotherModelIsRefused) {
  TempDir dir;
  PipelineSpec spec;
  spec.stages = 2;
  snn::test::writePipelineArtifact(dir.file("pp"), spec);
  Artifact artifact = loadArtifact(dir.file("pp"));
  Model model(artifact);
  CheckpointState whole = wholeState(model);
  whole.model.pop_back(); // fc3.bias missing
  std::string error = snn::test::errorOf(
      [&] { pipelineLocalCheckpoint(whole, model.params(), artifact.manifest, "ck"); });
  EXPECT_NE(error.find("checkpoint 'ck'"), std::string::npos) << error;
  EXPECT_NE(error.find("fc3.bias"), std::string::npos) << error;
}

TEST(PipelineCheckpoint, GatheringInOneProcessKeepsManifestOrder) {
  TempDir dir;
  PipelineSpec spec;
  spec.stages = 4;
  snn::test::writePipelineArtifact(dir.file("pp"), spec);
  Artifact artifact = loadArtifact(dir.file("pp"));
  Model model(artifact);
  CheckpointState state = wholeState(model);
  std::reverse(state.model.begin(), state.model.end());
  state.optimizerState.push_back({"bn2.running_mean", 0, {}}); // not a parameter
  gatherPipelineCheckpoint(state, artifact.manifest, nullptr);
  ASSERT_EQ(state.model.size(), artifact.manifest.parameters.size());
  for (size_t i = 0; i < state.model.size(); ++i) {
    EXPECT_EQ(state.model[i].name, artifact.manifest.parameters[i].name);
    EXPECT_EQ(state.model[i].kind,
              snn::schema::parameterKindName(artifact.manifest.parameters[i].kind));
  }
  EXPECT_EQ(state.optimizerState.size(), model.params().parameters().size());
  ParameterStore whole = gatherPipelineStore(model.params(), artifact.manifest, nullptr);
  EXPECT_EQ(whole.size(), model.params().size());
  EXPECT_TRUE(whole.get("sn2.w").equal(model.params().get("sn2.w")));
}
