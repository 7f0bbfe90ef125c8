//===- ManifestTest.cpp - The manifest written and read back --------------===//
//
// Every field is set to a value other than its default, written by the
// exporter's formatter and read by the runtime's parser: a field that one side
// forgets comes back as its default and fails here.
//
//===----------------------------------------------------------------------===//

#include "snn/Schema/Manifest.h"

#include <gtest/gtest.h>

using namespace snn::schema;

namespace {

PlanSpec fullPlan() {
  PlanSpec plan;
  plan.mode = ParallelMode::PP;
  plan.objective = Objective::Capacity;
  plan.optimizer = OptimizerStrategy::Zero;
  plan.partitioned = true;
  plan.batchSize = 64;
  plan.memoptLevel = 1;
  plan.dpMeshDim = 0;
  plan.tpMeshDim = 2;
  plan.ppMeshDim = 1;
  plan.ppMicrobatches = 8;
  plan.ppSchedule = PipelineSchedule::ZeroBubble;
  plan.ppVirtualStages = 2;
  plan.ppLayout = {1, 2, 0, 3};
  plan.ppMemoptStages = {0, 3};
  plan.ppDelayWgrad = true;
  plan.ppStageUnits = {{"conv1", "bn1"}, {"fc1", "bn2"}, {}, {"fc2", "fc3", "fc"}};
  plan.tensorParallelPairs = {"fc1 -> fc2"};
  plan.communication = {{"all_gather", "tp", 1, 4096}, {"all_reduce", "tp", 3, 12288}};
  plan.decidedBy = "cost-model";
  plan.rationale = {"because", "and so"};
  plan.prediction = PlanPrediction{0.375, 0.125, 0.0625, 1 << 20, "default constants"};
  return plan;
}

PlanExplanation fullExplanation() {
  PlanExplanation e;
  e.topology = "dp=2,pp=2,tp=2";
  e.worldSize = 8;
  e.experimentalConvTP = true;
  e.allowPipeline = true;
  e.allowZero = true;
  e.memoryBudget = 1 << 30;
  e.tensorParallelRoots = {"fc"};
  e.notes = {"a note"};
  PlanCandidate feasible{"dp+zero", "dp=8", true, "", 0.25, 0.125, 0.0625,
                         1000, 2000, 3000, 4000, 1, false};
  PlanCandidate infeasible;
  infeasible.label = "tp";
  infeasible.mesh = "tp=8";
  infeasible.feasible = false;
  infeasible.reason = "fc: 10 features do not divide by 8";
  e.candidates = {feasible, infeasible};
  e.model = ModelSummary{4, 100, 200, 3.5e9, 300, 12};
  return e;
}

Manifest fullManifest() {
  Manifest m;
  m.producer = "test";
  m.source = "model.onnx";
  m.worldSize = 8;
  m.mesh = {{"dp", "pp", "tp"}, {2, 2, 2}};
  // Four logical stages over pp=2 (two virtual stages each), every field consistent.
  m.programs = {{"program_0.onnx", {0, 1, 4, 5}, 0},
                {"stage_1/program.onnx", {2, 3, 6, 7}, 1},
                {"program_2.onnx", {0, 1, 4, 5}, 2},
                {"program_3.onnx", {2, 3, 6, 7}, 3}};
  m.input = {"input", {4, -1, 1, 28, 28}, true, /*repeatedOverTime=*/true};
  m.output = {"output", {-1, 10}, false};
  m.parameters = {{"fc.weight", {10, 32}, ParameterKind::Parameter, kSplit, 1, "tp"},
                  {"bn.running_mean", {32}, ParameterKind::Buffer, kReplicated},
                  {"fc.bias", {10}, ParameterKind::Parameter, kReplicated}};
  m.parameters.back().frozen = true;
  for (ParameterSpec &parameter : m.parameters)
    parameter.stage = 3;
  m.plan = fullPlan();
  m.explanation = fullExplanation();
  return m;
}

/// The full manifest made tensor-parallel: no pipeline, so no stage anywhere.
Manifest unstagedManifest() {
  Manifest m = fullManifest();
  m.mesh = {{"dp", "tp"}, {4, 2}};
  m.programs = {{"program_0.onnx", {0, 2, 4, 6}}, {"program_1.onnx", {1, 3, 5, 7}}};
  for (ParameterSpec &parameter : m.parameters)
    parameter.stage = -1;
  PlanSpec plan;
  plan.mode = ParallelMode::FSDP_TP;
  plan.partitioned = true;
  plan.batchSize = 64;
  plan.dpMeshDim = 0;
  plan.tpMeshDim = 1;
  m.plan = plan;
  return m;
}

void expectSamePlan(const PlanSpec &a, const PlanSpec &b) {
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.objective, b.objective);
  EXPECT_EQ(a.optimizer, b.optimizer);
  EXPECT_EQ(a.partitioned, b.partitioned);
  EXPECT_EQ(a.batchSize, b.batchSize);
  EXPECT_EQ(a.memoptLevel, b.memoptLevel);
  EXPECT_EQ(a.dpMeshDim, b.dpMeshDim);
  EXPECT_EQ(a.tpMeshDim, b.tpMeshDim);
  EXPECT_EQ(a.ppMeshDim, b.ppMeshDim);
  EXPECT_EQ(a.ppMicrobatches, b.ppMicrobatches);
  EXPECT_EQ(a.ppSchedule, b.ppSchedule);
  EXPECT_EQ(a.ppVirtualStages, b.ppVirtualStages);
  EXPECT_EQ(a.ppLayout, b.ppLayout);
  EXPECT_EQ(a.ppMemoptStages, b.ppMemoptStages);
  EXPECT_EQ(a.ppDelayWgrad, b.ppDelayWgrad);
  EXPECT_EQ(a.ppStageUnits, b.ppStageUnits);
  EXPECT_EQ(a.tensorParallelPairs, b.tensorParallelPairs);
  ASSERT_EQ(a.communication.size(), b.communication.size());
  for (size_t i = 0; i < a.communication.size(); ++i) {
    EXPECT_EQ(a.communication[i].kind, b.communication[i].kind);
    EXPECT_EQ(a.communication[i].meshAxis, b.communication[i].meshAxis);
    EXPECT_EQ(a.communication[i].calls, b.communication[i].calls);
    EXPECT_EQ(a.communication[i].bytes, b.communication[i].bytes);
  }
  EXPECT_EQ(a.decidedBy, b.decidedBy);
  EXPECT_EQ(a.rationale, b.rationale);
  ASSERT_EQ(a.prediction.has_value(), b.prediction.has_value());
  if (a.prediction) {
    EXPECT_EQ(a.prediction->stepSeconds, b.prediction->stepSeconds);
    EXPECT_EQ(a.prediction->computeSeconds, b.prediction->computeSeconds);
    EXPECT_EQ(a.prediction->commSeconds, b.prediction->commSeconds);
    EXPECT_EQ(a.prediction->memoryBytes, b.prediction->memoryBytes);
    EXPECT_EQ(a.prediction->times, b.prediction->times);
  }
}

