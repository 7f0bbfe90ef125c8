//===- PipelineSync.h - What a pipeline's ranks agree on after a step -*- C++ -*-===//
//
// Only the last stage sees the loss; with a dp axis each replica trains its
// own share of the batch. After the pipeline flush these collectives make
// every rank agree: the step's metrics (broadcast over the pp group from the
// last stage, summed over dp), the gradients (averaged over dp, one flat
// all-reduce per rank, deterministic), BatchNorm's running statistics (as
// one process updating them microbatch after microbatch: replica 0's
// microbatches first), and a tensor only the last stage has (an eval or
// infer output).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_PIPELINE_PIPELINESYNC_H
#define SNN_RUNTIME_PIPELINE_PIPELINESYNC_H

#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace snn::runtime {

class Model;
class ParameterStore;

/// Collective over the pp group, then over `dp` (null or invalid: none):
/// `values` as the last stage's rank holds them, summed over dp, on every
/// rank.
std::vector<double> shareLastStageValues(const std::vector<double> &values,
                                         const PipelinePlace &place,
                                         const dist::Group *dp);

/// Collective over `group`: every parameter's .grad becomes the mean over
/// the members (a parameter without one counts as zeros and gets one).
void averageGradients(const dist::Group &group, const ParameterStore &store);

/// Collective over `group`: every buffer becomes member 0's.
void broadcastBuffers(const dist::Group &group, const ParameterStore &store);

/// A BatchNorm running statistic of the rank's stages, as it was before a step.
struct RunningStatistic {
  std::string name;
  double momentum = 0.1;
  at::Tensor before;
};

/// The running statistics of `model`'s stage programs (a batch_norm node's running mean and
/// variance), copied as they are now.
std::vector<RunningStatistic> snapshotRunningStatistics(const Model &model);

/// Collective over the dp group `group`: each replica updated `stats` over its own
/// `microbatches`; every member gets what one process updating them over all replicas'
/// microbatches in replica order computes (each update r <- m s + (1 - m) r is linear, so
/// replica d's contribution is its result less the decayed start, decayed again by the
/// replicas after it).
void combineReplicaRunningStatistics(const dist::Group &group, const ParameterStore &store,
                                     const std::vector<RunningStatistic> &stats,
                                     int64_t microbatches);

/// A pipeline rank's training step over its data-parallel replicas.
struct ReplicatedPipelineStep {
  PipelineStepResult result;
  /// The loss summed over every microbatch of every replica, and the correct predictions.
  double lossSum = 0.0;
  double correct = 0.0;
};

/// Collective over the pp group and `replicas` (null: none): the schedule's forwards and
/// backwards over this replica's batch, the loss and correct counts from the last stage on
/// every rank summed over the replicas, the gradients averaged over them and BatchNorm's
/// running statistics combined as one process would (other buffers: replica 0's).
ReplicatedPipelineStep trainPipelineReplicas(PipelineEngine &engine, Model &model,
                                             const at::Tensor &input,
                                             const at::Tensor &labels,
                                             const dist::Group *replicas);

/// Collective over the pp group: the tensor the last stage's rank passes
/// (float32, any shape; the others pass an undefined one) on every member.
at::Tensor broadcastFromLastStage(const at::Tensor &tensor, const PipelinePlace &place);

/// Collective over `group` (null, invalid or of one member: none): the neuron layers that
/// `mine` counted on each member, each once, in model order (by the stage of `model` that
/// holds the layer, then the order they ran), with the kernel a member reported (its counts
/// 0). `model` may be null for a member that ran nothing (it passes an empty `mine`).
std::vector<LayerFiring> pipelineFiringLayers(const dist::Group *group, const Model *model,
                                              const FiringCounts &mine);

/// Collective over `group` (as above): `counts` becomes, for each of `layers` in that order,
/// the sum over the members of their counts (a stage's layers on its ranks, a tp slice's
/// part, a dp replica's samples; a layer a member did not run adds 0).
void sumPipelineFiring(const dist::Group *group, const std::vector<LayerFiring> &layers,
                       FiringCounts &counts);

} // namespace snn::runtime

#endif // SNN_RUNTIME_PIPELINE_PIPELINESYNC_H
