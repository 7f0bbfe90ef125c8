//===- TrainingCommunication.h - Collectives a training step makes -*- C++ -*-===//
//
// Besides the collectives a plan puts into its programs, the runtime's data-parallel
// training makes three kinds of its own every step: the gradient all-reduce in buckets
// (GradReducer), the BatchNorm statistics of the global batch (SyncBatchNorm, forward and
// backward) and the step's loss and correct count (Trainer). Their sizes are defined here
// once: the runtime allocates by them and the planner's cost model counts them
// (docs/planner.md, "The cost model").
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

} // namespace snn::schema

#endif // SNN_SCHEMA_TRAININGCOMMUNICATION_H
