//===- Decision.h - Shared state of one recommendation (internal) --*- C++ -*-===//
#ifndef SNN_LIB_PLANNER_DECISION_H
#define SNN_LIB_PLANNER_DECISION_H

#include "Estimator.h"

#include <optional>
#include <string>
#include <vector>

namespace snn::planner {

/// Everything one recommend() call knows: the request, the model (counted or only its
/// structure), its stage units and TP pairs, and the notes collected on the way.
struct Context {
  Context(const PlannerInput &plannerInput, const PlanRequest &planRequest)
      : input(plannerInput), request(planRequest) {}

  const PlannerInput &input;
  const PlanRequest &request;
  int64_t world = 1;
  int64_t batch = 1;
  std::optional<Estimator> estimator;
  const ModelInfo *structure = nullptr; ///< the counted model, else its bare structure
  std::vector<PipelineUnit> units;
  TPLayout tensorParallel;
  std::vector<std::string> notes;

  int64_t unitCount() const {
    return structure ? int64_t(units.size()) : input.pipelineUnits;
  }
  bool tpAvailable() const { return input.tpCandidates > 0; }
};


// Choice.cpp: comparing candidates under the objective.
/// Samples of the global batch that would fit the budget (capacity objective).
double batchCapacity(const Context &ctx, const Estimate &e);
/// True when `a` serves the objective better than `b` (with tolerances, see Choice.cpp).
bool better(const Context &ctx, const Estimate &a, const Estimate &b);
/// Index of the best feasible candidate that fits the budget (or of the smallest one when
/// none fits, with `fits` false); -1 when nothing is feasible.
int choose(const Context &ctx, const std::vector<Estimate> &candidates, bool &fits);
/// The best of the others the choice was made among.
int runnerUp(const Context &ctx, const std::vector<Estimate> &candidates, int chosen);
/// The number the objective decides by, as text ("3.2 ms per step").
std::string metricOf(const Context &ctx, const Estimate &e);

// Rationale.cpp: the sentences a plan's rationale is made of.
std::string modelSentence(const Context &ctx);
/// Where the times come from: a device profile, or the default constants.
std::string timesSentence(const Hardware &hw);
/// Whether op times are scaled to the model's measured step, and by how much at `batch`.
std::string stepScaleSentence(const Estimator &estimator, int64_t batch);
std::string estimateSentence(const Estimate &e);
std::string comparisonSentence(const Context &ctx, const std::vector<Estimate> &candidates,
                               int chosen);
std::string departureSentence(const Context &ctx, const std::vector<Estimate> &candidates,
                              int chosen);
std::string memoptSentence(const Context &ctx, const Estimate &e);
std::string pipelineSentence(const Context &ctx, const Estimate &e);
/// Why a topology with a pp axis got no pipeline; empty when it did or has none. `chosen`
/// indexes `candidates`, or is -1 when the reference table decided.
std::string pipelineTopologySentence(const Context &ctx, const std::vector<Estimate> &candidates,
                                     int chosen);
bool sameDecision(const TableDecision &t, const Estimate &e);

} // namespace snn::planner

#endif
