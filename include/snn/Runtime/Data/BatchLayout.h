//===- BatchLayout.h - How a dataset feeds an artifact's input --*- C++ -*-===//
#ifndef SNN_RUNTIME_DATA_BATCHLAYOUT_H
#define SNN_RUNTIME_DATA_BATCHLAYOUT_H

#include "snn/Runtime/Data/Dataset.h"
#include "snn/Runtime/Execution/Manifest.h"

namespace snn::runtime {

struct BatchLayout {
  /// T of the time-major batch [T, N, ...]; 0 when the artifact's input has no
  /// time axis (batches are then [N, ...]).
  int64_t steps = 0;
  /// Samples carry their own time axis ([S, T, ...]) and are transposed to
  /// time-major; otherwise a static sample is repeated `steps` times (direct
  /// encoding).
  bool sequences = false;
};

/// Matches the per-sample shape of `dataset` against the artifact's input
/// `spec` ([T, N, ...] when time-major). A sample of the per-step shape is
/// static and is repeated T = `repeatTime` times (--repeat-time; 0 = not
/// given, then the manifest's static T); a sample with a leading time axis is
/// a sequence. Throws Error naming the dataset and both shapes otherwise.
BatchLayout resolveBatchLayout(const Dataset &dataset, const TensorSpec &spec,
                               int64_t repeatTime);

} // namespace snn::runtime

#endif // SNN_RUNTIME_DATA_BATCHLAYOUT_H
