//===- Estimate.h - One mode's shape and its estimated cost -------*- C++ -*-===//
//
// ModeConfig is one evaluated way to run the model: a mode on a mesh, with its optimizer
// strategy and pipeline settings. Estimate adds what it costs per rank and training step
// (the estimator's numbers: docs/planner.md).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_ESTIMATE_H
#define SNN_PLANNER_ESTIMATE_H

#include "snn/Planner/Mode.h"
#include "snn/Planner/Pipeline.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::planner {

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
  /// Pipelines, by pp coordinate: the CPU seconds one of its ranks is busy a step (its
  /// chunks' compute, messages and collectives), alone.
  std::vector<double> stageBusySeconds;
  /// Pipelines, of commSeconds: the step's synchronisation after the drain (every rank).
  double drainSyncSeconds = 0;
  /// Pipelines: what the step would add if every stage's tp collective waited for its peers
  /// as when every rank computes (Calibration::busyCollectiveSeconds) and, on CPUs the job
  /// oversubscribes, every message for a descheduled receiver
  /// (Hardware::descheduledMessageSeconds); commSeconds holds it times the chance that a
  /// rank ready to run finds the CPUs taken by the others.
  double stageCollectiveLagSeconds = 0;
  /// Of commSeconds: what collectives and messages are charged for waiting for their peers
  /// (a pipeline's: the lag above times that chance; fsdp_tp's tp calls and, on a job that
  /// takes every CPU, fsdp's reduce-scatters: every call's), from calibrate's waits between
  /// computes and all-pairs messages.
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

} // namespace snn::planner

#endif // SNN_PLANNER_ESTIMATE_H
