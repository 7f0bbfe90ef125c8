// Topology and option parsing, the reference table, and the recommender's decisions.
#include "snn/Planner/CostModel.h"
#include "snn/Planner/Pipeline.h"
#include "snn/Planner/PipelineUnits.h"
#include "snn/Planner/Recommender.h"
#include "snn/Planner/ReferenceTable.h"
#include "snn/Planner/Units.h"

#include "TestModels.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <tuple>

using namespace snn::planner;

namespace {

PlannerInput inputFor(const ModelInfo &model) {
  PlannerInput input;
  input.model = model;
  for (const OpInfo &op : model.ops)
    input.tpCandidates += op.tpCandidate ? 1 : 0;
  input.pipelineUnits = int64_t(pipelineUnits(model).size());
  return input;
}

PlanRequest requestFor(const std::string &topology, Objective objective, int64_t batch) {
  PlanRequest request;
  request.topology = *parseTopology(topology);
  request.objective = objective;
  request.batchSize = batch;
  return request;
}

bool mentions(const std::vector<std::string> &lines, const std::string &text) {
  for (const std::string &line : lines)
    if (line.find(text) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST(Topology, OrderAndWorldSize) {
  Topology t = *parseTopology("pp=2, foo=1,tp=2,vpp=2,dp=3");
  ASSERT_EQ(t.dims.size(), 5u);
  EXPECT_EQ(t.dims[0].first, "dp");
  EXPECT_EQ(t.dims[1].first, "tp");
  EXPECT_EQ(t.dims[2].first, "pp");
  EXPECT_EQ(t.dims[3].first, "vpp");
  EXPECT_EQ(t.dims[4].first, "foo");
  EXPECT_EQ(t.worldSize(), 12); // vpp is not a device dimension
  EXPECT_EQ(t.str(), "dp=3,tp=2,pp=2,vpp=2,foo=1");
  EXPECT_EQ(parseTopology("")->worldSize(), 1);
}

TEST(Topology, Errors) {
  EXPECT_EQ(parseTopology("dp=0").error().message,
            "topology 'dp=0': size of 'dp' must be a positive integer, got '0'");
  EXPECT_FALSE(parseTopology("dp=-2").ok());
  EXPECT_FALSE(parseTopology("dp=x").ok());
  EXPECT_FALSE(parseTopology("dp=1.5").ok());
  EXPECT_FALSE(parseTopology("dp").ok());
  EXPECT_FALSE(parseTopology("=2").ok());
  EXPECT_EQ(parseTopology("dp=2,dp=2").error().message,
            "topology 'dp=2,dp=2': 'dp' is given twice");
  EXPECT_FALSE(parseTopology("dp=2,").ok());
  EXPECT_FALSE(parseTopology("dp=2,,tp=2").ok());
}

TEST(Options, ModesObjectivesSizes) {
  EXPECT_EQ(parseMode("zero")->optimizer, OptimizerStrategy::Zero);
  EXPECT_EQ(parseMode("dp+zero")->mode, Mode::DP);
  EXPECT_EQ(parseMode("fsdp2_tp")->mode, Mode::FSDP_TP);
  EXPECT_EQ(parseMode("ddp").error().message,
            "unknown mode 'ddp' (expected auto, none, dp, zero, fsdp, tp, fsdp_tp or pp)");
  EXPECT_EQ(*parseObjective("capacity"), Objective::Capacity);
  EXPECT_EQ(parseObjective("fast").error().message,
            "unknown objective 'fast' (expected speed, memory or capacity)");
  EXPECT_EQ(*parseByteSize("16GiB"), 16LL << 30);
  EXPECT_EQ(*parseByteSize("512MB"), 512000000);
  EXPECT_EQ(*parseByteSize("1.5Ki"), 1536);
  EXPECT_EQ(*parseByteSize("1000"), 1000);
  EXPECT_FALSE(parseByteSize("lots").ok());
  EXPECT_FALSE(parseByteSize("0").ok());
  EXPECT_FALSE(parseByteSize("-1GB").ok());
  EXPECT_FALSE(parseByteSize("5XB").ok());
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatFlops(2.5e9), "2.5 GFLOP");
  EXPECT_EQ(formatSeconds(0.0123), "12.3 ms");
}

TEST(ReferenceTable, EveryRow) {
  Features none, zero, pipe;
  none.allowPipeline = false; // pipelines are allowed by default, as in the reference
  zero.allowZero = true;
  zero.allowPipeline = false;
  pipe.allowPipeline = true;
  TableDecision d = referenceTableDecision(Objective::Speed, 1, 8, true, true, none);
  EXPECT_EQ(d.mode, Mode::None);
  EXPECT_EQ(d.memoptLevel, 0);
  EXPECT_EQ(referenceTableDecision(Objective::Memory, 1, 8, true, true, none).memoptLevel, 1);

  d = referenceTableDecision(Objective::Speed, 4, 8, true, true, zero);
  EXPECT_EQ(d.mode, Mode::DP);
  EXPECT_EQ(d.optimizer, OptimizerStrategy::Zero);
  EXPECT_EQ(d.memoptLevel, 0);
  EXPECT_EQ(referenceTableDecision(Objective::Speed, 4, 8, true, true, none).optimizer,
            OptimizerStrategy::None);

  d = referenceTableDecision(Objective::Memory, 8, 8, true, true, none);
  EXPECT_EQ(d.mode, Mode::FSDP_TP);
  EXPECT_EQ(d.dp, 4);
  EXPECT_EQ(d.tp, 2);
  EXPECT_EQ(d.memoptLevel, 1);
  EXPECT_EQ(referenceTableDecision(Objective::Memory, 2, 8, true, true, none).mode, Mode::TP);
  EXPECT_EQ(referenceTableDecision(Objective::Memory, 6, 8, false, true, none).mode, Mode::FSDP);
  EXPECT_EQ(referenceTableDecision(Objective::Memory, 3, 8, false, false, none).mode, Mode::DP);

  d = referenceTableDecision(Objective::Capacity, 4, 8, true, true, pipe);
  EXPECT_EQ(d.mode, Mode::PP);
  EXPECT_EQ(d.virtualStages, 2);
  EXPECT_EQ(referenceTableDecision(Objective::Capacity, 4, 5, true, true, pipe).virtualStages, 1);
  EXPECT_EQ(referenceTableDecision(Objective::Capacity, 4, 3, true, true, pipe).mode,
            Mode::FSDP_TP);
  EXPECT_EQ(referenceTableDecision(Objective::Capacity, 4, 8, false, true, none).mode, Mode::FSDP);
}

TEST(Recommend, SingleProcess) {
  auto plan = recommend(inputFor(test::spikingMlp(16, 8, 4)),
                        requestFor("", Objective::Speed, 8));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->mode, Mode::None);
  EXPECT_EQ(plan->memoptLevel, 0);
  EXPECT_TRUE(plan->meshShape.empty());
  EXPECT_EQ(plan->decidedBy, "cost-model");
}

TEST(Recommend, SpeedPicksDataParallelWithZeroWhenAllowed) {
  PlanRequest request = requestFor("dp=4", Objective::Speed, 64);
  request.features.allowZero = true;
  auto plan = recommend(inputFor(test::spikingMlp(784, 128, 10)), request);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->mode, Mode::DP);
  EXPECT_EQ(plan->optimizer, OptimizerStrategy::Zero); // same time as dp, less memory
  EXPECT_EQ(plan->meshShape, (std::vector<int64_t>{4}));
  EXPECT_EQ(plan->dpMeshDim, 0);
  EXPECT_TRUE(mentions(plan->rationale, "The reference table agrees"));
}