void expectSameCandidate(const PlanCandidate &a, const PlanCandidate &b) {
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.mesh, b.mesh);
  EXPECT_EQ(a.feasible, b.feasible);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.stepSeconds, b.stepSeconds);
  EXPECT_EQ(a.computeSeconds, b.computeSeconds);
  EXPECT_EQ(a.commSeconds, b.commSeconds);
  EXPECT_EQ(a.commBytes, b.commBytes);
  EXPECT_EQ(a.memoryBytes, b.memoryBytes);
  EXPECT_EQ(a.stateBytes, b.stateBytes);
  EXPECT_EQ(a.activationBytes, b.activationBytes);
  EXPECT_EQ(a.memoptLevel, b.memoptLevel);
  EXPECT_EQ(a.fitsBudget, b.fitsBudget);
}

void expectSameExplanation(const PlanExplanation &a, const PlanExplanation &b) {
  EXPECT_EQ(a.topology, b.topology);
  EXPECT_EQ(a.worldSize, b.worldSize);
  EXPECT_EQ(a.experimentalConvTP, b.experimentalConvTP);
  EXPECT_EQ(a.allowPipeline, b.allowPipeline);
  EXPECT_EQ(a.allowZero, b.allowZero);
  EXPECT_EQ(a.memoryBudget, b.memoryBudget);
  EXPECT_EQ(a.tensorParallelRoots, b.tensorParallelRoots);
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  for (size_t i = 0; i < a.candidates.size(); ++i)
    expectSameCandidate(a.candidates[i], b.candidates[i]);
  ASSERT_EQ(a.model.has_value(), b.model.has_value());
  if (a.model) {
    EXPECT_EQ(a.model->timeSteps, b.model->timeSteps);
    EXPECT_EQ(a.model->paramBytes, b.model->paramBytes);
    EXPECT_EQ(a.model->bufferBytes, b.model->bufferBytes);
    EXPECT_EQ(a.model->forwardFlops, b.model->forwardFlops);
    EXPECT_EQ(a.model->activationBytes, b.model->activationBytes);
    EXPECT_EQ(a.model->pipelineUnits, b.model->pipelineUnits);
  }
}

