//===- SampleOrder.h - The seeded per-epoch sample order --------*- C++ -*-===//
//
// docs/training.md fixes the order in which samples are visited so that
// snn-run and the PyTorch reference trainer see the same batches: a
// Fisher-Yates shuffle driven by SplitMix64, seeded from (seed, epoch). It is
// a pure function of its arguments, so a resumed run recomputes the order of
// its epoch instead of storing it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DATA_SAMPLEORDER_H
#define SNN_RUNTIME_DATA_SAMPLEORDER_H

#include <cstdint>
#include <vector>

namespace snn::runtime {

/// SplitMix64 (Steele, Lea, Flood 2014) with 64-bit wrap-around arithmetic.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t state) : state(state) {}
  uint64_t next();

private:
  uint64_t state;
};

/// The permutation of [0, count) for epoch `epoch` (0-based) of a run seeded
/// with `seed`: state = seed * 0x9E3779B97F4A7C15 + epoch + 1, then for i from
/// count-1 down to 1 swap order[i] with order[next() mod (i + 1)].
std::vector<int64_t> shuffledOrder(uint64_t seed, int64_t epoch, int64_t count);

/// [0, 1, ..., count-1] (--no-shuffle).
std::vector<int64_t> fileOrder(int64_t count);

} // namespace snn::runtime

#endif // SNN_RUNTIME_DATA_SAMPLEORDER_H