TEST(Recommend, MemoryOnConvModelDepartsFromTheTable) {
  // The table picks fsdp_tp (W = 4) because linears exist; for a conv-heavy model the
  // cost model finds fsdp smaller and says why.
  PlanRequest request = requestFor("dp=4", Objective::Memory, 32);
  auto plan = recommend(inputFor(test::csnn(32)), request);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_NE(plan->mode, Mode::FSDP_TP);
  EXPECT_TRUE(mentions(plan->rationale, "the cost model departs"));
  EXPECT_EQ(plan->memoptLevel, 1);
}

TEST(Recommend, CapacityCanChoosePipeline) {
  PlanRequest request = requestFor("pp=2", Objective::Capacity, 16);
  request.features.allowPipeline = true;
  auto plan = recommend(inputFor(test::csnn(16)), request);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->mode, Mode::PP);
  // Both 1 and 2 virtual stages are estimated (B >= 2W and 13 units >= 4).
  int pipelines = 0;
  for (const Estimate &e : plan->candidates)
    pipelines += e.mode == Mode::PP && e.feasible ? 1 : 0;
  EXPECT_EQ(pipelines, 2);
  int64_t vs = plan->ppVirtualStages;
  EXPECT_EQ(int64_t(plan->ppLayout.size()), 2 * vs);
  EXPECT_EQ(plan->ppSchedule, vs > 1 ? Schedule::Interleaved1F1B : Schedule::OneFOneB);
  EXPECT_EQ(plan->ppMicrobatches, *recommendedPipelineMicrobatches(16, 2 * vs));
  EXPECT_EQ(plan->opStage.size(), 14u);
  EXPECT_FALSE(plan->ppMemoptStages.empty());
}