void expectSameTensor(const TensorSpec &a, const TensorSpec &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.timeMajor, b.timeMajor);
  EXPECT_EQ(a.repeatedOverTime, b.repeatedOverTime);
}

std::string parseError(const std::string &text) {
  try {
    parseManifest(text, "m.json");
  } catch (const ManifestError &e) {
    return e.what();
  }
  return "";
}

/// The full manifest's text with `from` replaced by `to` (once).
std::string edited(const std::string &from, const std::string &to) {
  std::string text = formatManifest(fullManifest());
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

} // namespace

TEST(Manifest, EveryFieldRoundTrips) {
  Manifest written = fullManifest();
  Manifest read = parseManifest(formatManifest(written), "m.json");
  EXPECT_EQ(read.format, kArtifactFormat);
  EXPECT_EQ(read.version, kManifestVersion);
  EXPECT_EQ(read.producer, written.producer);
  EXPECT_EQ(read.source, written.source);
  EXPECT_EQ(read.worldSize, written.worldSize);
  EXPECT_EQ(read.mesh.axes, written.mesh.axes);
  EXPECT_EQ(read.mesh.shape, written.mesh.shape);
  ASSERT_EQ(read.programs.size(), written.programs.size());
  for (size_t i = 0; i < read.programs.size(); ++i) {
    EXPECT_EQ(read.programs[i].file, written.programs[i].file);
    EXPECT_EQ(read.programs[i].ranks, written.programs[i].ranks);
    EXPECT_EQ(read.programs[i].stage, written.programs[i].stage);
  }
  expectSameTensor(read.input, written.input);
  expectSameTensor(read.output, written.output);
  ASSERT_EQ(read.parameters.size(), written.parameters.size());
  for (size_t i = 0; i < read.parameters.size(); ++i) {
    EXPECT_EQ(read.parameters[i].name, written.parameters[i].name);
    EXPECT_EQ(read.parameters[i].shape, written.parameters[i].shape);
    EXPECT_EQ(read.parameters[i].kind, written.parameters[i].kind);
    EXPECT_EQ(read.parameters[i].sharding, written.parameters[i].sharding);
    EXPECT_EQ(read.parameters[i].splitDim, written.parameters[i].splitDim);
    EXPECT_EQ(read.parameters[i].meshAxis, written.parameters[i].meshAxis);
    EXPECT_EQ(read.parameters[i].splitGroups, written.parameters[i].splitGroups);
    EXPECT_EQ(read.parameters[i].frozen, written.parameters[i].frozen);
    EXPECT_EQ(read.parameters[i].stage, written.parameters[i].stage);
  }
  expectSamePlan(read.plan, written.plan);
  ASSERT_TRUE(read.explanation);
  expectSameExplanation(*read.explanation, *written.explanation);
  EXPECT_EQ(read.programForRank(6).file, "stage_1/program.onnx");
}

