//===- FinishPlan.cpp - The plan of a chosen mode -------------------------===//
//
// However a mode was decided (forced, cost model, reference table), its plan is made here,
// so a plan looks the same whoever decided it: the mesh axes, the pipeline's fields and
// stage of every op, the tensor-parallel layout, and the notes on the batch and topology.
//
//===----------------------------------------------------------------------===//
#include "Decision.h"
#include "snn/Schema/MeshAxes.h"

namespace meshaxis = snn::schema::meshaxis;

namespace snn::planner {

namespace {

void setMesh(Plan &plan, const ModeConfig &c) {
  switch (c.mode) {
  case Mode::None: break;
  case Mode::DP:
  case Mode::FSDP:
    plan.meshAxes = {meshaxis::kDataParallel};
    plan.meshShape = {c.dp};
    plan.dpMeshDim = 0;
    break;
  case Mode::TP:
    plan.meshAxes = {meshaxis::kTensorParallel};
    plan.meshShape = {c.tp};
    plan.tpMeshDim = 0;
    break;
  case Mode::FSDP_TP:
    plan.meshAxes = {meshaxis::kDataParallel, meshaxis::kTensorParallel};
    plan.meshShape = {c.dp, c.tp};
    plan.dpMeshDim = 0;
    plan.tpMeshDim = 1;
    break;
  case Mode::PP:
    // Ranks are row-major over (dp, pp, tp), axes of size 1 left out: the tp ranks of a
    // stage are consecutive (they talk in every layer), then the stages of one replica.
    if (c.dp > 1) {
      plan.dpMeshDim = int64_t(plan.meshAxes.size());
      plan.meshAxes.push_back(meshaxis::kDataParallel);
      plan.meshShape.push_back(c.dp);
    }
    plan.ppMeshDim = int64_t(plan.meshAxes.size());
    plan.meshAxes.push_back(meshaxis::kPipeline);
    plan.meshShape.push_back(c.pp);
    if (c.tp > 1) {
      plan.tpMeshDim = int64_t(plan.meshAxes.size());
      plan.meshAxes.push_back(meshaxis::kTensorParallel);
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
  plan.ppStageCosts = stageCostsOf(ctx, c.layout);
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

} // namespace

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
    if (dim.second > 1 && dim.first != meshaxis::kVirtualPipeline)
      given.push_back(dim);
  std::vector<std::pair<std::string, int64_t>> chosen;
  for (size_t i = 0; i < plan.meshAxes.size(); ++i)
    chosen.emplace_back(plan.meshAxes[i], plan.meshShape[i]);
  if (!given.empty() && given != chosen)
    ctx.notes.push_back("topology " + t.str() + " fixes the world size " +
                        std::to_string(ctx.world) + "; the planner chose its own mesh for the "
                        "mode (force a mode to use the topology's axes)");
  if (t.has(meshaxis::kVirtualPipeline) && plan.mode != Mode::PP)
    ctx.notes.push_back("topology vpp=" + std::to_string(t.size(meshaxis::kVirtualPipeline)) +
                        " (virtual pipeline stages) does not apply to " + modeName(plan.mode));
}

} // namespace snn::planner