TEST(Recommend, BudgetSwitchesOnRecomputationForSpeed) {
  // Twelve equal Linear -> LIF layers: the backward holds what all of them keep, which
  // checkpointing cuts to a few segments' outputs and one segment's insides. (On a CSNN
  // the first block's tensors are the peak, and recomputing rebuilds them all.)
  test::ModelBuilder b({4, -1, 256}, 4);
  int last = -1;
  for (int i = 0; i < 12; ++i)
    last = b.neuron(b.linear(last, 256, true, "layers." + std::to_string(i) + ".fc"),
                    OpKind::LIFNode, "layers." + std::to_string(i) + ".sn");
  ModelInfo model = b.build(last);
  PlanRequest request = requestFor("dp=2", Objective::Speed, 64);
  request.forced = *parseMode("dp");
  auto free = recommend(inputFor(model), request);
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(free->memoptLevel, 0);
  // Just under the plain plan: recomputation is what makes dp fit.
  request.memoryBudget = free->chosen->memoryBytes - 1;
  auto tight = recommend(inputFor(model), request);
  ASSERT_TRUE(tight.ok()) << tight.error().message;
  EXPECT_EQ(tight->memoptLevel, 1);
  EXPECT_TRUE(tight->chosen->fitsBudget);
  EXPECT_TRUE(mentions(tight->rationale, "brings the plan under the budget"));
  // Unforced, the choice fits the budget too (by recomputation or another mode).
  request.forced.reset();
  auto chosen = recommend(inputFor(model), request);
  ASSERT_TRUE(chosen.ok());
  EXPECT_TRUE(chosen->chosen->fitsBudget);
}