TEST(Manifest, UnplannedManifestHasNoExplanation) {
  Manifest m;
  m.programs = {{"program_0.onnx", {0}}};
  m.input = {"input", {4, -1, 3}, true};
  m.output = {"output", {-1, 3}, false};
  std::string text = formatManifest(m);
  EXPECT_EQ(text.find("explanation"), std::string::npos);
  Manifest read = parseManifest(text, "m.json");
  EXPECT_FALSE(read.explanation);
  EXPECT_EQ(read.plan.mode, ParallelMode::None);
  EXPECT_FALSE(read.plan.ppSchedule);
}

TEST(Manifest, RepeatedOverTimeIsTheTimeMajorInputsOnly) {
  // Written only when true: a model that takes its [T, N, ...] input itself reads back false.
  Manifest plain;
  plain.programs = {{"program_0.onnx", {0}}};
  plain.input = {"input", {4, -1, 3}, true};
  plain.output = {"output", {-1, 3}, false};
  std::string text = formatManifest(plain);
  EXPECT_EQ(text.find("repeated_over_time"), std::string::npos);
  EXPECT_FALSE(parseManifest(text, "m.json").input.repeatedOverTime);
  EXPECT_TRUE(parseManifest(formatManifest(fullManifest()), "m.json").input.repeatedOverTime);

  EXPECT_EQ(parseError(edited("\"repeated_over_time\": true", "\"repeated_over_time\": 1")),
            "m.json: 'input.repeated_over_time' must be true or false");
  EXPECT_EQ(parseError(edited("\"time_major\": true", "\"time_major\": false")),
            "m.json: 'input.repeated_over_time' applies to a time-major input only");
  Manifest output = fullManifest();
  output.output.repeatedOverTime = true;
  EXPECT_EQ(parseError(formatManifest(output)),
            "m.json: 'output.repeated_over_time' applies to a time-major input only");
}

TEST(Manifest, ReadsVersionOneArtifacts) {
  // What snn-compile wrote before the schema: the plan as the whole planner dictionary
  // (pp_layout a string); only mode and optimizer strategy were ever acted on.
  const char *v1 = R"({"format": "spikemesh-artifact", "version": 1, "world_size": 2,
    "mesh": {"axes": ["dp"], "shape": [2]},
    "programs": [{"file": "program_0.onnx", "ranks": [0, 1]}],
    "input": {"name": "input", "shape": [4, -1, 3], "time_major": true},
    "output": {"name": "output", "shape": [-1, 3], "time_major": false},
    "parameters": [{"name": "w", "shape": [3, 3], "kind": "parameter",
                    "sharding": "replicated"}],
    "plan": {"mode": "dp", "optimizer_strategy": "zero", "objective": "speed",
             "pp_layout": "", "candidates": [{"mode": "dp"}], "partitioned": false}})";
  Manifest m = parseManifest(v1, "old.json");
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.plan.mode, ParallelMode::DP);
  EXPECT_EQ(m.plan.optimizer, OptimizerStrategy::Zero);
  EXPECT_TRUE(m.plan.ppLayout.empty());
  EXPECT_EQ(m.mesh.shape, (std::vector<int64_t>{2}));
}

TEST(Manifest, RefusesOtherVersionsNamingTheFix) {
  EXPECT_EQ(parseError(edited("\"version\": 2", "\"version\": 3")),
            "m.json: artifact format 3, this snn-run reads 1 to 2 (use the snn-run built "
            "with the snn-compile that wrote it)");
  EXPECT_EQ(parseError(edited("\"version\": 2", "\"version\": 0")),
            "m.json: artifact format 0, this snn-run reads 1 to 2 (recompile the model "
            "with this snn-compile)");
}

