//===- Recommender.h - Choosing a parallel mode -------------------*- C++ -*-===//
//
// recommend() picks a mode for an objective, a topology, a batch size, feature flags and
// a per-rank memory budget. With model information it estimates every mode that can use
// the world (cost model, see docs/planner.md); without it, or when asked, it applies the
// reference package's decision table. A forced mode skips the choice but not the checks.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_RECOMMENDER_H
#define SNN_PLANNER_RECOMMENDER_H

#include "snn/Planner/CostModel.h"
#include "snn/Planner/ModelInfo.h"
#include "snn/Planner/Pipeline.h"
#include "snn/Planner/Result.h"
#include "snn/Planner/TensorParallel.h"
#include "snn/Schema/Enums.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace snn::planner {

// The enums and their spellings are the schema's (snn/Schema/Enums.h), shared with the
// runtime; these names keep the planner's code short.
using Objective = schema::Objective;
using Mode = schema::ParallelMode;
using OptimizerStrategy = schema::OptimizerStrategy;

Result<Objective> parseObjective(const std::string &text);
inline const char *objectiveName(Objective objective) { return schema::nameOf(objective); }
inline const char *modeName(Mode mode) { return schema::nameOf(mode); }
inline const char *optimizerName(OptimizerStrategy strategy) { return schema::nameOf(strategy); }

/// A mode the user forces: none, dp, zero (= dp with ZeRO-1), fsdp, tp, fsdp_tp, pp. The
/// reference's spellings dp+zero, fsdp2 and fsdp2_tp are accepted too.
struct ModeRequest {
  Mode mode = Mode::None;
  OptimizerStrategy optimizer = OptimizerStrategy::None;
};
Result<ModeRequest> parseMode(const std::string &text);
/// A forced mode from its schema value; nullopt for RequestedMode::Auto.
std::optional<ModeRequest> modeRequest(schema::RequestedMode requested);

/// Named mesh dimensions, ordered dp, tp, pp, vpp, then the others as given. `vpp` is the
/// number of virtual pipeline stages per rank, not a device dimension: it is not part of
/// the world size.
struct Topology {
  std::vector<std::pair<std::string, int64_t>> dims;

  int64_t worldSize() const;
  int64_t size(const std::string &name) const; ///< 0 when absent
  bool has(const std::string &name) const { return size(name) > 0; }
  std::string str() const;
};
/// "dp=2,tp=2,pp=1": comma-separated name=size, sizes positive integers, no repeats.
/// An empty string is the single-process topology.
Result<Topology> parseTopology(const std::string &text);

/// "16GiB", "512MiB", "8GB", "1.5G", "1000000": bytes (K/M/G/T: 1000s, Ki/Mi/Gi/Ti: 1024s).
Result<int64_t> parseByteSize(const std::string &text);

struct Features {
  bool experimentalConvTP = false;
  bool allowPipeline = true; ///< the reference package's default
  bool allowZero = false;
};

struct PlanRequest {
  Objective objective = Objective::Speed;
  Topology topology;
  int64_t batchSize = 0; ///< global batch; 0: unknown (allowed only for world size 1)
  std::optional<ModeRequest> forced;
  Features features;
  int64_t memoryBudget = 0; ///< bytes per rank; 0: no budget
  int64_t expectedWorldSize = 0; ///< the device mesh's size, checked when > 0
  bool useCostModel = true;
  std::string ppLayout;                 ///< explicit "a|b|c"; empty: cost-balanced
  std::optional<Schedule> ppSchedule;   ///< empty: interleaved_1f1b if vs > 1 else 1f1b
  int64_t ppMicrobatches = 0;           ///< 0: recommendedPipelineMicrobatches
  int64_t ppVirtualStages = 0;          ///< 0: topology vpp, the layout's length, or the rule
  bool ppDelayWgrad = false;            ///< zero_bubble delays weight gradients anyway
  std::vector<int64_t> ppMemoptStages;  ///< empty: recommendPipelineMemoptStages
  double memoptRatio = 0.5;
  Hardware hardware;
};

/// What the planner knows about the model. `model` is absent when the IR cannot be counted
/// (then `missingReason` says why and the reference table decides); `structure` may still
/// give the ops and their dataflow (shapes unknown), for stage units and TP pairs.
struct PlannerInput {
  std::optional<ModelInfo> model;
  std::optional<ModelInfo> structure;
  std::string missingReason;
  int64_t tpCandidates = 0;      ///< from the analysis
  bool hasTrainableParams = true;
  int64_t pipelineUnits = 0;     ///< used when `model` is absent
};

