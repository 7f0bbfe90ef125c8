//===- Candidates.cpp - The modes a recommendation compares ---------------===//
//
// Every mode that can use the world (flat modes and pipelines), each checked against the
// request and the model, then estimated, or marked infeasible with the reason.
//
//===----------------------------------------------------------------------===//
#include "Decision.h"

namespace snn::planner {

namespace {

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

void addCandidate(const Context &ctx, const ModeConfig &c, std::vector<Estimate> &out) {
  if (Status s = checkConfig(ctx, c); !s)
    out.push_back(infeasible(c, s.error().message));
  else
    out.push_back(estimateWithMemopt(ctx, c));
}

} // namespace

Status checkConfig(const Context &ctx, const ModeConfig &c) {
  if (c.mode == Mode::DP || c.mode == Mode::FSDP || c.mode == Mode::FSDP_TP)
    if (Status s = checkDataParallelBatch(ctx, c.dp); !s)
      return s;
  if (c.mode == Mode::TP || c.mode == Mode::FSDP_TP || (c.mode == Mode::PP && c.tp > 1))
    return checkTensorParallel(ctx, c.mode, c.tp);
  return Ok{};
}

int firstMemoptLevel(const Context &ctx) {
  return ctx.request.objective == Objective::Speed ? 0 : 1;
}

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

} // namespace snn::planner