TEST(Manifest, RefusesUnknownSpellingsNamingTheField) {
  EXPECT_EQ(parseError(edited("\"mode\": \"pp\"", "\"mode\": \"ddp\"")),
            "m.json: 'plan.mode': unknown mode 'ddp' (expected none, dp, fsdp, tp, fsdp_tp "
            "or pp)");
  EXPECT_EQ(parseError(edited("\"pp_schedule\": \"zero_bubble\"", "\"pp_schedule\": \"2f2b\"")),
            "m.json: 'plan.pp_schedule': unknown pipeline schedule '2f2b' (expected gpipe, "
            "1f1b, interleaved_1f1b or zero_bubble)");
  EXPECT_EQ(parseError(edited("\"kind\": \"buffer\"", "\"kind\": \"weight\"")),
            "m.json: 'parameters[1].kind' must be \"parameter\" or \"buffer\"");
  EXPECT_EQ(parseError(edited("\"pp_layout\": [", "\"pp_layout\": [-1,")),
            "m.json: 'plan.pp_layout' must be an array of integers >= 0");
  EXPECT_EQ(parseError(edited("\"sharding\": \"split\"", "\"sharding\": \"tp:0\"")),
            "m.json: 'parameters[0].sharding' must be \"replicated\" or \"split\"");
}

TEST(Manifest, RefusesASplitTheMeshCannotHold) {
  EXPECT_EQ(parseError(edited("\"mesh_axis\": \"tp\"", "\"mesh_axis\": \"ep\"")),
            "m.json: 'parameters[0].mesh_axis' names no axis of the mesh: 'ep'");
  EXPECT_EQ(parseError(edited("\"split_dim\": 1", "\"split_dim\": 2")),
            "m.json: 'parameters[0].split_dim' must be a dimension of 'shape'");
  EXPECT_EQ(parseError(edited("\"shape\": [\n        10,\n        32\n      ]",
                              "\"shape\": [10, 33]")),
            "m.json: parameter 'fc.weight': dimension 1 (33) does not divide "
            "into the 2 members of mesh axis 'tp'");
}

TEST(Manifest, SplitGroupsRoundTripAndMustDivide) {
  // A fused q, k, v projection relaid out for head-parallel attention: 3 blocks of 8 rows,
  // each split over the 2 members of "tp".
  Manifest m = fullManifest();
  ParameterSpec qkv{"attn.qkv.weight", {24, 8}, ParameterKind::Parameter, kSplit, 0, "tp"};
  qkv.splitGroups = 3;
  m.parameters.push_back(qkv);
  std::string text = formatManifest(m);
  EXPECT_NE(text.find("\"split_groups\": 3"), std::string::npos);
  Manifest read = parseManifest(text, "m.json");
  EXPECT_EQ(read.parameters.back().splitGroups, 3);
  EXPECT_EQ(read.parameters.front().splitGroups, 1); // not written: one block
  EXPECT_EQ(text.find("\"split_groups\": 1"), std::string::npos);

  size_t at = text.find("\"split_groups\": 3");
  std::string zero = text;
  EXPECT_EQ(parseError(zero.replace(at, 17, "\"split_groups\": 0")),
            "m.json: 'parameters[" + std::to_string(m.parameters.size() - 1) +
                "].split_groups' must be >= 1");
  std::string five = text;
  EXPECT_EQ(parseError(five.replace(at, 17, "\"split_groups\": 5")),
            "m.json: parameter 'attn.qkv.weight': dimension 0 (24) does not divide into 5 "
            "blocks (split_groups) for the 2 members of mesh axis 'tp'");
}

TEST(Manifest, CommunicationIsOptionalAndNotNegative) {
  std::string text = formatManifest(fullManifest());
  size_t at = text.find("\"communication\"");
  ASSERT_NE(at, std::string::npos);
  size_t end = text.find("],", at);
  Manifest without = parseManifest(text.erase(at, end + 2 - at), "m.json");
  EXPECT_TRUE(without.plan.communication.empty());
  EXPECT_EQ(parseError(edited("\"calls\": 1", "\"calls\": -1")),
            "m.json: 'plan.communication[0].calls' and 'plan.communication[0].bytes' must not "
            "be negative");
  EXPECT_EQ(parseError(edited("\"kind\": \"all_gather\"", "\"kind\": 2")),
            "m.json: 'plan.communication[0].kind' must be a string");
}

