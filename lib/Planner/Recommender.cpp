//===- Recommender.cpp - Choosing a parallel mode -------------------------===//
//
// Three ways to a plan: a forced mode (checked, then estimated), the cost model (estimate
// every mode that can use the world and pick by objective), and the reference table (when
// the IR gives no model information, or when the cost model is switched off). All three
// end in the same finishing step, so a plan looks the same whoever decided it.
//
// The pieces they share (Decision.h): the candidates (Candidates.cpp), a pipeline's shape
// (PipelineChoice.cpp), comparing under the objective (Choice.cpp), the finishing step
// (FinishPlan.cpp) and the rationale's sentences (Rationale.cpp).
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/Recommender.h"

#include "Decision.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::planner {

namespace {

std::string describe(const ModeConfig &c) {
  Estimate e = skeleton(c);
  return e.label() + " on " + e.mesh();
}

// --- The three ways to a plan ------------------------------------------------------------

Result<Plan> decideByCostModel(Context &ctx) {
  std::vector<Estimate> candidates = enumerateCandidates(ctx);
  bool fits = true;
  int chosen = choose(ctx, candidates, fits);
  if (chosen < 0) {
    std::string reasons;
    for (const Estimate &e : candidates)
      reasons += (reasons.empty() ? "" : "; ") + e.label() + ": " + e.infeasibleReason;
    return makeError("no mode can use " + std::to_string(ctx.world) + " ranks at batch size " +
                     std::to_string(ctx.batch) + " (" + reasons + ")");
  }
  const Estimate &e = candidates[chosen];
  Plan plan = finish(ctx, static_cast<const ModeConfig &>(e), "cost-model");
  plan.rationale.push_back(modelSentence(ctx));
  plan.rationale.push_back("Chose " + e.label() + " on " + e.mesh() + " for the " +
                           objectiveName(ctx.request.objective) + " objective: " +
                           estimateSentence(e) + ".");
  plan.rationale.push_back(comparisonSentence(ctx, candidates, chosen));
  plan.rationale.push_back(departureSentence(ctx, candidates, chosen));
  plan.rationale.push_back(memoptSentence(ctx, e));
  if (e.mode == Mode::PP)
    plan.rationale.push_back(pipelineSentence(ctx, e));
  if (std::string why = pipelineTopologySentence(ctx, candidates, chosen); !why.empty())
    plan.rationale.push_back(why);
  if (!fits)
    ctx.notes.push_back("no candidate fits the per-rank budget " +
                        formatBytes(ctx.request.memoryBudget) + "; chose the smallest (" +
                        formatBytes(e.memoryBytes) + ")");
  for (const Estimate &c : candidates) {
    if (!c.feasible)
      ctx.notes.push_back("not feasible: " + c.label() + " (" + c.infeasibleReason + ")");
    else if (!c.fitsBudget && fits)
      ctx.notes.push_back("over the budget " + formatBytes(ctx.request.memoryBudget) + ": " +
                          c.label() + " on " + c.mesh() + " (" + formatBytes(c.memoryBytes) +
                          ")");
  }
  std::vector<std::string> gated;
  if (ctx.world > 1 && !ctx.request.features.allowZero)
    gated.push_back("zero (allow-zero)");
  if (ctx.world > 1 && !ctx.request.features.allowPipeline)
    gated.push_back("pp (allow-pipeline)");
  if (!gated.empty()) {
    std::string text = "not considered without their feature flag:";
    for (const std::string &g : gated)
      text += " " + g;
    ctx.notes.push_back(text);
  }
  noteTopology(ctx, plan);
  plan.candidates = std::move(candidates);
  plan.chosen = e;
  return plan;
}

/// Mesh of a forced mode: the topology's axes for fsdp_tp, all ranks on one axis otherwise.
Result<ModeConfig> forcedConfig(Context &ctx, const ModeRequest &forced) {
  const Topology &t = ctx.request.topology;
  int64_t w = ctx.world;
  int memopt = firstMemoptLevel(ctx);
  if (forced.mode == Mode::None) {
    if (w > 1)
      return makeError("mode none runs a single process, but topology " + t.str() +
                       " has world size " + std::to_string(w));
    return flatConfig(Mode::None, OptimizerStrategy::None, 1, 1, memopt);
  }
  if (w <= 1)
    return makeError(std::string("mode ") + modeName(forced.mode) +
                     " needs more than one rank (topology " + t.str() + ")");
  if (forced.mode == Mode::FSDP_TP) {
    if (!t.has(meshaxis::kDataParallel) || !t.has(meshaxis::kTensorParallel))
      return makeError("mode fsdp_tp needs both a dp and a tp dimension in the topology, got " +
                       t.str());
    if (t.size(meshaxis::kDataParallel) * t.size(meshaxis::kTensorParallel) != w)
      return makeError("mode fsdp_tp uses the dp x tp mesh, but topology " + t.str() +
                       " has other dimensions larger than 1");
    return flatConfig(Mode::FSDP_TP, OptimizerStrategy::None, t.size(meshaxis::kDataParallel),
                      t.size(meshaxis::kTensorParallel), memopt);
  }
  int axes = int(std::count_if(t.dims.begin(), t.dims.end(), [](const auto &d) {
    return d.second > 1 && d.first != meshaxis::kVirtualPipeline;
  }));
  if (forced.mode == Mode::PP) {
    if (auto mesh = topologyPipelineMesh(ctx))
      return pipelineConfig(ctx, *mesh, 0, memopt);
    if (axes > 1)
      return makeError("mode pp uses a pp axis with optional dp and tp axes, but topology " +
                       t.str() + (t.has(meshaxis::kPipeline)
                                      ? " has other axes larger than 1"
                                      : " has " +
                       std::to_string(axes) + " axes larger than 1 and no pp axis"));
    return pipelineConfig(ctx, {1, 1, w}, 0, memopt);
  }
  if (axes > 1)
    return makeError(std::string("mode ") + modeName(forced.mode) +
                     " uses one mesh axis, but topology " + t.str() + " has " +
                     std::to_string(axes) + " (use fsdp_tp for dp x tp, or a single axis)");
  switch (forced.mode) {
  case Mode::TP: return flatConfig(Mode::TP, OptimizerStrategy::None, 1, w, memopt);
  default: return flatConfig(forced.mode, forced.optimizer, w, 1, memopt);
  }
}

Result<Plan> decideForced(Context &ctx, const ModeRequest &forced) {
  auto config = forcedConfig(ctx, forced);
  if (!config)
    return config.error();
  if (Status s = checkConfig(ctx, *config); !s)
    return s.error();
  Plan plan = finish(ctx, *config, "forced");
  plan.rationale.push_back("Mode " + describe(*config) + " was forced.");
  if (!ctx.estimator) {
    plan.rationale.push_back("No estimates: " + ctx.input.missingReason + ".");
    return plan;
  }
  Estimate e = estimateWithMemopt(ctx, *config);
  plan.memoptLevel = e.memoptLevel;
  plan.rationale.push_back(modelSentence(ctx));
  plan.rationale.push_back("The forced plan is " + estimateSentence(e) + ".");
  plan.rationale.push_back(memoptSentence(ctx, e));
  if (e.mode == Mode::PP)
    plan.rationale.push_back(pipelineSentence(ctx, e));
  std::vector<Estimate> others = enumerateCandidates(ctx);
  bool fits = true;
  int best = choose(ctx, others, fits);
  if (best >= 0 && !sameDecision(TableDecision{e.mode, e.optimizer, 0, e.dp, e.tp, e.pp, 0, ""},
                                 others[best]))
    plan.rationale.push_back("The cost model would choose " + others[best].label() + " on " +
                             others[best].mesh() + " (" + metricOf(ctx, others[best]) +
                             " against " + metricOf(ctx, e) + ").");
  if (!e.fitsBudget)
    ctx.notes.push_back("the forced plan needs " + formatBytes(e.memoryBytes) +
                        " per rank, over the budget " + formatBytes(ctx.request.memoryBudget));
  plan.candidates = {e};
  plan.chosen = e;
  return plan;
}

Result<Plan> decideByTable(Context &ctx) {
  TableDecision t = referenceTableDecision(ctx.request.objective, ctx.world, ctx.batch,
                                           ctx.tpAvailable(), ctx.input.hasTrainableParams,
                                           ctx.request.features);
  auto tableChoice = tableConfig(ctx, t);
  if (!tableChoice)
    return tableChoice.error();
  ModeConfig config = *tableChoice;
  if (Status s = checkConfig(ctx, config); !s)
    return s.error();
  Plan plan = finish(ctx, config, "reference-table");
  std::string why = ctx.estimator ? "the cost model is switched off"
                                  : "no model information (" + ctx.input.missingReason + ")";
  plan.rationale.push_back("Decided by the reference table because " + why + ": " + t.reason +
                           ".");
  if (t.mode != Mode::PP)
    if (std::string axis = pipelineTopologySentence(ctx, {}, -1); !axis.empty())
      plan.rationale.push_back(axis);
  if (ctx.estimator) {
    Estimate e = ctx.estimator->estimate(config, ctx.request.memoryBudget);
    plan.rationale.push_back("Chose " + describe(config) + ": " + estimateSentence(e) + ".");
    plan.candidates = {e};
    plan.chosen = e;
  }
  if (t.mode == Mode::PP)
    plan.rationale.push_back(pipelineSentence(ctx, skeleton(config)));
  return plan;
}

Status checkRequest(const PlanRequest &request, int64_t world) {
  if (request.expectedWorldSize > 0 && request.expectedWorldSize != world)
    return makeError("device mesh size " + std::to_string(request.expectedWorldSize) +
                     " != topology world size " + std::to_string(world) + " (" +
                     request.topology.str() + ")");
  if (request.batchSize < 0 || (world > 1 && request.batchSize == 0))
    return makeError("batch size must be a positive integer (the global batch to plan for), "
                     "got " + std::to_string(request.batchSize));
  if (!std::isfinite(request.memoptRatio) || request.memoptRatio <= 0 ||
      request.memoptRatio > 1) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%g", request.memoptRatio);
    return makeError(std::string("memopt ratio must be finite and in (0, 1], got ") + buffer);
  }
  if (request.topology.has(meshaxis::kVirtualPipeline) && request.forced &&
      request.forced->mode != Mode::PP)
    return makeError("topology dimension vpp (virtual pipeline stages) needs mode pp");
  int64_t vpp = request.topology.size(meshaxis::kVirtualPipeline);
  if (request.ppVirtualStages < 0 || (vpp > 0 && request.ppVirtualStages > 0 &&
                                      request.ppVirtualStages != vpp))
    return makeError("pipeline virtual stages " + std::to_string(request.ppVirtualStages) +
                     (request.ppVirtualStages < 0
                          ? " must not be negative"
                          : " disagree with topology vpp=" + std::to_string(vpp)));
  return Ok{};
}

} // namespace

