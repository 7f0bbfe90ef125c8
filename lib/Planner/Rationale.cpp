//===- Rationale.cpp - The sentences of a plan's rationale ----------------===//
//
// Every sentence cites the estimates it rests on, so a reader can check the choice
// against the candidates table rather than trust it.
//
//===----------------------------------------------------------------------===//
#include "Decision.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::planner {

namespace {

std::string percent(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%+.0f%%", value * 100.0);
  return buffer;
}

} // namespace

std::string modelSentence(const Context &ctx) {
  ModelCost cost = ctx.estimator->totals();
  return "Model: T=" + std::to_string(ctx.estimator->model().timeSteps) + ", " +
         formatBytes(cost.paramBytes) + " of parameters, " + formatFlops(cost.forwardFlops) +
         " forward per step and " + formatBytes(cost.activationBytes) +
         " of activations kept for backward at batch " + std::to_string(ctx.batch) +
         " on one device. " + timesSentence(ctx.request.hardware) +
         stepScaleSentence(*ctx.estimator, ctx.batch);
}

std::string stepScaleSentence(const Estimator &estimator, int64_t batch) {
  const Hardware &hw = estimator.hardware();
  if (!hw.calibration)
    return "";
  if (!estimator.hasMeasuredStep())
    return " The profile has no training step of this model (snn-run calibrate --model): "
           "op curves alone.";
  char text[240];
  std::snprintf(text, sizeof(text),
                " Op times are scaled to this model's measured training step (x%.2f at %lld "
                "samples on one rank",
                estimator.stepScale(batch), (long long)batch);
  std::string sentence = text;
  if (estimator.hasMeasuredNodeByNodeStep()) {
    std::snprintf(text, sizeof(text), "; x%.2f with its spiking blocks run node by node",
                  estimator.stepScale(batch, /*fused=*/false));
    sentence += text;
  }
  return sentence + ").";
}

std::string timesSentence(const Hardware &hw) {
  if (hw.calibration && hw.calibration->builtin)
    return "Times are those of " + hw.calibration->source +
           ", not of this machine: on another machine they can be several times off "
           "(docs/planner.md, held-out check); give a device profile (snn-run calibrate, "
           "--device-profile) for this machine's.";
  if (hw.calibration)
    return "Times are measured ones: " + hw.calibration->source + ".";
  char constants[160];
  std::snprintf(constants, sizeof(constants), "%.0f GFLOP/s, %.3g GB/s, %.3g us per step",
                hw.flopsPerSecond / 1e9, hw.linkBytesPerSecond / 1e9,
                hw.latencySeconds * 1e6);
  return std::string("Times use default constants (") + constants +
         "), not a measurement of this machine; give a device profile (snn-run calibrate, "
         "--device-profile) for measured ones.";
}

std::string estimateSentence(const Estimate &e) {
  std::string text = "estimated " + formatSeconds(e.stepSeconds) + " per step (compute " +
                     formatSeconds(e.computeSeconds) + " + communication " +
                     formatSeconds(e.commSeconds);
  std::vector<std::string> waits;
  if (e.replicaSyncSeconds > 0)
    waits.push_back(formatSeconds(e.replicaSyncSeconds) +
                    " the ranks' waits for each other measured on replicas");
  if (e.peerWaitSeconds > 0)
    waits.push_back(formatSeconds(e.peerWaitSeconds) +
                    " the calls' and messages' waits for their peers measured between "
                    "computes");
  for (size_t i = 0; i < waits.size(); ++i)
    text += (i == 0 ? " of which " : " and ") + waits[i];
  text += ", " + formatBytes(e.commBytes) + " sent per rank) and " +
          formatBytes(e.memoryBytes) + " per rank (state " + formatBytes(e.stateBytes) +
          ", activations " + formatBytes(e.activationBytes);
  if (e.transientBytes > 0)
    text += ", gathered layer " + formatBytes(e.transientBytes);
  return text + ")";
}

std::string metricOf(const Context &ctx, const Estimate &e) {
  switch (ctx.request.objective) {
  case Objective::Speed: return formatSeconds(e.stepSeconds) + " per step";
  case Objective::Memory: return formatBytes(e.memoryBytes) + " per rank";
  case Objective::Capacity:
    if (ctx.request.memoryBudget > 0)
      return "room for about " + std::to_string(int64_t(std::max(0.0, batchCapacity(ctx, e)))) +
             " samples";
    return formatBytes(e.activationBytes) + " of activations per rank";
  }
  return "";
}

