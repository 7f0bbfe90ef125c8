//===- PipelineChoice.cpp - A pipeline's shape for a request --------------===//
//
// The pipeline meshes a world allows, and for one of them its virtual stages, stage layout,
// microbatches, schedule and the stages that recompute: what the request fixes, else the
// reference's rules (Pipeline.cpp) on the model's stage costs (Estimator::unitCosts, here).
// The reference table's pipeline row is fitted to the model here too (tableConfig).
//
//===----------------------------------------------------------------------===//
#include "Decision.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::planner {

std::vector<double> Estimator::unitCosts() const {
  std::vector<double> costs;
  for (const PipelineUnit &unit : units_) {
    double cost = 0;
    for (int op : unit.ops) {
      const OpCost &c = perSample_[op];
      cost += double(batch_) * (c.forwardFlops + c.backwardFlops + double(c.outputBytes)) +
              double(c.paramBytes);
    }
    costs.push_back(cost);
  }
  return costs;
}

std::vector<double> Estimator::stageCosts(const std::vector<int64_t> &layout) const {
  std::vector<double> units = unitCosts(), stages;
  size_t next = 0;
  for (int64_t count : layout) {
    double sum = 0;
    for (int64_t i = 0; i < count && next < units.size(); ++i)
      sum += units[next++];
    stages.push_back(sum);
  }
  return stages;
}

namespace {

/// Virtual stages per rank of a pipeline of `stages` ranks and `dp` replicas: asked for,
/// the topology's vpp, the explicit layout's, the forced schedule's, else the reference's
/// rule.
int64_t defaultVirtualStages(const Context &ctx, int64_t stages, int64_t dp = 1) {
  if (ctx.request.ppVirtualStages > 0)
    return ctx.request.ppVirtualStages;
  if (int64_t vpp = ctx.request.topology.size(meshaxis::kVirtualPipeline))
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
  auto stagesToRecompute =
      recommendPipelineMemoptStages(stageCostsOf(ctx, c.layout), ctx.request.memoptRatio);
  if (!stagesToRecompute)
    return stagesToRecompute.error();
  c.memoptStages = *stagesToRecompute;
  return Ok{};
}

} // namespace

std::vector<double> stageCostsOf(const Context &ctx, const std::vector<int64_t> &layout) {
  return ctx.estimator ? ctx.estimator->stageCosts(layout)
                       : std::vector<double>(layout.begin(), layout.end());
}

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

void addPipelineCandidates(const Context &ctx, PipelineMesh mesh, int memopt,
                           std::vector<Estimate> &out) {
  int64_t dp = mesh.dp, stages = mesh.pp;
  bool fixed = ctx.request.topology.has(meshaxis::kVirtualPipeline) ||
               ctx.request.ppVirtualStages > 0 || !ctx.request.ppLayout.empty();
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

std::optional<PipelineMesh> topologyPipelineMesh(const Context &ctx) {
  const Topology &t = ctx.request.topology;
  PipelineMesh mesh{std::max<int64_t>(t.size(meshaxis::kDataParallel), 1),
                    std::max<int64_t>(t.size(meshaxis::kTensorParallel), 1),
                    t.size(meshaxis::kPipeline)};
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

int64_t wantedPipelineUnits(const PlanRequest &request, int64_t world) {
  const std::string &layout = request.ppLayout;
  if (!layout.empty())
    return 1 + int64_t(std::count(layout.begin(), layout.end(), '|'));
  int64_t pp = request.topology.has(meshaxis::kPipeline)
                   ? request.topology.size(meshaxis::kPipeline)
                   : world;
  if (pp <= 1)
    return 0;
  int64_t vpp = 2;
  if (request.ppVirtualStages > 0)
    vpp = request.ppVirtualStages;
  else if (request.topology.has(meshaxis::kVirtualPipeline))
    vpp = request.topology.size(meshaxis::kVirtualPipeline);
  // At least the units the search splits for (2 virtual stages on a pipeline of the whole
  // world), so that forcing a candidate's mode and mesh gets the layout the search
  // estimated for it.
  return std::max(pp * vpp, 2 * world);
}

Result<ModeConfig> tableConfig(const Context &ctx, TableDecision &t) {
  if (t.mode != Mode::PP)
    return flatConfig(t.mode, t.optimizer, t.dp, t.tp, t.memoptLevel);
  const PlanRequest &r = ctx.request;
  bool fixed = r.topology.has(meshaxis::kVirtualPipeline) || r.ppVirtualStages > 0 ||
               !r.ppLayout.empty();
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

} // namespace snn::planner