/// One evaluated way to run the model (a mode on a mesh), per rank and training step.
/// One mode's shape: mode, mesh, optimizer strategy and pipeline settings.
struct ModeConfig {
  Mode mode = Mode::None;
  OptimizerStrategy optimizer = OptimizerStrategy::None;
  int64_t dp = 1, tp = 1, pp = 1, virtualStages = 1, microbatches = 0;
  std::optional<Schedule> schedule;
  std::vector<int64_t> layout;       ///< units per logical stage (pp)
  std::vector<int64_t> memoptStages; ///< logical stages that recompute (pp)
  bool delayWgrad = false;           ///< pp: weight gradients fill the bubbles
  int memoptLevel = 0;
};

/// A mode's shape with its estimated cost per rank and training step.
struct Estimate : ModeConfig {
  bool feasible = true;
  std::string infeasibleReason;

  double computeSeconds = 0;
  double commSeconds = 0;
  /// Flat modes, of commSeconds: what the ranks' waits for each other in their collectives
  /// cost beyond the curves, from the model's measured data-parallel steps.
  double replicaSyncSeconds = 0;
  double stepSeconds = 0;
  /// The CPU seconds of every rank's compute, messages and collectives together per step
  /// (alone, before sharing CPUs): pipelines', and flat modes' where calibrate measured
  /// the collectives' CPU; else 0.
  double busySeconds = 0;
  /// Pipelines, of commSeconds: the step's synchronisation after the drain (every rank).
  double drainSyncSeconds = 0;
  /// Pipelines with tensor-parallel stages: what the step would add if every stage's tp
  /// collective waited for its peers as when every rank computes
  /// (Calibration::busyCollectiveSeconds); commSeconds holds it times the chance that a
  /// rank ready to run finds the CPUs taken by the others.
  double stageCollectiveLagSeconds = 0;
  /// Of commSeconds: what tensor-parallel collectives of groups smaller than the job are
  /// charged for waiting for their peers (a pipeline's stages: the lag above times that
  /// chance; fsdp_tp: every call's), from calibrate's waits between computes.
  double peerWaitSeconds = 0;
  int64_t stateBytes = 0;      ///< parameters, gradients, optimizer state, buffers
  int64_t activationBytes = 0; ///< kept for backward
  int64_t transientBytes = 0;  ///< e.g. the layer FSDP gathers
  int64_t memoryBytes = 0;     ///< the sum: peak per rank
  int64_t commBytes = 0;
  bool fitsBudget = true;

  std::string label() const; ///< "dp+zero", "fsdp_tp", ...
  std::string mesh() const;  ///< "dp=2 x tp=2", "pp=4", "dp=2 x pp=2 (vpp 2)"
};

struct Plan {
  Mode mode = Mode::None;
  Objective objective = Objective::Speed;
  OptimizerStrategy optimizer = OptimizerStrategy::None;
  int memoptLevel = 0;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  int dpMeshDim = -1, tpMeshDim = -1, ppMeshDim = -1;
  int64_t ppMicrobatches = 0;
  std::optional<Schedule> ppSchedule;
  int64_t ppVirtualStages = 0;
  std::vector<int64_t> ppLayout;
  std::vector<int64_t> ppMemoptStages;
  bool ppDelayWgrad = false;
  std::string decidedBy; ///< "cost-model", "reference-table" or "forced"
  std::vector<std::string> rationale;
  std::vector<std::string> notes;
  std::vector<Estimate> candidates; ///< what the cost model compared (may be empty)
  std::optional<Estimate> chosen;
  TPLayout tensorParallel;          ///< for tp and fsdp_tp
  std::vector<PipelineUnit> units;  ///< for pp
  std::vector<int64_t> opStage;     ///< logical pp stage per op (pp only)
};

Result<Plan> recommend(const PlannerInput &input, const PlanRequest &request);

/// The reference package's decision table (docs/reference-api.md), for world size W and batch B.
struct TableDecision {
  Mode mode = Mode::None;
  OptimizerStrategy optimizer = OptimizerStrategy::None;
  int memoptLevel = 0;
  int64_t dp = 1, tp = 1, pp = 1, virtualStages = 0;
  std::string reason;
};
TableDecision referenceTableDecision(Objective objective, int64_t worldSize, int64_t batch,
                                     bool tpAvailable, bool hasTrainableParams,
                                     const Features &features);

/// Human-readable numbers for rationales: "1.5 MiB", "2.34 GFLOP", "12.3 ms".
std::string formatBytes(int64_t bytes);
std::string formatFlops(double flops);
std::string formatSeconds(double seconds);

} // namespace snn::planner

#endif
