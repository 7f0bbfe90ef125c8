//===- Decision.h - Shared state of one recommendation (internal) --*- C++ -*-===//
//
// The Context of one recommend() call, and the functions its files share, by file.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_PLANNER_DECISION_H
#define SNN_LIB_PLANNER_DECISION_H

#include "Estimator.h"
#include "snn/Planner/Plan.h"
#include "snn/Planner/PlanRequest.h"
#include "snn/Planner/ReferenceTable.h"
#include "snn/Planner/Result.h"
#include "snn/Planner/Units.h"

#include <cstdint>
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

// Candidates.cpp: the modes a recommendation compares.
/// A flat mode's shape (or the start of a pipeline's) on a dp x tp mesh.
ModeConfig flatConfig(Mode mode, OptimizerStrategy optimizer, int64_t dp, int64_t tp,
                      int memoptLevel);
/// Whether `c` can run: every data-parallel rank gets a sample, and tensor parallelism has
/// a candidate whose split dimensions divide by tp.
Status checkConfig(const Context &ctx, const ModeConfig &c);
/// The memopt level estimates start from: 0 under the speed objective, else 1.
int firstMemoptLevel(const Context &ctx);
/// Estimates `config`; under the speed objective, recomputation is switched on only when
/// that is what makes the plan fit the budget.
Estimate estimateWithMemopt(const Context &ctx, ModeConfig config);
/// `c` as a candidate that cannot run, and why.
Estimate infeasible(const ModeConfig &c, const std::string &reason);
/// Every mode that can use the world, estimated or marked infeasible.
std::vector<Estimate> enumerateCandidates(const Context &ctx);

// PipelineChoice.cpp: a pipeline's mesh, virtual stages, layout, microbatches and memopt.
/// A pipeline's mesh: pp stages, each split over tp ranks, replicated dp times.
struct PipelineMesh {
  int64_t dp = 1, tp = 1, pp = 1;
};
/// A pipeline of `mesh.pp` stages, each stage `mesh.tp` ranks splitting its layers, the whole
/// pipeline `mesh.dp` times as data-parallel replicas, with `virtualStages` logical stages
/// per pp coordinate (0: the default).
Result<ModeConfig> pipelineConfig(const Context &ctx, PipelineMesh mesh, int64_t virtualStages,
                                  int memoptLevel);
/// The cost of each logical stage of `layout`: the estimator's FLOP-equivalents, or its
/// unit counts without one. The memopt stages are the costliest by these.
std::vector<double> stageCostsOf(const Context &ctx, const std::vector<int64_t> &layout);
/// Pipelines of `stages` ranks, `dp` replicas each, with 1 and 2 virtual stages per rank (the
/// reference's rule picks 2 whenever the batch allows; interleaving unbalanced chunks can be
/// slower, so both are estimated). A fixed count (topology vpp, pp-virtual-stages, explicit
/// layout) is the only one tried.
void addPipelineCandidates(const Context &ctx, PipelineMesh mesh, int memopt,
                           std::vector<Estimate> &out);
/// The topology's pipeline mesh when it names a pp axis and its dp and tp axes (absent: 1)
/// make up the world.
std::optional<PipelineMesh> topologyPipelineMesh(const Context &ctx);
/// Every factorisation dp x tp x pp of the world with at least two stages (tp only when the
/// analysis found a tensor-parallel candidate).
std::vector<PipelineMesh> pipelineMeshes(const Context &ctx);
/// How many stage units a pipeline for this request may need: one per logical stage of the
/// explicit layout, else the pp size (the topology's, or every rank) times its virtual
/// stages (asked for, the topology's, 1 for a forced gpipe or 1f1b, or the 2 the planner
/// tries).
int64_t wantedPipelineUnits(const PlanRequest &request, int64_t world);
/// The table's pipeline row as it can run: its virtual stages unless the request fixes them;
/// 1 when 2 do not fit the model (too few units); the memory rows when no pipeline does
/// (pipelines are allowed by default, so a small model must not fail for it). `t` is updated
/// to what runs.
Result<ModeConfig> tableConfig(const Context &ctx, TableDecision &t);

// FinishPlan.cpp: the plan of a chosen mode, however it was decided.
/// The plan of `c`: mesh axes, pipeline fields, tensor-parallel layout, notes on the batch.
Plan finish(Context &ctx, const ModeConfig &c, const std::string &decidedBy);
/// Notes where the plan's mesh differs from the topology the request gave.
void noteTopology(Context &ctx, const Plan &plan);

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
