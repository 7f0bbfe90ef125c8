//===- BatchLayout.cpp - How a dataset feeds an artifact's input ----------===//

#include "snn/Runtime/Data/BatchLayout.h"
#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

namespace snn::runtime {

namespace {

/// A sequence sample of a time-major input [T, N, ...] is [T, ...].
std::vector<int64_t> sequenceShape(const TensorSpec &spec) {
  std::vector<int64_t> shape{spec.shape[0]};
  shape.insert(shape.end(), spec.shape.begin() + 2, spec.shape.end());
  return shape;
}

BatchLayout staticLayout(const Dataset &dataset, const TensorSpec &spec,
                         int64_t repeatTime) {
  int64_t manifestSteps = spec.shape[0];
  if (repeatTime > 0 && manifestSteps >= 0 && repeatTime != manifestSteps)
    throw Error(
        "--repeat-time " + std::to_string(repeatTime) +
        " does not match the artifact's T = " + std::to_string(manifestSteps));
  int64_t steps = repeatTime > 0 ? repeatTime : manifestSteps;
  if (steps < 1)
    throw Error(dataset.name + ": static samples need --repeat-time T (the "
                               "artifact's T is dynamic)");
  return BatchLayout{steps, false};
}

BatchLayout sequenceLayout(const Dataset &dataset, int64_t repeatTime) {
  if (repeatTime > 0)
    throw Error(dataset.name + " holds sequences [S, T, ...] (shape " +
                formatShape(dataset.samples.sizes()) +
                "); --repeat-time applies to static samples only");
  return BatchLayout{dataset.samples.size(1), true};
}

[[noreturn]] void mismatch(const Dataset &dataset, const TensorSpec &spec) {
  at::IntArrayRef sample = dataset.samples.sizes().slice(1);
  std::string expected;
  if (spec.timeMajor)
    expected = formatShape(at::IntArrayRef(spec.shape).slice(2)) +
               " (static, repeated over T) or " +
               formatShape(sequenceShape(spec)) + " (a sequence [T, ...])";
  else
    expected = formatShape(at::IntArrayRef(spec.shape).slice(1));
  throw Error(dataset.name + ": samples have shape " + formatShape(sample) +
              ", the artifact's input '" + spec.name + "' " +
              formatShape(spec.shape) + " takes " + expected + " per sample");
}

} // namespace

BatchLayout resolveBatchLayout(const Dataset &dataset, const TensorSpec &spec,
                               int64_t repeatTime) {
  at::IntArrayRef sample = dataset.samples.sizes().slice(1);
  at::IntArrayRef shape(spec.shape);
  if (!spec.timeMajor) {
    if (repeatTime > 0)
      throw Error("--repeat-time: the artifact's input is not time-major");
    if (shape.empty() || !matchesSpecShape(sample, shape.slice(1)))
      mismatch(dataset, spec);
    return BatchLayout{0, false};
  }
  if (matchesSpecShape(sample, shape.slice(2)))
    return staticLayout(dataset, spec, repeatTime);
  if (matchesSpecShape(sample, sequenceShape(spec)))
    return sequenceLayout(dataset, repeatTime);
  mismatch(dataset, spec);
}

} // namespace snn::runtime
