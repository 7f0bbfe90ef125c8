//===- SegmentRecomputation.h - What recomputed training kept -----*- C++ -*-===//
//
// Executor::runRecomputingSegments (snn-run train --recompute) runs a program
// in segments whose forward keeps only their input; these counts are what
// the run's end event reports of it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_SEGMENTRECOMPUTATION_H
#define SNN_RUNTIME_EXECUTION_SEGMENTRECOMPUTATION_H

#include <cstdint>

namespace snn::runtime {

/// Totals over the process's recomputed forwards so far.
struct RecomputationCounts {
  int64_t segments = 0;   ///< segments recorded (one autograd node each)
  int64_t replays = 0;    ///< segments run again by a backward
  /// What the inputs of segments after the first were kept as (spikes as bits, counts as
  /// bytes, other values as themselves), and their float32 size.
  int64_t keptBytes = 0;
  int64_t floatBytes = 0;
  bool any() const { return segments > 0; }
};
RecomputationCounts recomputationCounts();

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_SEGMENTRECOMPUTATION_H