std::string comparisonSentence(const Context &ctx, const std::vector<Estimate> &candidates,
                               int chosen) {
  int feasible = int(std::count_if(candidates.begin(), candidates.end(),
                                   [](const Estimate &e) { return e.feasible; }));
  if (!candidates[chosen].fitsBudget) {
    std::string text = "None of the " + std::to_string(feasible) +
                       " feasible candidates fits the budget " +
                       formatBytes(ctx.request.memoryBudget) + "; it is the smallest (" +
                       formatBytes(candidates[chosen].memoryBytes) + " per rank)";
    int next = runnerUp(ctx, candidates, chosen);
    if (next >= 0)
      text += "; next is " + candidates[next].label() + " on " + candidates[next].mesh() +
              " (" + formatBytes(candidates[next].memoryBytes) + ")";
    return text + ".";
  }
  const char *what = ctx.request.objective == Objective::Speed    ? "the fastest"
                     : ctx.request.objective == Objective::Memory ? "the smallest per rank"
                     : ctx.request.memoryBudget > 0 ? "the one that fits the largest batch"
                                                    : "the one with the least activation memory "
                                                      "per rank (what grows with batch x T)";
  std::string text = std::string("It is ") + what + " of " + std::to_string(feasible) +
                     " feasible candidate" + (feasible == 1 ? "" : "s") + " (" +
                     metricOf(ctx, candidates[chosen]) + ")";
  int next = runnerUp(ctx, candidates, chosen);
  if (next < 0)
    return text + ".";
  const Estimate &n = candidates[next];
  text += "; next is " + n.label() + " on " + n.mesh() + " (" + metricOf(ctx, n);
  if (ctx.request.objective == Objective::Speed)
    text += ", " + percent(n.stepSeconds / candidates[chosen].stepSeconds - 1.0);
  return text + ").";
}

bool sameDecision(const TableDecision &t, const Estimate &e) {
  if (t.mode != e.mode || t.optimizer != e.optimizer)
    return false;
  if (t.mode == Mode::PP)
    return t.pp == e.pp && t.dp == e.dp;
  return t.dp == e.dp && t.tp == e.tp;
}

static std::string tableLabel(const TableDecision &t) {
  ModeConfig c;
  c.mode = t.mode;
  c.optimizer = t.optimizer;
  c.dp = t.dp;
  c.tp = t.tp;
  c.pp = t.pp;
  c.virtualStages = std::max<int64_t>(t.virtualStages, 1);
  Estimate e = skeleton(c);
  return e.label() + " on " + e.mesh();
}

std::string departureSentence(const Context &ctx, const std::vector<Estimate> &candidates,
                              int chosen) {
  TableDecision t = referenceTableDecision(ctx.request.objective, ctx.world, ctx.batch,
                                           ctx.tpAvailable(), ctx.input.hasTrainableParams,
                                           ctx.request.features);
  const Estimate &c = candidates[chosen];
  if (sameDecision(t, c) && t.mode == Mode::PP && t.virtualStages != c.virtualStages) {
    std::string text = "The reference table also chooses pp on pp=" + std::to_string(t.pp) +
                       " but with " + std::to_string(t.virtualStages) +
                       " virtual stages per rank; the plan uses " +
                       std::to_string(c.virtualStages) + " because ";
    if (ctx.unitCount() < t.virtualStages * t.pp)
      return text + "the model has " + std::to_string(ctx.unitCount()) + " stage units (" +
             std::to_string(t.virtualStages) + " virtual stages need " +
             std::to_string(t.virtualStages * t.pp) + ").";
    for (const Estimate &e : candidates)
      if (e.mode == Mode::PP && e.feasible && e.dp == c.dp &&
          e.virtualStages == t.virtualStages)
        return text + "it is estimated at " + metricOf(ctx, c) + " against " + metricOf(ctx, e) +
               " with " + std::to_string(t.virtualStages) + ".";
    return text + std::to_string(t.virtualStages) + " were not estimated.";
  }
  if (sameDecision(t, c))
    return "The reference table agrees (" + t.reason + ").";
  std::string text = "The reference table would choose " + tableLabel(t) + " (" + t.reason +
                     "); the cost model departs: ";
  for (const Estimate &e : candidates)
    if (sameDecision(t, e)) {
      if (!e.feasible)
        return text + "that is not feasible here (" + e.infeasibleReason + ").";
      if (!e.fitsBudget && c.fitsBudget)
        return text + "it needs " + formatBytes(e.memoryBytes) + " per rank, over the budget " +
               formatBytes(ctx.request.memoryBudget) + ".";
      if (!c.fitsBudget) // nothing fits: the choice was by memory
        return text + "it needs " + formatBytes(e.memoryBytes) + " per rank against " +
               formatBytes(c.memoryBytes) + ".";
      return text + "it is estimated at " + metricOf(ctx, e) + " against " + metricOf(ctx, c) +
             ".";
    }
  return text + "that mode was not among the candidates.";
}