TEST(Manifest, ThePredictionIsOptionalAndNotNegative) {
  std::string text = formatManifest(fullManifest());
  size_t at = text.find("\"prediction\"");
  ASSERT_NE(at, std::string::npos);
  size_t end = text.find("}", at);
  std::string without = text;
  without.erase(at, end + 1 - at);
  // The field before it keeps its comma: drop the one left dangling.
  size_t comma = without.rfind(',', at);
  without.erase(comma, 1);
  EXPECT_FALSE(parseManifest(without, "m.json").plan.prediction.has_value());
  EXPECT_EQ(parseError(edited("\"step_seconds\": 0.375", "\"step_seconds\": -0.375")),
            "m.json: 'plan.prediction' must hold non-negative times and bytes");
  EXPECT_EQ(parseError(edited("\"times\": \"default constants\"", "\"times\": 3")),
            "m.json: 'plan.prediction.times' must be a string");
}

TEST(Manifest, RefusesDeepOrHugeText) {
  std::string deep = formatManifest(fullManifest());
  size_t plan = deep.find("\"plan\": {");
  ASSERT_NE(plan, std::string::npos);
  std::string nesting = "\"x\": " + std::string(100000, '[') + std::string(100000, ']') + ", ";
  deep.insert(plan + std::string("\"plan\": {").size(), nesting);
  EXPECT_EQ(parseError(deep), "m.json: nested deeper than 32 levels, not a manifest");
  std::string huge(kMaxManifestBytes + 1, ' ');
  EXPECT_EQ(parseError(huge), "m.json: larger than 64 MiB, not a manifest");
}

TEST(Manifest, ProgramForAMissingRankIsAnError) {
  Manifest m = unstagedManifest();
  m.programs.pop_back();
  EXPECT_THROW(m.programForRank(1), ManifestError);
}

namespace {

/// pp=2 with two virtual stages: rank r holds logical stages r and r + 2.
Manifest pipelineManifest() {
  Manifest m;
  m.worldSize = 2;
  m.mesh = {{"pp"}, {2}};
  for (int64_t stage = 0; stage < 4; ++stage)
    m.programs.push_back({"program_" + std::to_string(stage) + ".onnx",
                          {int(stage % 2)}, stage});
  m.input = {"input", {4, -1, 8}, true};
  m.output = {"output", {-1, 2}, false};
  ParameterSpec weight;
  weight.name = "fc.weight";
  weight.shape = {2, 8};
  weight.stage = 3;
  m.parameters.push_back(weight);
  m.plan.mode = ParallelMode::PP;
  m.plan.batchSize = 8;
  m.plan.ppMeshDim = 0;
  return m;
}

} // namespace

TEST(Manifest, PipelineProgramsAndParametersCarryTheirStage) {
  Manifest read = parseManifest(formatManifest(pipelineManifest()), "m.json");
  ASSERT_EQ(read.programs.size(), 4u);
  for (int64_t stage = 0; stage < 4; ++stage)
    EXPECT_EQ(read.programs[size_t(stage)].stage, stage);
  EXPECT_EQ(read.parameters[0].stage, 3);
  EXPECT_EQ(read.stageCount(), 4);
  std::vector<const ProgramSpec *> held = read.programsForRank(1);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0]->stage, 1);
  EXPECT_EQ(held[1]->stage, 3);
  EXPECT_EQ(read.programForRank(1).stage, 1);
  // Without stages nothing changes: one program, no "stage" key.
  Manifest whole = parseManifest(formatManifest(unstagedManifest()), "m.json");
  EXPECT_EQ(whole.stageCount(), 0);
  EXPECT_EQ(formatManifest(unstagedManifest()).find("\"stage\""), std::string::npos);
}

TEST(Manifest, RefusesInconsistentPipelineStages) {
  Manifest twice = pipelineManifest();
  twice.programs[3].stage = 2;
  EXPECT_NE(parseError(formatManifest(twice)).find("every stage runs on the same number of ranks"),
            std::string::npos);
  Manifest gap = pipelineManifest();
  gap.programs.pop_back();
  gap.programs[2].stage = 5;
  EXPECT_NE(parseError(formatManifest(gap)).find("numbered 0 to 2"), std::string::npos);
  Manifest mixed = pipelineManifest();
  mixed.programs[1].stage = -1;
  EXPECT_NE(parseError(formatManifest(mixed)).find("every program or none"), std::string::npos);
}
