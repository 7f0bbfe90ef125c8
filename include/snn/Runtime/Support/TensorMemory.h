//===- TensorMemory.h - Bytes held by CPU tensors --------------*- C++ -*-===//
//
// The peak of the bytes that CPU tensors hold, measured rather than
// estimated: a pipeline's activation memory per rank (what 1F1B saves over
// GPipe, what recomputation saves) and, next to the plan's prediction, the
// memory a run really needed. Peak RSS cannot show it: the heap keeps freed
// pages and RSS includes the code, the libraries and the data set.
//
//   TensorMemory::install();        // once, before the tensors to count
//   TensorMemory::resetPeak();
//   ... a training step ...
//   int64_t peak = TensorMemory::peakBytes();
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_TENSORMEMORY_H
#define SNN_RUNTIME_SUPPORT_TENSORMEMORY_H

#include <cstdint>

namespace snn::runtime {

class TensorMemory {
public:
  /// Routes ATen's CPU allocations through a counting allocator (idempotent).
  /// Tensors allocated before stay uncounted, also when they are freed.
  static void install();
  static bool installed();
  /// Bytes of the counted tensors alive now.
  static int64_t liveBytes();
  /// The most liveBytes() reached since install() or the last resetPeak().
  static int64_t peakBytes();
  /// Starts a new peak at the current live bytes.
  static void resetPeak();
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_TENSORMEMORY_H