TEST(Recommend, FallsBackToTheTableWithoutModelInformation) {
  PlannerInput input;
  input.missingReason = "op 'x' has a dynamic dimension";
  input.tpCandidates = 2;
  PlanRequest request = requestFor("dp=4", Objective::Memory, 8);
  auto plan = recommend(input, request);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->decidedBy, "reference-table");
  EXPECT_EQ(plan->mode, Mode::FSDP_TP);
  EXPECT_EQ(plan->meshShape, (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(mentions(plan->rationale, "no model information (op 'x'"));
}

TEST(Recommend, ForcedModeErrors) {
  ModelInfo mlp = test::spikingMlp(16, 10, 4);
  auto run = [&](const std::string &topology, const std::string &mode, int64_t batch = 8) {
    PlanRequest request = requestFor(topology, Objective::Speed, batch);
    request.forced = *parseMode(mode);
    return recommend(inputFor(mlp), request);
  };
  EXPECT_EQ(run("dp=4", "fsdp_tp").error().message,
            "mode fsdp_tp needs both a dp and a tp dimension in the topology, got dp=4");
  EXPECT_EQ(run("tp=4", "tp").error().message,
            "cannot split '1' (linear) over tp=4: its 10 output features are not divisible by 4");
  EXPECT_TRUE(run("tp=2", "tp").ok());
  EXPECT_FALSE(run("dp=2,tp=2", "tp").ok()); // two axes for a 1-D mode
  EXPECT_FALSE(run("dp=2", "none").ok());
  EXPECT_FALSE(run("", "dp").ok());
  EXPECT_EQ(run("dp=8", "dp", 4).error().message,
            "batch size 4 is smaller than the dp size 8: every data-parallel rank needs a sample");
  auto pp = run("pp=8", "pp", 37);
  ASSERT_FALSE(pp.ok()); // the spiking MLP has 4 units for 8 stages
  ModelInfo noCandidates = test::csnn(4);
  for (OpInfo &op : noCandidates.ops)
    op.tpCandidate = false; // as if the roots covered no linear
  PlanRequest request = requestFor("tp=2", Objective::Speed, 8);
  request.forced = *parseMode("tp");
  EXPECT_EQ(recommend(inputFor(noCandidates), request).error().message,
            "mode tp needs a tensor-parallel candidate, and the analysis found none under "
            "the roots");
}

TEST(Recommend, RequestErrors) {
  ModelInfo mlp = test::spikingMlp(16, 8, 4);
  PlanRequest request = requestFor("dp=2,tp=2", Objective::Speed, 8);
  request.expectedWorldSize = 8;
  EXPECT_EQ(recommend(inputFor(mlp), request).error().message,
            "device mesh size 8 != topology world size 4 (dp=2,tp=2)");
  request = requestFor("dp=2", Objective::Speed, 0);
  EXPECT_FALSE(recommend(inputFor(mlp), request).ok());
  request = requestFor("dp=2", Objective::Speed, 8);
  request.memoptRatio = 0;
  EXPECT_EQ(recommend(inputFor(mlp), request).error().message,
            "memopt ratio must be finite and in (0, 1], got 0");
}

TEST(Recommend, PipelineMicrobatchErrorFromTheTable) {
  PlannerInput input;
  input.missingReason = "test";
  input.pipelineUnits = 16;
  // W = 4 and B = 37 >= 2W: two virtual stages, so 8 logical stages, as in (37, 8); one
  // virtual stage fails too ((37, 4)). Pipelines are allowed by default, so the table falls
  // back to its memory rows and says why.
  PlanRequest request = requestFor("pp=4", Objective::Capacity, 37);
  auto plan = recommend(input, request);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->mode, Mode::FSDP);
  EXPECT_TRUE(mentions(plan->rationale, "capacity objective: no pipeline fits (no microbatch "
                                        "count in [4, 16] divides batch size 37 for 4 pipeline "
                                        "stages), so as memory"));
  EXPECT_TRUE(mentions(plan->rationale, "The topology names a pp axis (pp=4)"));
  // Forced, the error is the plan's.
  request.forced = *parseMode("pp");
  EXPECT_EQ(recommend(input, request).error().message,
            "no microbatch count in [8, 32] divides batch size 37 for 8 pipeline stages");
}

