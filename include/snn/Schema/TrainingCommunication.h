//===- TrainingCommunication.h - Collectives a training step makes -*- C++ -*-===//
//
// Besides the collectives a plan puts into its programs, the runtime's data-parallel
// training makes three kinds of its own every step: the gradient all-reduce in buckets
// (GradReducer), the BatchNorm statistics of the global batch (SyncBatchNorm, forward and
// backward) and the step's loss and correct count (Trainer). A pipeline ends its step with
// its own (PipelineSync, below). Their sizes are defined here once: the runtime allocates by
// them and the planner's cost model counts them (docs/planner.md, "The cost model").
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_TRAININGCOMMUNICATION_H
#define SNN_SCHEMA_TRAININGCOMMUNICATION_H

#include <cstddef>
#include <cstdint>

namespace snn::schema {

/// Capacity of one gradient bucket: a bucket's all-reduce starts when its last gradient is
/// ready; a parameter larger than this gets a bucket of its own.
inline constexpr size_t kGradientBucketBytes = size_t(1) << 20;

/// Synchronised BatchNorm over C channels, in float64: forward all-reduces
/// [sum x (C), sum x^2 (C), count], backward [sum dy (C), sum dy (x - mean) (C)].
inline constexpr int64_t syncBatchNormForwardElements(int64_t channels) {
  return 2 * channels + 1;
}
inline constexpr int64_t syncBatchNormBackwardElements(int64_t channels) {
  return 2 * channels;
}
inline constexpr int64_t kSyncBatchNormElementBytes = 8;

/// The step's [loss, correct count] in float64, all-reduced over the data-parallel group.
inline constexpr int64_t kStepMetricsElements = 2;
inline constexpr int64_t kStepMetricsElementBytes = 8;

/// A pipeline's step, after its last microbatch: the last stage broadcasts the step metrics
/// over the pp group, and with dp replicas every rank then all-reduces them over dp,
/// all-reduces its stages' gradients (one flat tensor), all-gathers its BatchNorms' running
/// statistics (mean and variance, C floats each) to combine the replicas' updates, and
/// broadcasts all of its buffers from replica 0.
inline constexpr int64_t kRunningStatisticsPerChannel = 2;
inline constexpr int64_t kRunningStatisticElementBytes = 4;

} // namespace snn::schema

#endif // SNN_SCHEMA_TRAININGCOMMUNICATION_H
