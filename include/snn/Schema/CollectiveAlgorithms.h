//===- CollectiveAlgorithms.h - How the runtime runs its collectives -*- C++ -*-===//
//
// Which algorithm the runtime's Gloo collectives use (lib/Runtime/Distributed/
// Collectives.cpp) decides how many messages each one waits for in turn, which is what the
// planner's cost model counts (docs/planner.md, "The cost model"). Defined here once.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_COLLECTIVEALGORITHMS_H
#define SNN_SCHEMA_COLLECTIVEALGORITHMS_H

#include <cstdint>

namespace snn::schema {

/// The largest all_reduce (bytes of the tensor) that runs by recursive doubling.
inline constexpr int64_t kRecursiveDoublingMaxBytes = int64_t(1) << 20;

/// Whether a Gloo all_reduce of `bytes` over `ranks` runs by recursive doubling over
/// send/recv (log2 ranks exchanges of the whole tensor): small tensors over power-of-two
/// groups. Others take Gloo's ring.
inline constexpr bool allReduceByRecursiveDoubling(int64_t ranks, int64_t bytes) {
  return ranks > 1 && (ranks & (ranks - 1)) == 0 && bytes <= kRecursiveDoublingMaxBytes;
}

/// The messages an all_reduce of `bytes` over `ranks` waits for one after another:
/// log2 ranks by recursive doubling, 2 (ranks - 1) around a ring.
inline constexpr int64_t allReduceSteps(int64_t ranks, int64_t bytes) {
  if (ranks <= 1)
    return 0;
  if (!allReduceByRecursiveDoubling(ranks, bytes))
    return 2 * (ranks - 1);
  int64_t steps = 0;
  for (int64_t distance = 1; distance < ranks; distance <<= 1)
    ++steps;
  return steps;
}

/// The bytes each rank sends in such an all_reduce: the whole tensor per doubling step, or
/// 2 (ranks - 1) / ranks of it around the ring.
inline constexpr int64_t allReduceSentBytes(int64_t ranks, int64_t bytes) {
  if (ranks <= 1)
    return 0;
  if (allReduceByRecursiveDoubling(ranks, bytes))
    return allReduceSteps(ranks, bytes) * bytes;
  return 2 * (ranks - 1) * bytes / ranks;
}

static_assert(allReduceSteps(2, 4096) == 1 && allReduceSteps(8, 4096) == 3);
static_assert(allReduceSteps(4, int64_t(4) << 20) == 6 && allReduceSteps(3, 4096) == 4);

} // namespace snn::schema

#endif // SNN_SCHEMA_COLLECTIVEALGORITHMS_H