TEST(Recommend, DataParallelPipeline) {
  ModelInfo model = test::csnn(8);
  PlanRequest request = requestFor("dp=2,pp=2", Objective::Speed, 16);
  request.forced = *parseMode("pp");
  auto plan = recommend(inputFor(model), request);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->mode, Mode::PP);
  EXPECT_EQ(plan->meshAxes, (std::vector<std::string>{"dp", "pp"}));
  EXPECT_EQ(plan->meshShape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(plan->dpMeshDim, 0);
  EXPECT_EQ(plan->ppMeshDim, 1);
  EXPECT_EQ(plan->tpMeshDim, -1);
  // Each replica splits its 8 samples: 2 virtual stages (8 >= 2 x 2 and 13 units >= 4).
  EXPECT_EQ(plan->ppVirtualStages, 2);
  EXPECT_EQ(plan->ppMicrobatches, *recommendedPipelineMicrobatches(8, 4));
  EXPECT_EQ(plan->ppLayout.size(), 4u);
  ASSERT_TRUE(plan->chosen);
  EXPECT_TRUE(plan->chosen->feasible);
  EXPECT_GT(plan->chosen->stepSeconds, 0);
  EXPECT_EQ(plan->chosen->mesh(), "dp=2 x pp=2 (vpp 2)");
  EXPECT_TRUE(mentions(plan->rationale, "2 data-parallel replicas of 8 samples"));
  // The same pipeline without replicas, on each replica's share: the replicas add the
  // gradient all-reduce of each rank's stages.
  PlanRequest alone = requestFor("pp=2", Objective::Speed, 8);
  alone.forced = *parseMode("pp");
  auto single = recommend(inputFor(model), alone);
  ASSERT_TRUE(single.ok()) << single.error().message;
  EXPECT_EQ(single->ppLayout, plan->ppLayout);
  EXPECT_GT(plan->chosen->commBytes, single->chosen->commBytes);
  EXPECT_GT(plan->chosen->commSeconds, single->chosen->commSeconds);
  // Unforced, the topology's dp x pp mesh is a candidate.
  request.forced.reset();
  auto chosen = recommend(inputFor(model), request);
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  int dpPipelines = 0;
  for (const Estimate &e : chosen->candidates)
    dpPipelines += e.mode == Mode::PP && e.dp == 2 && e.pp == 2 && e.feasible ? 1 : 0;
  EXPECT_EQ(dpPipelines, 2); // 1 and 2 virtual stages
}

TEST(Recommend, PipelineErrors) {
  ModelInfo model = test::csnn(8); // 13 stage units
  auto run = [&](const std::string &topology, int64_t batch,
                 const std::function<void(PlanRequest &)> &set = nullptr) {
    PlanRequest request = requestFor(topology, Objective::Speed, batch);
    request.forced = *parseMode("pp");
    if (set)
      set(request);
    auto plan = recommend(inputFor(model), request);
    return plan.ok() ? std::string("ok") : plan.error().message;
  };
  EXPECT_EQ(run("dp=2,pp=2", 7),
            "batch size 7 does not divide over dp=2: each data-parallel replica of the pipeline "
            "splits an equal share into microbatches");
  EXPECT_EQ(run("dp=2,pp=2", 12, [](PlanRequest &r) { r.ppMicrobatches = 4; }),
            "pipeline microbatches 4 do not divide the per-replica batch 6 (batch size 12 over "
            "dp=2)");
  EXPECT_EQ(run("dp=2,pp=4", 4),
            "per data-parallel replica (batch size 4 over dp=2): batch size 2 is smaller than "
            "the 4 pipeline stages (every stage needs a microbatch)");
  EXPECT_EQ(run("pp=2", 8, [](PlanRequest &r) { r.ppMicrobatches = 2; r.ppVirtualStages = 2; }),
            "pipeline needs at least stages x virtual stages = 4 microbatches, got 2");
  EXPECT_EQ(run("pp=2", 8, [](PlanRequest &r) { r.ppLayout = "6|6"; }),
            "pipeline layout '6|6' places 12 units, the model has 13");
  EXPECT_EQ(run("pp=2", 8, [](PlanRequest &r) { r.ppLayout = "4|4|5"; }),
            "pipeline layout '4|4|5' lists 3 stage(s), the plan has 4 logical stages");
  EXPECT_EQ(run("pp=2", 8, [](PlanRequest &r) { r.ppSchedule = Schedule::ZeroBubble;
                                                r.ppVirtualStages = 1; }),
            "pipeline schedule zero_bubble needs at least 2 virtual stages per rank, got 1");
  EXPECT_EQ(run("pp=2,vpp=2", 8, [](PlanRequest &r) { r.ppSchedule = Schedule::GPipe; }),
            "pipeline schedule gpipe needs 1 virtual stage per rank, got 2");
  EXPECT_EQ(run("pp=16", 16),
            "pp with 16 logical stages needs at least as many stage units (blocks); "
            "the model has 13");
  EXPECT_EQ(run("pp=2", 8, [](PlanRequest &r) { r.ppMemoptStages = {0, 4}; }),
            "pipeline memopt stage 4 is not a logical stage of the plan (0 to 3)");
  EXPECT_EQ(run("pp=2,vpp=2", 8, [](PlanRequest &r) { r.ppVirtualStages = 3; }),
            "pipeline virtual stages 3 disagree with topology vpp=2");
  EXPECT_EQ(run("pp=2", 8, [](PlanRequest &r) { r.ppVirtualStages = -1; }),
            "pipeline virtual stages -1 must not be negative");
  EXPECT_EQ(run("dp=2,tp=2", 8),
            "mode pp uses a pp axis with optional dp and tp axes, but topology dp=2,tp=2 has 2 "
            "axes larger than 1 and no pp axis");
  EXPECT_EQ(run("tp=2,pp=2", 8), "ok");
  EXPECT_EQ(run("dp=2,pp=2", 16), "ok");
}