Result<Plan> recommend(const PlannerInput &input, const PlanRequest &request) {
  Context ctx{input, request};
  ctx.world = request.topology.worldSize();
  if (Status s = checkRequest(request, ctx.world); !s)
    return s.error();
  ctx.batch = request.batchSize > 0 ? request.batchSize : 1;
  if (request.batchSize == 0)
    ctx.notes.push_back("no batch size given: estimates are for batch 1");
  int64_t minUnits = wantedPipelineUnits(request, ctx.world);
  if (input.model)
    ctx.estimator.emplace(*input.model, request.hardware, ctx.batch, minUnits);
  ctx.structure = input.model ? &*input.model : input.structure ? &*input.structure : nullptr;
  if (ctx.structure) {
    ctx.units = pipelineUnits(*ctx.structure, minUnits);
    ctx.tensorParallel = planTensorParallel(*ctx.structure);
  }

  Result<Plan> plan = request.forced                          ? decideForced(ctx, *request.forced)
                      : (request.useCostModel && ctx.estimator) ? decideByCostModel(ctx)
                                                                : decideByTable(ctx);
  if (!plan)
    return plan;
  Plan result = std::move(plan.value());
  result.notes.insert(result.notes.end(), ctx.notes.begin(), ctx.notes.end());
  return result;
}

} // namespace snn::planner
