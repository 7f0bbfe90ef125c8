//===- ManifestChecksTest.cpp - Fields against their range and the plan ---===//
//
// Each case edits one field of a consistent tensor-parallel or pipeline manifest and
// expects the reader's one-line message, naming the field and its value.
//
//===----------------------------------------------------------------------===//

#include "snn/Schema/Manifest.h"

#include <gtest/gtest.h>

#include <functional>

using namespace snn::schema;

namespace {

/// tp=2: two programs, one weight split over tp, one bias replicated.
Manifest tensorParallel() {
  Manifest m;
  m.worldSize = 2;
  m.mesh = {{"tp"}, {2}};
  m.programs = {{"program_0.onnx", {0}}, {"program_1.onnx", {1}}};
  m.input = {"input", {4, -1, 8}, true};
  m.output = {"output", {-1, 6}, false};
  m.parameters = {{"fc.weight", {6, 8}, ParameterKind::Parameter, kSplit, 0, "tp"},
                  {"fc.bias", {6}, ParameterKind::Parameter, kReplicated}};
  m.plan.mode = ParallelMode::TP;
  m.plan.partitioned = true;
  m.plan.batchSize = 8;
  m.plan.tpMeshDim = 0;
  m.plan.communication = {{"all_reduce", "tp", 2, 1024}};
  return m;
}

/// pp=2: two stages on two ranks, each holding one parameter.
Manifest pipeline() {
  Manifest m;
  m.worldSize = 2;
  m.mesh = {{"pp"}, {2}};
  m.programs = {{"program_0.onnx", {0}, 0}, {"program_1.onnx", {1}, 1}};
  m.input = {"input", {4, -1, 8}, true};
  m.output = {"output", {-1, 6}, false};
  m.parameters = {{"fc0.weight", {8, 8}, ParameterKind::Parameter, kReplicated},
                  {"fc1.weight", {6, 8}, ParameterKind::Parameter, kReplicated}};
  m.parameters[0].stage = 0;
  m.parameters[1].stage = 1;
  m.plan.mode = ParallelMode::PP;
  m.plan.batchSize = 8;
  m.plan.ppMeshDim = 0;
  m.plan.ppMicrobatches = 2;
  m.plan.ppSchedule = PipelineSchedule::OneFOneB;
  m.plan.ppVirtualStages = 1;
  m.plan.ppLayout = {1, 1};
  return m;
}

/// The reader's message for `base` changed by `edit`; "" when it reads.
std::string errorOf(Manifest base, const std::function<void(Manifest &)> &edit) {
  edit(base);
  try {
    parseManifest(formatManifest(base), "art/manifest.json");
  } catch (const ManifestError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(ManifestChecks, ConsistentManifestsRead) {
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &) {}), "");
  EXPECT_EQ(errorOf(pipeline(), [](Manifest &) {}), "");
}

TEST(ManifestChecks, MeshDimsIndexTheirAxis) {
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.tpMeshDim = 7; }),
            "art/manifest.json: 'plan.tp_mesh_dim' is 7, outside the mesh [tp]: it must be -1 "
            "(no tp axis) or the index of the mesh's 'tp' axis");
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.dpMeshDim = -5; }),
            "art/manifest.json: 'plan.dp_mesh_dim' is -5, outside the mesh [tp]: it must be -1 "
            "(no dp axis) or the index of the mesh's 'dp' axis");
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.ppMeshDim = int64_t(1) << 62; }),
            "art/manifest.json: 'plan.pp_mesh_dim' is 4611686018427387904, outside the mesh "
            "[tp]: it must be -1 (no pp axis) or the index of the mesh's 'pp' axis");
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.dpMeshDim = 0; }),
            "art/manifest.json: 'plan.dp_mesh_dim' is 0, the mesh's 'tp' axis, not a 'dp' axis "
            "(mesh [tp])");
}

TEST(ManifestChecks, CountsAreNotNegativeAndAPlannedBatchIsPositive) {
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.batchSize = 0; }),
            "art/manifest.json: 'plan.batch_size' is 0: a planned artifact (plan mode 'tp') "
            "records the global batch it was planned for, at least 1");
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.batchSize = -8; }),
            "art/manifest.json: 'plan.batch_size' is -8: a batch size is never negative");
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.memoptLevel = -1; }),
            "art/manifest.json: 'plan.memopt_level' is -1: it must be 0 or more");
  EXPECT_EQ(errorOf(pipeline(), [](Manifest &m) { m.plan.ppVirtualStages = -1; }),
            "art/manifest.json: 'plan.pp_virtual_stages' is -1: it must be 0 or more");
  EXPECT_EQ(errorOf(pipeline(), [](Manifest &m) { m.plan.ppMicrobatches = -4; }),
            "art/manifest.json: 'plan.pp_microbatches' is -4: it must be 0 or more");
  // An unplanned artifact was planned for no batch.
  Manifest unplanned = tensorParallel();
  unplanned.worldSize = 1;
  unplanned.mesh = {};
  unplanned.programs = {{"program_0.onnx", {0}}};
  unplanned.parameters[0].sharding = kReplicated;
  unplanned.plan = PlanSpec{};
  EXPECT_EQ(errorOf(unplanned, [](Manifest &) {}), "");
}

