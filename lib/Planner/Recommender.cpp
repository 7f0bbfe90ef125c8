//===- Recommender.cpp - Choosing a parallel mode -------------------------===//
//
// Three ways to a plan: a forced mode (checked, then estimated), the cost model (estimate
// every mode that can use the world and pick by objective), and the reference table (when
// the IR gives no model information, or when the cost model is switched off). All three
// end in the same finishing step, so a plan looks the same whoever decided it.
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/Recommender.h"

#include "Decision.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace snn::planner {

namespace {

/// A pipeline's mesh: pp stages, each split over tp ranks, replicated dp times.
struct PipelineMesh {
  int64_t dp = 1, tp = 1, pp = 1;
};

std::string describe(const ModeConfig &c) {
  Estimate e = skeleton(c);
  return e.label() + " on " + e.mesh();
}

// --- Pipeline configuration ---------------------------------------------------------------

int64_t defaultVirtualStages(const Context &ctx, int64_t stages, int64_t dp = 1) {
  if (ctx.request.ppVirtualStages > 0)
    return ctx.request.ppVirtualStages;
  if (int64_t vpp = ctx.request.topology.size("vpp"))
    return vpp;
  // An explicit layout lists every logical stage: its length says how many per rank.
  const std::string &layout = ctx.request.ppLayout;
  int64_t listed = layout.empty() ? 0 : 1 + std::count(layout.begin(), layout.end(), '|');
  if (listed > 0 && listed % stages == 0)
    return listed / stages;
  // A forced schedule says whether it interleaves.
  if (std::optional<Schedule> schedule = ctx.request.ppSchedule)
    return *schedule == Schedule::GPipe || *schedule == Schedule::OneFOneB ? 1 : 2;
  // The reference's rule: two virtual stages once every rank can take two microbatches
  // (of its data-parallel replica's share of the batch).
  bool enoughUnits = ctx.request.ppLayout.empty() ? ctx.unitCount() >= 2 * stages : true;
  return ctx.batch / dp >= 2 * stages && enoughUnits ? 2 : 1;
}

Result<std::vector<int64_t>> stageLayout(const Context &ctx, int64_t chunks) {
  int64_t units = ctx.unitCount();
  if (!ctx.request.ppLayout.empty())
    return parseStageLayout(ctx.request.ppLayout, chunks, units);
  if (units < chunks)
    return makeError("pp with " + std::to_string(chunks) +
                     " logical stages needs at least as many stage units (blocks); "
                     "the model has " + std::to_string(units));
  std::vector<double> costs = ctx.estimator ? ctx.estimator->unitCosts()
                                            : std::vector<double>(size_t(units), 1.0);
  return balancedStageLayout(costs, chunks);
}

/// Microbatches of one data-parallel replica's share of the batch (all of it without dp):
/// given, or the reference's recommendation.
Result<int64_t> pipelineMicrobatches(const Context &ctx, const ModeConfig &c) {
  std::string over = " over dp=" + std::to_string(c.dp);
  if (ctx.batch % c.dp != 0)
    return makeError("batch size " + std::to_string(ctx.batch) + " does not divide" + over +
                     ": each data-parallel replica of the pipeline splits an equal share into "
                     "microbatches");
  int64_t share = ctx.batch / c.dp;
  std::string what = c.dp > 1 ? "the per-replica batch " + std::to_string(share) +
                                    " (batch size " + std::to_string(ctx.batch) + over + ")"
                              : "batch size " + std::to_string(ctx.batch);
  if (int64_t m = ctx.request.ppMicrobatches; m > 0) {
    if (share % m != 0)
      return makeError("pipeline microbatches " + std::to_string(m) + " do not divide " + what);
    return m;
  }
  auto m = recommendedPipelineMicrobatches(share, c.pp * c.virtualStages);
  if (!m && c.dp > 1)
    return makeError("per data-parallel replica (batch size " + std::to_string(ctx.batch) +
                     over + "): " + m.error().message);
  return m;
}

/// The stages that recompute their activations: the ones asked for (which switches
/// recomputation on), else the costliest by memopt ratio when the plan recomputes.
Status pipelineMemopt(const Context &ctx, ModeConfig &c) {
  int64_t chunks = int64_t(c.layout.size());
  std::vector<int64_t> given = ctx.request.ppMemoptStages;
  if (!given.empty()) {
    for (int64_t k : given)
      if (k < 0 || k >= chunks)
        return makeError("pipeline memopt stage " + std::to_string(k) +
                         " is not a logical stage of the plan (0 to " +
                         std::to_string(chunks - 1) + ")");
    std::sort(given.begin(), given.end());
    given.erase(std::unique(given.begin(), given.end()), given.end());
    c.memoptStages = given;
    c.memoptLevel = std::max(c.memoptLevel, 1);
    return Ok{};
  }
  if (c.memoptLevel == 0)
    return Ok{};
  std::vector<double> costs = ctx.estimator ? ctx.estimator->stageCosts(c.layout)
                                            : std::vector<double>(c.layout.begin(),
                                                                  c.layout.end());
  auto stagesToRecompute = recommendPipelineMemoptStages(costs, ctx.request.memoptRatio);
  if (!stagesToRecompute)
    return stagesToRecompute.error();
  c.memoptStages = *stagesToRecompute;
  return Ok{};
}

/// A pipeline of `mesh.pp` stages, each stage `mesh.tp` ranks splitting its layers, the whole
/// pipeline `mesh.dp` times as data-parallel replicas, with `virtualStages` logical stages
/// per pp coordinate (0: the default).
Result<ModeConfig> pipelineConfig(const Context &ctx, PipelineMesh mesh, int64_t virtualStages,
                                  int memoptLevel) {
  ModeConfig c;
  c.mode = Mode::PP;
  c.dp = mesh.dp;
  c.tp = mesh.tp;
  c.pp = mesh.pp;
  int64_t dp = mesh.dp, stages = mesh.pp;
  c.virtualStages = virtualStages > 0 ? virtualStages : defaultVirtualStages(ctx, stages, dp);
  c.memoptLevel = memoptLevel;
  auto layout = stageLayout(ctx, stages * c.virtualStages);
  if (!layout)
    return layout.error();
  c.layout = *layout;
  c.schedule = ctx.request.ppSchedule.value_or(c.virtualStages > 1 ? Schedule::Interleaved1F1B
                                                                    : Schedule::OneFOneB);
  c.delayWgrad = ctx.request.ppDelayWgrad || *c.schedule == Schedule::ZeroBubble;
  auto microbatches = pipelineMicrobatches(ctx, c);
  if (!microbatches)
    return microbatches.error();
  c.microbatches = *microbatches;
  if (Status s = validateSchedule(*c.schedule, stages, c.virtualStages, c.microbatches); !s)
    return s.error();
  if (Status s = pipelineMemopt(ctx, c); !s)
    return s.error();
  return c;
}

// --- Checks shared by forced and table decisions ------------------------------------------

Status checkDataParallelBatch(const Context &ctx, int64_t dp) {
  if (ctx.batch < dp)
    return makeError("batch size " + std::to_string(ctx.batch) + " is smaller than the dp size " +
                     std::to_string(dp) + ": every data-parallel rank needs a sample");
  return Ok{};
}

Status checkTensorParallel(const Context &ctx, Mode mode, int64_t tp) {
  if (!ctx.tpAvailable())
    return makeError(std::string("mode ") + modeName(mode) +
                     " needs a tensor-parallel candidate, and the analysis found none under "
                     "the roots");
  if (ctx.estimator)
    return checkTensorParallelDivisible(ctx.estimator->model(), ctx.estimator->tensorParallel(),
                                        tp);
  return Ok{};
}

Status checkConfig(const Context &ctx, const ModeConfig &c) {
  if (c.mode == Mode::DP || c.mode == Mode::FSDP || c.mode == Mode::FSDP_TP)
    if (Status s = checkDataParallelBatch(ctx, c.dp); !s)
      return s;
  if (c.mode == Mode::TP || c.mode == Mode::FSDP_TP || (c.mode == Mode::PP && c.tp > 1))
    return checkTensorParallel(ctx, c.mode, c.tp);
  return Ok{};
}

// --- Estimates ---------------------------------------------------------------------------

int firstMemoptLevel(const Context &ctx) {
  return ctx.request.objective == Objective::Speed ? 0 : 1;
}

/// Estimates `config`; under the speed objective, recomputation is switched on only when
/// that is what makes the plan fit the budget.
Estimate estimateWithMemopt(const Context &ctx, ModeConfig config) {
  const Estimator &est = *ctx.estimator;
  Estimate e = est.estimate(config, ctx.request.memoryBudget);
  if (e.fitsBudget || config.memoptLevel > 0 || config.mode == Mode::PP)
    return e;
  config.memoptLevel = 1;
  Estimate recomputed = est.estimate(config, ctx.request.memoryBudget);
  return recomputed.memoryBytes < e.memoryBytes ? recomputed : e;
}

Estimate infeasible(const ModeConfig &c, const std::string &reason) {
  Estimate e = skeleton(c);
  e.feasible = false;
  e.infeasibleReason = reason;
  return e;
}

ModeConfig flatConfig(Mode mode, OptimizerStrategy optimizer, int64_t dp, int64_t tp,
                      int memoptLevel) {
  ModeConfig c;
  c.mode = mode;
  c.optimizer = optimizer;
  c.dp = dp;
  c.tp = tp;
  c.memoptLevel = memoptLevel;
  return c;
}

void addCandidate(const Context &ctx, const ModeConfig &c, std::vector<Estimate> &out) {
  if (Status s = checkConfig(ctx, c); !s)
    out.push_back(infeasible(c, s.error().message));
  else
    out.push_back(estimateWithMemopt(ctx, c));
}

/// Pipelines of `stages` ranks, `dp` replicas each, with 1 and 2 virtual stages per rank (the
/// reference's rule picks 2 whenever the batch allows; interleaving unbalanced chunks can be
/// slower, so both are estimated). A fixed count (topology vpp, pp-virtual-stages, explicit
/// layout) is the only one tried.
void addPipelineCandidates(const Context &ctx, PipelineMesh mesh, int memopt,
                           std::vector<Estimate> &out) {
  int64_t dp = mesh.dp, stages = mesh.pp;
  bool fixed = ctx.request.topology.has("vpp") || ctx.request.ppVirtualStages > 0 ||
               !ctx.request.ppLayout.empty();
  std::vector<int64_t> counts = fixed ? std::vector<int64_t>{defaultVirtualStages(ctx, stages, dp)}
                                      : std::vector<int64_t>{1, 2};
  std::optional<Error> firstError;
  bool any = false;
  for (int64_t vs : counts) {
    if (!fixed && vs == 2 && (ctx.batch / dp < 2 * stages || ctx.unitCount() < 2 * stages))
      continue; // the reference's condition for interleaving, and enough units for it
    auto pp = pipelineConfig(ctx, mesh, vs, memopt);
    if (pp) {
      if (Status s = checkConfig(ctx, *pp); !s)
        out.push_back(infeasible(*pp, s.error().message));
      else
        out.push_back(ctx.estimator->estimate(*pp, ctx.request.memoryBudget));
      any = true;
    } else if (!firstError) {
      firstError = pp.error();
    }
  }
  if (!any) {
    ModeConfig failed = flatConfig(Mode::PP, OptimizerStrategy::None, dp, mesh.tp, memopt);
    failed.pp = stages;
    failed.virtualStages = defaultVirtualStages(ctx, stages, dp);
    out.push_back(infeasible(failed, firstError ? firstError->message : "no pipeline layout"));
  }
}

/// The topology's pipeline mesh when it names a pp axis and its dp and tp axes (absent: 1)
/// make up the world.
std::optional<PipelineMesh> topologyPipelineMesh(const Context &ctx) {
  const Topology &t = ctx.request.topology;
  PipelineMesh mesh{std::max<int64_t>(t.size("dp"), 1), std::max<int64_t>(t.size("tp"), 1),
                    t.size("pp")};
  if (mesh.pp > 1 && mesh.dp * mesh.tp * mesh.pp == ctx.world)
    return mesh;
  return std::nullopt;
}

/// Every factorisation dp x tp x pp of the world with at least two stages (tp only when the
/// analysis found a tensor-parallel candidate).
std::vector<PipelineMesh> pipelineMeshes(const Context &ctx) {
  std::vector<PipelineMesh> meshes;
  int64_t w = ctx.world;
  for (int64_t pp = 2; pp <= w; ++pp)
    for (int64_t tp = 1; w % pp == 0 && tp <= w / pp; ++tp)
      if ((w / pp) % tp == 0 && (tp == 1 || ctx.tpAvailable()))
        meshes.push_back({w / pp / tp, tp, pp});
  return meshes;
}

std::vector<Estimate> enumerateCandidates(const Context &ctx) {
  std::vector<Estimate> out;
  int64_t w = ctx.world;
  int memopt = firstMemoptLevel(ctx);
  if (w <= 1) {
    out.push_back(estimateWithMemopt(ctx, flatConfig(Mode::None, OptimizerStrategy::None, 1, 1,
                                                     memopt)));
    return out;
  }
  addCandidate(ctx, flatConfig(Mode::DP, OptimizerStrategy::None, w, 1, memopt), out);
  if (ctx.request.features.allowZero)
    addCandidate(ctx, flatConfig(Mode::DP, OptimizerStrategy::Zero, w, 1, memopt), out);
  if (ctx.input.hasTrainableParams)
    addCandidate(ctx, flatConfig(Mode::FSDP, OptimizerStrategy::None, w, 1, memopt), out);
  if (ctx.tpAvailable()) {
    addCandidate(ctx, flatConfig(Mode::TP, OptimizerStrategy::None, 1, w, memopt), out);
    for (int64_t t = 2; t < w; ++t)
      if (w % t == 0)
        addCandidate(ctx, flatConfig(Mode::FSDP_TP, OptimizerStrategy::None, w / t, t, memopt),
                     out);
  }
  if (ctx.request.features.allowPipeline)
    for (PipelineMesh mesh : pipelineMeshes(ctx))
      addPipelineCandidates(ctx, mesh, memopt, out);
  return out;
}

// --- Finishing a plan --------------------------------------------------------------------

void setMesh(Plan &plan, const ModeConfig &c) {
  switch (c.mode) {
  case Mode::None: break;
  case Mode::DP:
  case Mode::FSDP:
    plan.meshAxes = {"dp"};
    plan.meshShape = {c.dp};
    plan.dpMeshDim = 0;
    break;
  case Mode::TP:
    plan.meshAxes = {"tp"};
    plan.meshShape = {c.tp};
    plan.tpMeshDim = 0;
    break;
  case Mode::FSDP_TP:
    plan.meshAxes = {"dp", "tp"};
    plan.meshShape = {c.dp, c.tp};
    plan.dpMeshDim = 0;
    plan.tpMeshDim = 1;
    break;
  case Mode::PP:
    // Ranks are row-major over (dp, pp, tp), axes of size 1 left out: the tp ranks of a
    // stage are consecutive (they talk in every layer), then the stages of one replica.
    if (c.dp > 1) {
      plan.dpMeshDim = int64_t(plan.meshAxes.size());
      plan.meshAxes.push_back("dp");
      plan.meshShape.push_back(c.dp);
    }
    plan.ppMeshDim = int64_t(plan.meshAxes.size());
    plan.meshAxes.push_back("pp");
    plan.meshShape.push_back(c.pp);
    if (c.tp > 1) {
      plan.tpMeshDim = int64_t(plan.meshAxes.size());
      plan.meshAxes.push_back("tp");
      plan.meshShape.push_back(c.tp);
    }
    break;
  }
}

void setPipeline(const Context &ctx, Plan &plan, const ModeConfig &c) {
  if (c.mode != Mode::PP)
    return;
  plan.ppMicrobatches = c.microbatches;
  plan.ppSchedule = c.schedule;
  plan.ppVirtualStages = c.virtualStages;
  plan.ppLayout = c.layout;
  plan.ppMemoptStages = c.memoptStages;
  plan.ppDelayWgrad = c.delayWgrad;
  if (!ctx.structure)
    return;
  plan.units = ctx.units;
  plan.opStage.assign(ctx.structure->ops.size(), 0);
  int64_t unit = 0;
  for (size_t stage = 0; stage < c.layout.size(); ++stage)
    for (int64_t i = 0; i < c.layout[stage]; ++i, ++unit)
      for (int op : plan.units[unit].ops)
        plan.opStage[op] = int64_t(stage);
}

Plan finish(Context &ctx, const ModeConfig &c, const std::string &decidedBy) {
  Plan plan;
  plan.mode = c.mode;
  plan.objective = ctx.request.objective;
  plan.optimizer = c.optimizer;
  plan.memoptLevel = c.memoptLevel;
  plan.decidedBy = decidedBy;
  setMesh(plan, c);
  setPipeline(ctx, plan, c);
  if (ctx.structure && (c.mode == Mode::TP || c.mode == Mode::FSDP_TP || c.tp > 1)) {
    plan.tensorParallel = ctx.tensorParallel;
    for (const std::string &note : plan.tensorParallel.notes)
      ctx.notes.push_back(note);
  }
  if (c.dp > 1 && ctx.batch % c.dp != 0)
    ctx.notes.push_back("batch size " + std::to_string(ctx.batch) + " does not divide over dp=" +
                        std::to_string(c.dp) + ": the largest data-parallel shard has " +
                        std::to_string((ctx.batch + c.dp - 1) / c.dp) + " samples");
  return plan;
}


void noteTopology(Context &ctx, const Plan &plan) {
  const Topology &t = ctx.request.topology;
  std::vector<std::pair<std::string, int64_t>> given;
  for (const auto &dim : t.dims)
    if (dim.second > 1 && dim.first != "vpp")
      given.push_back(dim);
  std::vector<std::pair<std::string, int64_t>> chosen;
  for (size_t i = 0; i < plan.meshAxes.size(); ++i)
    chosen.emplace_back(plan.meshAxes[i], plan.meshShape[i]);
  if (!given.empty() && given != chosen)
    ctx.notes.push_back("topology " + t.str() + " fixes the world size " +
                        std::to_string(ctx.world) + "; the planner chose its own mesh for the "
                        "mode (force a mode to use the topology's axes)");
  if (t.has("vpp") && plan.mode != Mode::PP)
    ctx.notes.push_back("topology vpp=" + std::to_string(t.size("vpp")) +
                        " (virtual pipeline stages) does not apply to " + modeName(plan.mode));
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
    if (!t.has("dp") || !t.has("tp"))
      return makeError("mode fsdp_tp needs both a dp and a tp dimension in the topology, got " +
                       t.str());
    if (t.size("dp") * t.size("tp") != w)
      return makeError("mode fsdp_tp uses the dp x tp mesh, but topology " + t.str() +
                       " has other dimensions larger than 1");
    return flatConfig(Mode::FSDP_TP, OptimizerStrategy::None, t.size("dp"), t.size("tp"),
                      memopt);
  }
  int axes = int(std::count_if(t.dims.begin(), t.dims.end(), [](const auto &d) {
    return d.second > 1 && d.first != "vpp";
  }));
  if (forced.mode == Mode::PP) {
    if (auto mesh = topologyPipelineMesh(ctx))
      return pipelineConfig(ctx, *mesh, 0, memopt);
    if (axes > 1)
      return makeError("mode pp uses a pp axis with optional dp and tp axes, but topology " +
                       t.str() + (t.has("pp") ? " has other axes larger than 1" : " has " +
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

/// The table's pipeline row as it can run: its virtual stages unless the request fixes them;
/// 1 when 2 do not fit the model (too few units); the memory rows when no pipeline does
/// (pipelines are allowed by default, so a small model must not fail for it). `t` is updated
/// to what runs.
Result<ModeConfig> tableConfig(const Context &ctx, TableDecision &t) {
  if (t.mode != Mode::PP)
    return flatConfig(t.mode, t.optimizer, t.dp, t.tp, t.memoptLevel);
  const PlanRequest &r = ctx.request;
  bool fixed = r.topology.has("vpp") || r.ppVirtualStages > 0 || !r.ppLayout.empty();
  auto pp = pipelineConfig(ctx, {1, 1, t.pp}, fixed ? 0 : t.virtualStages, t.memoptLevel);
  if (!pp && !fixed && t.virtualStages == 2) {
    std::string why = pp.error().message;
    pp = pipelineConfig(ctx, {1, 1, t.pp}, 1, t.memoptLevel);
    if (pp)
      t.reason += "; 1 virtual stage per rank, as 2 do not fit (" + why + ")";
  }
  if (pp) {
    t.virtualStages = pp->virtualStages;
    return pp;
  }
  Features noPipeline = r.features;
  noPipeline.allowPipeline = false;
  TableDecision m = referenceTableDecision(r.objective, ctx.world, ctx.batch, ctx.tpAvailable(),
                                           ctx.input.hasTrainableParams, noPipeline);
  m.reason = "capacity objective: no pipeline fits (" + pp.error().message + "), so as memory" +
             m.reason.substr(m.reason.find(';'));
  t = m;
  return flatConfig(t.mode, t.optimizer, t.dp, t.tp, t.memoptLevel);
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
  if (request.topology.has("vpp") && request.forced && request.forced->mode != Mode::PP)
    return makeError("topology dimension vpp (virtual pipeline stages) needs mode pp");
  int64_t vpp = request.topology.size("vpp");
  if (request.ppVirtualStages < 0 || (vpp > 0 && request.ppVirtualStages > 0 &&
                                      request.ppVirtualStages != vpp))
    return makeError("pipeline virtual stages " + std::to_string(request.ppVirtualStages) +
                     (request.ppVirtualStages < 0
                          ? " must not be negative"
                          : " disagree with topology vpp=" + std::to_string(vpp)));
  return Ok{};
}

/// How many stage units a pipeline for this request may need: one per logical stage of the
/// explicit layout, else the pp size (the topology's, or every rank) times its virtual
/// stages (asked for, the topology's, 1 for a forced gpipe or 1f1b, or the 2 the planner
/// tries).
int64_t wantedPipelineUnits(const PlanRequest &request, int64_t world) {
  const std::string &layout = request.ppLayout;
  if (!layout.empty())
    return 1 + int64_t(std::count(layout.begin(), layout.end(), '|'));
  int64_t pp = request.topology.has("pp") ? request.topology.size("pp") : world;
  if (pp <= 1)
    return 0;
  int64_t vpp = 2;
  if (request.ppVirtualStages > 0)
    vpp = request.ppVirtualStages;
  else if (request.topology.has("vpp"))
    vpp = request.topology.size("vpp");
  // At least the units the search splits for (2 virtual stages on a pipeline of the whole
  // world), so that forcing a candidate's mode and mesh gets the layout the search
  // estimated for it.
  return std::max(pp * vpp, 2 * world);
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
