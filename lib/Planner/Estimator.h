//===- Estimator.h - Per-rank time and memory of a mode (internal) -*- C++ -*-===//
//
// Estimator.cpp: the pieces every mode uses and estimate(); FlatEstimate.cpp: dp, zero,
// fsdp, tp and fsdp_tp; PipelineEstimate.cpp: pp; PipelineChoice.cpp: the unit and stage
// costs a pipeline's layout balances.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_PLANNER_ESTIMATOR_H
#define SNN_LIB_PLANNER_ESTIMATOR_H

#include "snn/Planner/Calibration.h"
#include "snn/Planner/Communication.h"
#include "snn/Planner/CostModel.h"
#include "snn/Planner/Estimate.h"
#include "snn/Planner/ModelInfo.h"
#include "snn/Planner/PipelineUnits.h"
#include "snn/Planner/TensorParallel.h"

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace snn::planner {

/// The shape of an estimate of `config` (mode, mesh, pipeline), without numbers.
Estimate skeleton(const ModeConfig &config);

/// The calls of `comm` between two ranks or more (the others move nothing).
int64_t groupCalls(const Communication &comm);
/// What an all-reduce of `bytes` allocates beside its tensor: recursive doubling receives
/// into a tensor of its size; Gloo's ring keeps buffers of its own, outside the tensors the
/// runtime counts.
int64_t allReduceScratchBytes(int64_t ranks, int64_t bytes);

/// Estimates modes for one model and batch. Every per-op cost is linear in the batch,
/// so they are computed once per sample and scaled.
class Estimator {
public:
  /// `minUnits`: the pipeline units wanted (pipelineUnits()).
  Estimator(const ModelInfo &model, const Hardware &hardware, int64_t batch,
            int64_t minUnits = 0);

  const ModelInfo &model() const { return model_; }
  const Hardware &hardware() const { return hw_; }
  const std::vector<PipelineUnit> &units() const { return units_; }
  const TPLayout &tensorParallel() const { return tp_; }
  int64_t batch() const { return batch_; }
  ModelCost totals() const { return modelCost(model_, batch_); }

  /// Per-unit pipeline cost: forward + backward FLOPs plus small terms for the output
  /// size and the parameters (both in "FLOP-equivalents": one per byte). What a pipeline's
  /// layout balances (PipelineChoice.cpp).
  std::vector<double> unitCosts() const;
  /// Sum of unitCosts() over each logical stage of `layout`.
  std::vector<double> stageCosts(const std::vector<int64_t> &layout) const;

  Estimate estimate(const ModeConfig &config, int64_t memoryBudget) const;

  /// How much slower this model's measured training step at `batch` samples is than the
  /// sum of its ops' curves (1 without a measured step): every compute time is scaled by
  /// it, so what the op curves leave out is charged in proportion to the ops. `fused`:
  /// whether the run's spiking blocks are fused (the step measured node by node
  /// otherwise, where the profile has it); `cold`: of compute that follows other work
  /// (ModelStepTimes::curveFor).
  double stepScale(int64_t batch, bool fused = true, bool cold = false) const;
  /// Whether the calibration measured this model's whole step.
  bool hasMeasuredStep() const { return step_ != nullptr; }
  /// ... and the step with its spiking blocks taken apart.
  bool hasMeasuredNodeByNodeStep() const {
    return step_ != nullptr && !step_->nodeByNode.points.empty();
  }

  /// What ranks meeting in collectives every step pay beyond the curves, per step, with
  /// `samples` a rank's work in a replica's samples on `jobRanks` ranks (a call sleeps
  /// until the last rank arrives, woken through the backend's thread on busy CPUs): the
  /// measured data-parallel step of the group size nearest `jobRanks` less the
  /// one-process step node by node on as many CPUs shared and less its collectives'
  /// curves (gradient buckets, step metrics, SyncBatchNorm). 0 without a measured one.
  double replicaSyncSeconds(int64_t jobRanks, int64_t samples, int64_t *calls = nullptr) const;

private:
  struct Scales {
    std::vector<double> compute, activation, param;
  };
  Scales scalesFor(int64_t tpSize) const;
  /// Seconds of one training forward and backward of `ops` at `batch` (`cold`: right
  /// after other work, stepScale()).
  double computeSeconds(const std::vector<int> &ops, const Scales &s, int64_t batch,
                        bool fused, bool cold = false) const;
  int64_t params(const std::vector<int> &ops, const Scales &s) const;
  /// The parameter bytes of the largest op among `ops` this rank holds.
  int64_t largestLayer(const std::vector<int> &ops, const Scales &s) const;
  int64_t buffers(const std::vector<int> &ops) const;
  /// The BatchNorm channels among `ops` that this rank holds.
  int64_t batchNormChannels(const std::vector<int> &ops, const Scales &s) const;
  struct ActivationMemory {
    int64_t kept = 0; ///< held from the forward until the backward
    int64_t peak = 0; ///< with the gradients of the op whose backward needs most
    /// Without recomputation, per unit: what it keeps, and its backward's peak above
    /// what the units before it keep.
    std::vector<double> unitKept, unitPeak;
  };
  /// `fused`: whether the runtime's spiking blocks run (spikingBlockStart).
  ActivationMemory activations(const std::vector<int> &units, const Scales &s, int64_t batch,
                               bool recompute, bool fused) const;
  /// The batch a rank loads (its input, float32, and the labels) at `samples`.
  int64_t batchBytes(int64_t samples) const;
  int64_t stateBytes(int64_t paramBytes, int64_t bufferBytes, int64_t shardParams,
                     int64_t shardOptimizer) const;
  /// fsdp's peak of activations and full layers over its backward (no recomputation).
  double fsdpBackwardPeak(const std::vector<int> &units, const Scales &s,
                          const ActivationMemory &held) const;

  /// The units and ops of each logical stage (chunk) of a pipeline.
  struct Chunks {
    std::vector<std::vector<int>> units, ops;
  };
  Chunks chunksOf(const ModeConfig &config) const;
  /// Bytes crossing the boundary after each chunk at `micro` samples: the output of the
  /// last op so far.
  std::vector<int64_t> boundaryBytes(const Chunks &chunk, int64_t micro) const;

  void estimateFlat(const ModeConfig &config, Estimate &e) const;
  /// A flat mode's collectives at `local` samples per rank of `paramBytes` of parameters
  /// per tp rank, after estimateFlat set e.computeSeconds: comm, replica sync, busy CPU.
  void flatCommunication(const ModeConfig &config, int64_t local, int64_t paramBytes,
                         const Scales &s, Estimate &e) const;
  /// Whether a pipeline stage's neighbours find a CPU free while its ranks (dp replicas,
  /// tp members: they compute at once) all compute: else they run only when the stage
  /// waits, and nothing of theirs hides behind its compute (dp=2 x pp=2 on 2 CPUs measured
  /// 1.2x the step predicted as if it did, seeds 10000-12019).
  bool neighboursRunBeside(const ModeConfig &config) const;
  void estimatePipeline(const ModeConfig &config, Estimate &e) const;
  /// One message of a pipeline of `config` in a tick of `tickCompute` seconds: its wall
  /// seconds, the CPU it takes from its two ranks, and what a descheduled receiver adds.
  struct MessagePrice {
    double seconds = 0, cpuSeconds = 0, lagSeconds = 0;
  };
  MessagePrice pipelineMessage(const ModeConfig &config, int64_t bytes,
                               double tickCompute) const;
  /// Collectives of groups smaller than the job (a pipeline stage's tp collectives, one
  /// microbatch's; fsdp_tp's), each after `computePerCall` seconds of compute: their
  /// seconds, and their wait for their peers beyond that when every rank of the job
  /// computes (calibrate's waits between computes; Estimate::stageCollectiveLagSeconds).
  std::pair<double, double> subgroupCollectives(const Communication &comm,
                                                double computePerCall, int64_t jobRanks) const;
  /// Per pipeline rank, over its chunks.
  struct RankTotals {
    std::vector<int64_t> state, activations, comm;
    std::vector<int64_t> largestLayer; ///< its largest op's parameter bytes
    explicit RankTotals(int64_t ranks)
        : state(ranks, 0), activations(ranks, 0), comm(ranks, 0), largestLayer(ranks, 0) {}
  };
  /// Adds chunk `k`'s parameters, activations and transport buffers to its rank's totals.
  void addChunkMemory(const ModeConfig &config, const Chunks &chunk, const Scales &s, int64_t k,
                      int64_t micro, const std::vector<int64_t> &boundary,
                      RankTotals &totals) const;
  void pipelineRanks(const ModeConfig &config, const Chunks &chunk, const Scales &s,
                     RankTotals ranks, Estimate &e) const;

  const ModelInfo &model_;
  Hardware hw_;
  int64_t batch_;
  std::vector<OpCost> perSample_;
  std::vector<PipelineUnit> units_;
  TPLayout tp_;
  std::vector<int> blockStart_; ///< spikingBlockStart of every op
  const ModelStepTimes *step_ = nullptr;
  mutable std::map<std::tuple<int64_t, bool, bool>, double> stepScales_;
};

} // namespace snn::planner

#endif