TEST(ManifestChecks, PipelineFieldsOnlyInAPipeline) {
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.ppMicrobatches = 4; }),
            "art/manifest.json: 'plan.pp_microbatches' is 4, but plan mode 'tp' has no "
            "pipeline (only mode pp has one)");
  EXPECT_EQ(errorOf(tensorParallel(),
                    [](Manifest &m) { m.plan.ppSchedule = PipelineSchedule::GPipe; }),
            "art/manifest.json: 'plan.pp_schedule' is 'gpipe', but plan mode 'tp' has no "
            "pipeline (only mode pp has one)");
  EXPECT_EQ(errorOf(pipeline(), [](Manifest &m) { m.plan.ppLayout = {1, 1, 1}; }),
            "art/manifest.json: 'plan.pp_layout' has 3 entries, but the artifact has 2 "
            "pipeline stages (its programs' 'stage')");
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.parameters[1].stage = 0; }),
            "art/manifest.json: 'parameters[1].stage' is 0 on parameter 'fc.bias', but plan "
            "mode 'tp' has no pipeline stages");
  EXPECT_EQ(errorOf(tensorParallel(),
                    [](Manifest &m) {
                      m.programs[0].stage = 0;
                      m.programs[1].stage = 1;
                    }),
            "art/manifest.json: 'programs[0].stage' is 0, but plan mode 'tp' has no pipeline "
            "stages");
}

TEST(ManifestChecks, SplitsOnlyInPartitionedProgramsOverTp) {
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.partitioned = false; }),
            "art/manifest.json: 'parameters[0].sharding' is \"split\" on parameter "
            "'fc.weight', but the programs of plan mode 'tp' are not partitioned "
            "(plan.partitioned is false): every rank holds it whole");
  EXPECT_EQ(errorOf(tensorParallel(),
                    [](Manifest &m) {
                      m.mesh.axes = {"dp"};
                      m.plan.tpMeshDim = -1;
                      m.plan.communication.clear();
                      m.parameters[0].meshAxis = "dp";
                    }),
            "art/manifest.json: 'parameters[0].mesh_axis' is 'dp' on parameter 'fc.weight': "
            "partitioned programs split parameters over 'tp'");
}

TEST(ManifestChecks, SplitGroupsAreOneOrTheThreeOfAFusedProjection) {
  // 8 rows over tp=2 in 2 blocks divide evenly, yet no op fuses two projections.
  EXPECT_EQ(errorOf(tensorParallel(),
                    [](Manifest &m) {
                      m.parameters[0].shape = {8, 8};
                      m.parameters[0].splitGroups = 2;
                    }),
            "art/manifest.json: 'parameters[0].split_groups' is 2 on parameter 'fc.weight': a "
            "split dimension holds 1 block or 3 (the q, k and v of a fused attention "
            "projection)");
  EXPECT_EQ(errorOf(tensorParallel(),
                    [](Manifest &m) {
                      m.parameters[0].shape = {8, 6};
                      m.parameters[0].splitDim = 1;
                      m.parameters[0].splitGroups = 3;
                    }),
            "art/manifest.json: 'parameters[0].split_groups' is 3 on parameter 'fc.weight' "
            "split along dimension 1: q, k and v blocks lie along dimension 0 (the "
            "projection's output channels)");
  EXPECT_EQ(errorOf(tensorParallel(),
                    [](Manifest &m) {
                      m.parameters[0].shape = {12, 8};
                      m.parameters[0].splitGroups = 3;
                    }),
            "");
}

TEST(ManifestChecks, CommunicationNamesACollectiveOverAMeshAxis) {
  EXPECT_EQ(errorOf(tensorParallel(), [](Manifest &m) { m.plan.communication[0].kind = "send"; }),
            "art/manifest.json: 'plan.communication[0].kind' is 'send': it must be 'all_reduce' "
            "or 'all_gather'");
  EXPECT_EQ(errorOf(tensorParallel(),
                    [](Manifest &m) { m.plan.communication[0].meshAxis = "dp"; }),
            "art/manifest.json: 'plan.communication[0].mesh_axis' is 'dp', not an axis of the "
            "mesh [tp]");
}
