//===- ParameterShardingTest.cpp - zero and fsdp mechanics in one process -===//
//
// On a one-rank group every collective is a copy, so these tests see the
// mechanics alone: fsdp frees a layer's parameters after the forward's last
// use, gathers them again for backward and frees them once backward has
// their gradients; every sharding takes exactly the
// optimizer step of the replicated one.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"
#include "TrainTestSupport.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/World.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"

#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>

#include <gtest/gtest.h>

using namespace snn::runtime;

namespace {

struct Fixture {
  std::shared_ptr<snn::dist::World> world =
      snn::dist::World::initialize(snn::dist::singleProcessEnvironment());
  DataParallelContext dp;
  snn::test::TempDir dir;
  Artifact artifact;

  Fixture() {
    dp.group = world->group();
    snn::test::writeTrainableArtifact(dir.path());
    artifact = loadArtifact(dir.path());
  }
};

OptimizerConfig adam() {
  OptimizerConfig config;
  config.kind = OptimizerKind::Adam;
  config.weightDecay = 0.01;
  return config;
}

/// One training step of `model` through `sharding` on a fixed batch.
void trainStep(Model &model, ParameterSharding &sharding, uint64_t seed) {
  at::manual_seed(seed);
  at::Tensor x = at::rand({snn::test::kTrainSteps, 4, snn::test::kTrainFeatures});
  at::Tensor y = at::randint(snn::test::kTrainClasses, {4}, at::kLong);
  model.params().zeroGrad();
  at::Tensor loss = computeLoss(model.forward(x, true), y, LossKind::CrossEntropy);
  loss.backward();
  sharding.finishBackward();
  sharding.step(1e-2);
}

TEST(FsdpSharding, FreesAfterForwardAndGathersForBackward) {
  Fixture f;
  Model model(f.artifact);
  auto fsdp = makeFsdpSharding(model, adam(), f.dp);
  for (const at::Tensor &param : model.params().parameters())
    EXPECT_EQ(param.storage().nbytes(), 0u) << "sharded at rest";
  at::Tensor x = at::rand({snn::test::kTrainSteps, 4, snn::test::kTrainFeatures});
  at::Tensor out = model.forward(x, true);
  for (const at::Tensor &param : model.params().parameters())
    EXPECT_EQ(param.storage().nbytes(), 0u) << "freed after the forward";
  // Backward gathers each layer again (its gradient needs the weights) and,
  // once the layer's gradients are accumulated, takes their shard and frees
  // the layer: record what the first layer's accumulation finds resident.
  std::vector<size_t> residentAtFirstGrad;
  at::Tensor first = model.params().parameters().front();
  first.register_hook([&](const at::Tensor &) {
    for (const at::Tensor &param : model.params().parameters())
      residentAtFirstGrad.push_back(param.storage().nbytes());
  });
  out.sum().backward();
  ASSERT_FALSE(residentAtFirstGrad.empty());
  EXPECT_GT(residentAtFirstGrad.front(), 0u) << "gathered for backward";
  EXPECT_EQ(residentAtFirstGrad.back(), 0u)
      << "the last layer, reduced and freed before backward reached the first";
  for (const at::Tensor &param : model.params().parameters()) {
    EXPECT_EQ(param.storage().nbytes(), 0u) << "freed by the end of backward";
    EXPECT_FALSE(param.grad().defined()) << "its gradients now a shard";
  }
  EXPECT_GT(fsdp->footprint().gradBytes, 0) << "the gradient shards, before finishBackward";
  fsdp->finishBackward();
  for (const at::Tensor &param : model.params().parameters())
    EXPECT_EQ(param.storage().nbytes(), 0u) << "freed after backward";
  MemoryFootprint bytes = fsdp->footprint();
  EXPECT_GT(bytes.paramBytes, 0);
  EXPECT_GT(bytes.gradBytes, 0) << "the gradient shard, until step()";
}

TEST(ParameterSharding, EveryModeTakesTheReplicatedStep) {
  Fixture f;
  Model reference(f.artifact);
  auto replicated = makeReplicatedSharding(reference, adam(), nullptr);
  for (uint64_t step = 0; step < 3; ++step)
    trainStep(reference, *replicated, step);
  for (auto make : {makeZeroSharding, makeFsdpSharding}) {
    Model model(f.artifact);
    auto sharding = make(model, adam(), f.dp);
    for (uint64_t step = 0; step < 3; ++step)
      trainStep(model, *sharding, step);
    sharding->materialize();
    for (const auto &entry : reference.params().entries())
      EXPECT_TRUE(model.params().get(entry.name).equal(entry.tensor))
          << shardingModeName(sharding->mode()) << ": " << entry.name;
    // A checkpoint of the sharded run restores into a replicated model.
    CheckpointState state;
    sharding->capture(state);
    EXPECT_EQ(state.shard.worldSize, 1);
    sharding->release();
  }
}

} // namespace