std::string memoptSentence(const Context &ctx, const Estimate &e) {
  if (e.memoptLevel == 0)
    return "memopt 0: no activation recomputation (" +
           std::string(ctx.request.objective == Objective::Speed ? "speed objective"
                                                                 : "not needed") +
           ").";
  if (e.mode == Mode::PP && !ctx.request.ppMemoptStages.empty())
    return "memopt 1: the stages asked for (pp-memopt-stages) recompute their activations (one "
           "extra forward each) instead of keeping them for every microbatch in flight.";
  if (ctx.request.objective == Objective::Speed)
    return std::string("memopt 1: activation recomputation ") +
           (e.fitsBudget ? "is what brings the plan under" : "lowers the memory toward") +
           " the budget " + formatBytes(ctx.request.memoryBudget) +
           " (one extra forward, +33% compute).";
  if (e.mode == Mode::PP)
    return "memopt 1: the costliest stages recompute their activations (one extra forward "
           "each) instead of keeping them for every microbatch in flight.";
  return "memopt 1: activation recomputation checkpoints the units in about sqrt(units) "
         "segments and keeps only their outputs for backward (one extra forward, +33% "
         "compute), as the " +
         std::string(objectiveName(ctx.request.objective)) + " objective asks.";
}

std::string pipelineSentence(const Context &ctx, const Estimate &e) {
  int64_t share = ctx.batch / std::max<int64_t>(e.dp, 1);
  std::string text = "Pipeline: " + std::to_string(e.pp) + " stages x " +
                     std::to_string(e.virtualStages) + " virtual, " +
                     (e.dp > 1 ? std::to_string(e.dp) + " data-parallel replicas of " +
                                     std::to_string(share) + " samples, each in "
                               : std::string()) +
                     std::to_string(e.microbatches) + " microbatches of " +
                     std::to_string(share / std::max<int64_t>(e.microbatches, 1)) +
                     ", schedule " + scheduleName(*e.schedule) +
                     (e.delayWgrad ? " (weight gradients delayed)" : "") + ", layout " +
                     formatStageLayout(e.layout) + " over " + std::to_string(ctx.unitCount()) +
                     " units";
  if (!ctx.request.ppLayout.empty())
    return text + " (given).";
  if (!ctx.estimator)
    return text + " (even split: no costs known).";
  std::vector<double> costs = ctx.estimator->stageCosts(e.layout);
  double largest = *std::max_element(costs.begin(), costs.end());
  double mean = 0;
  for (double c : costs)
    mean += c / double(costs.size());
  return text + " (stage cost in FLOP-equivalents: largest " + formatFlops(largest) +
         ", mean " + formatFlops(mean) + ").";
}

/// Why a topology that names a pp axis did not get a pipeline (empty when it did, or names
/// none): the user wrote the axis, so the plan answers for it.
std::string pipelineTopologySentence(const Context &ctx, const std::vector<Estimate> &candidates,
                                     int chosen) {
  const Topology &t = ctx.request.topology;
  if (t.size(meshaxis::kPipeline) <= 1 || (chosen >= 0 && candidates[chosen].mode == Mode::PP))
    return "";
  std::string text =
      "The topology names a pp axis (pp=" + std::to_string(t.size(meshaxis::kPipeline)) + ")";
  if (!ctx.request.features.allowPipeline)
    return text + ", but pipelines are not considered (allow-pipeline=false).";
  if (chosen < 0)
    return text + "; the reference table decides by objective, world size and batch, not by "
                  "axis names (force mode pp to pipeline).";
  int best = -1;
  std::string reason;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Estimate &e = candidates[i];
    if (e.mode == Mode::PP && !e.feasible && reason.empty())
      reason = e.infeasibleReason;
    if (e.mode == Mode::PP && e.feasible && (best < 0 || better(ctx, e, candidates[best])))
      best = int(i);
  }
  if (best < 0)
    return text + ", but no pipeline is feasible: " + reason + ".";
  const Estimate &p = candidates[best];
  return text + "; the best pipeline, pp on " + p.mesh() + ", is estimated at " +
         metricOf(ctx, p) + " against " + metricOf(ctx, candidates[chosen]) + " for " +
         candidates[chosen].label() + " (force mode pp to use it).";
}

} // namespace snn::planner