TEST(Recommend, PipelineOverrides) {
  ModelInfo model = test::csnn(8);
  auto plan = [&](const std::function<void(PlanRequest &)> &set) {
    PlanRequest request = requestFor("pp=2", Objective::Speed, 16);
    request.forced = *parseMode("pp");
    set(request);
    auto result = recommend(inputFor(model), request);
    EXPECT_TRUE(result.ok()) << result.error().message;
    return result.ok() ? *result : Plan{};
  };
  // The planner's rule would interleave (16 >= 2 x 2); one virtual stage is asked for.
  Plan one = plan([](PlanRequest &r) { r.ppVirtualStages = 1; });
  EXPECT_EQ(one.ppVirtualStages, 1);
  EXPECT_EQ(one.ppLayout.size(), 2u);
  EXPECT_EQ(one.ppSchedule, Schedule::OneFOneB);
  EXPECT_FALSE(one.ppDelayWgrad);
  // zero_bubble delays weight gradients whatever the flag says; the flag alone does too.
  Plan zb = plan([](PlanRequest &r) { r.ppSchedule = Schedule::ZeroBubble; });
  EXPECT_EQ(zb.ppVirtualStages, 2);
  EXPECT_TRUE(zb.ppDelayWgrad);
  Plan delayed = plan([](PlanRequest &r) { r.ppDelayWgrad = true; r.ppVirtualStages = 1; });
  EXPECT_TRUE(delayed.ppDelayWgrad);
  // Stages to recompute, given: sorted, once each, and recomputation on under speed too.
  Plan memopt = plan([](PlanRequest &r) { r.ppMemoptStages = {3, 1, 1}; });
  EXPECT_EQ(memopt.ppMemoptStages, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(memopt.memoptLevel, 1);
  EXPECT_TRUE(mentions(memopt.rationale, "the stages asked for (pp-memopt-stages)"));
  Plan speed = plan([](PlanRequest &) {});
  EXPECT_EQ(speed.memoptLevel, 0);
  EXPECT_TRUE(speed.ppMemoptStages.empty());
}

TEST(Recommend, TopologyPipelineAxisIsHonouredOrExplained) {
  // Pipelines are allowed by default: capacity on a pp topology gets its pipeline.
  ModelInfo model = test::csnn(16);
  auto capacity = recommend(inputFor(model), requestFor("pp=2", Objective::Capacity, 16));
  ASSERT_TRUE(capacity.ok()) << capacity.error().message;
  EXPECT_EQ(capacity->mode, Mode::PP);
  EXPECT_EQ(capacity->meshAxes, (std::vector<std::string>{"pp"}));
  // Another choice says why not the pipeline, with both numbers.
  auto speed = recommend(inputFor(model), requestFor("pp=2", Objective::Speed, 16));
  ASSERT_TRUE(speed.ok()) << speed.error().message;
  ASSERT_NE(speed->mode, Mode::PP);
  EXPECT_TRUE(mentions(speed->rationale, "The topology names a pp axis (pp=2); the best "
                                         "pipeline, pp on pp=2"));
  PlanRequest off = requestFor("pp=2", Objective::Capacity, 16);
  off.features.allowPipeline = false;
  auto gated = recommend(inputFor(model), off);
  ASSERT_TRUE(gated.ok()) << gated.error().message;
  EXPECT_NE(gated->mode, Mode::PP);
  EXPECT_TRUE(mentions(gated->rationale, "The topology names a pp axis (pp=2), but pipelines "
                                         "are not considered (allow-pipeline=false)."));
  // No topology pp axis, no such sentence.
  auto plain = recommend(inputFor(model), requestFor("dp=2", Objective::Speed, 16));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(mentions(plain->rationale, "The topology names a pp axis"));
}

TEST(Recommend, TensorParallelPipelineMeshes) {
  ModelInfo model = test::csnn(8);
  auto forced = [&](const std::string &topology, int64_t batch) {
    PlanRequest request = requestFor(topology, Objective::Speed, batch);
    request.forced = *parseMode("pp");
    return recommend(inputFor(model), request);
  };
  // tp x pp: the tp ranks of a stage are consecutive (tp is the last axis).
  auto tpp = forced("tp=2,pp=2", 16);
  ASSERT_TRUE(tpp.ok()) << tpp.error().message;
  EXPECT_EQ(tpp->meshAxes, (std::vector<std::string>{"pp", "tp"}));
  EXPECT_EQ(tpp->meshShape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(tpp->ppMeshDim, 0);
  EXPECT_EQ(tpp->tpMeshDim, 1);
  EXPECT_EQ(tpp->dpMeshDim, -1);
  EXPECT_FALSE(tpp->tensorParallel.empty()); // the stages know their Megatron pairs
  ASSERT_TRUE(tpp->chosen);
  EXPECT_EQ(tpp->chosen->mesh(), "pp=2 x tp=2 (vpp 2)");
  // The 3-D mesh.
  auto three = forced("dp=2,tp=2,pp=2", 16);
  ASSERT_TRUE(three.ok()) << three.error().message;
  EXPECT_EQ(three->meshAxes, (std::vector<std::string>{"dp", "pp", "tp"}));
  EXPECT_EQ(three->meshShape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(three->dpMeshDim, 0);
  EXPECT_EQ(three->ppMeshDim, 1);
  EXPECT_EQ(three->tpMeshDim, 2);
  EXPECT_EQ(three->chosen->mesh(), "dp=2 x pp=2 x tp=2 (vpp 2)");
  // Splitting each stage over tp holds less per rank and talks more than the pipeline alone.
  auto alone = forced("pp=2", 16);
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  EXPECT_LT(tpp->chosen->stateBytes, alone->chosen->stateBytes);
  EXPECT_GT(tpp->chosen->commBytes, alone->chosen->commBytes);
  // A tp size that does not divide a split dimension is refused as for tp.
  ModelInfo mlp = test::spikingMlp(16, 10, 4);
  PlanRequest odd = requestFor("tp=4,pp=2", Objective::Speed, 16);
  odd.forced = *parseMode("pp");
  auto refused = recommend(inputFor(mlp), odd);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("over tp=4"), std::string::npos)
      << refused.error().message;
}

TEST(Recommend, SearchCoversEveryMeshFactorisation) {
  ModelInfo model = test::csnn(8);
  auto plan = recommend(inputFor(model), requestFor("dp=8", Objective::Speed, 64));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  // Every dp x tp x pp = 8 with pp >= 2 is a pipeline candidate (1 and 2 virtual stages where
  // the units allow); fsdp_tp covers dp x tp.
  std::set<std::tuple<int64_t, int64_t, int64_t>> pipelines, flat;
  for (const Estimate &e : plan->candidates)
    (e.mode == Mode::PP ? pipelines : flat).insert({e.dp, e.tp, e.pp});
  for (auto mesh : {std::make_tuple(4, 1, 2), std::make_tuple(2, 2, 2), std::make_tuple(1, 4, 2),
                    std::make_tuple(2, 1, 4), std::make_tuple(1, 2, 4), std::make_tuple(1, 1, 8)})
    EXPECT_TRUE(pipelines.count(mesh)) << std::get<0>(mesh) << "x" << std::get<1>(mesh) << "x"
                                       << std::get<2>(mesh);
  EXPECT_TRUE(flat.count({4, 2, 1}));
  EXPECT_TRUE(flat.count({2, 4, 1}));
  // Under a budget, the choice fits it whenever some candidate does.
  int64_t smallest = INT64_MAX, largest = 0;
  for (const Estimate &e : plan->candidates)
    if (e.feasible) {
      smallest = std::min(smallest, e.memoryBytes);
      largest = std::max(largest, e.memoryBytes);
    }
  ASSERT_LT(smallest, largest);
  for (int64_t budget : {smallest, (smallest + largest) / 2, largest}) {
    PlanRequest request = requestFor("dp=8", Objective::Speed, 64);
    request.memoryBudget = budget;
    auto limited = recommend(inputFor(model), request);
    ASSERT_TRUE(limited.ok()) << limited.error().message;
    ASSERT_TRUE(limited->chosen);
    EXPECT_LE(limited->chosen->memoryBytes, budget) << limited->chosen->label() << " on "
                                                    << limited->chosen->mesh();
  }
}

TEST(Recommend, IgnoringTheModelReturnsTheReferenceTablesChoice) {
  // A countable model whose cost model picks a pipeline for memory on 4 ranks (see
  // SearchCoversEveryMeshFactorisation's meshes); told to ignore the model, the planner
  // returns exactly the reference table's row for every objective.
  ModelInfo model = test::csnn(8);
  for (Objective objective : {Objective::Speed, Objective::Memory, Objective::Capacity}) {
    PlanRequest request = requestFor("dp=4", objective, 32);
    request.useCostModel = false;
    auto plan = recommend(inputFor(model), request);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    TableDecision want = referenceTableDecision(objective, 4, 32, true, true, request.features);
    EXPECT_EQ(plan->decidedBy, "reference-table");
    EXPECT_EQ(plan->mode, want.mode);
    EXPECT_EQ(plan->optimizer, want.optimizer);
    EXPECT_TRUE(mentions(plan->rationale, "the cost model is switched off"));
  }
  PlanRequest memory = requestFor("dp=4", Objective::Memory, 32);
  auto modelled = recommend(inputFor(model), memory);
  ASSERT_TRUE(modelled.ok());
  memory.useCostModel = false;
  auto table = recommend(inputFor(model), memory);
  ASSERT_TRUE(table.ok());
  EXPECT_NE(modelled->mode, table->mode); // the switch is what changed the answer
}

TEST(Recommend, OptimizerStatesCountedPerParameter) {
  PlannerInput input;
  input.model = test::spikingMlp(64, 32, 10);
  PlanRequest request;
  request.batchSize = 8;
  auto stateWith = [&](int states) {
    request.hardware.optimizerStatesPerParam = states;
    auto plan = recommend(input, request);
    EXPECT_TRUE(plan.ok() && plan->chosen);
    return plan.ok() && plan->chosen ? plan->chosen->stateBytes : int64_t(-1);
  };
  ModelCost cost = modelCost(*input.model, 1);
  int64_t adam = stateWith(2), momentum = stateWith(1), sgd = stateWith(0);
  // Parameters, gradients and the optimizer's states, plus the buffers.
  EXPECT_EQ(adam, 4 * cost.paramBytes + cost.bufferBytes);
  EXPECT_EQ(adam - momentum, cost.paramBytes);
  EXPECT_EQ(momentum - sgd, cost.paramBytes);
}
