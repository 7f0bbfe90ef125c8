//===- ModelStepCalibration.h - One model's training step, measured -*- C++ -*-===//
//
// `snn-run calibrate --model DIR` times the whole training step of a compiled
// model (DIR: an artifact whose one program every rank runs whole, e.g.
// `snn-compile model.onnx -o DIR`) in this process at several batch sizes:
// forward in training mode, the MSE loss on the firing rate, backward and an
// SGD step with momentum, as `snn-run train` makes them. The planner scales
// its op curves to these times for that model (DeviceProfile.h,
// docs/planner.md), which charges what the curves leave out: shapes unlike
// the calibrated ones (a convolution of one input channel, a GEMM of few
// rows), the autograd engine, the loss and the update.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_COMMANDS_MODELSTEPCALIBRATION_H
#define SNN_RUNTIME_COMMANDS_MODELSTEPCALIBRATION_H

#include "snn/Runtime/Commands/Calibration.h"
#include "snn/Schema/DeviceProfile.h"

namespace snn::dist {
class Group;
}

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace snn::runtime {

/// --model-batches' default: 1, 2, 4, ... 64 samples per step.
std::vector<int64_t> defaultModelBatches();

/// Throws Error (one line naming DIR) unless DIR is an artifact whose single
/// program runs whole on one rank (not partitioned, not a pipeline) and whose
/// input shape has exactly one free (batch) dimension.
void checkModelToCalibrate(const std::string &dir);

/// One training step of each DIR's model at each of `batches` (ascending, positive)
/// samples, and node by node too where a spiking block ran, in one process. The samples
/// are taken in rounds over every model and size (InterleavedSampler), in as many batches
/// of rounds as the caller asks for, so that they may be spread over a calibration: a
/// shared host's slow spells last tens of seconds. Construction loads the models (Error,
/// one line naming DIR, for a model without trainable parameters and for two directories
/// of one model: same parameter count and input shape) and warms their steps up. A sample
/// is the steps after the round's first step of that point, which is timed apart: the
/// cold step (after other models' and sizes' steps) of the fused points is the curve's
/// `coldPoints`.
class ModelStepSampler {
public:
  ModelStepSampler(const std::vector<std::string> &dirs, const std::vector<int64_t> &batches,
                   const CalibrationTiming &timing);
  ~ModelStepSampler();
  ModelStepSampler(const ModelStepSampler &) = delete;
  ModelStepSampler &operator=(const ModelStepSampler &) = delete;

  /// `rounds` more samples of every step, each round reported to `progress` (may be empty).
  void sample(int rounds, const CalibrationProgressFn &progress);
  /// Each model's curves: every point the median of its samples so far (at least one).
  std::vector<schema::ModelStepCurve> curves() const;

private:
  struct State;
  std::unique_ptr<State> state;
};

/// On every rank of `group` at once: the training steps of DIR's model as
/// data-parallel replicas over the group, as the trainer makes them (SyncBatchNorm
/// over it, the step's metrics and the gradients' bucketed all-reduce) at each of
/// `batches` samples per rank, timed alike on every rank (a barrier starts each
/// sample).
std::vector<schema::ProfilePoint>
measureReplicatedSteps(const std::string &dir, const dist::Group &group,
                       const std::vector<int64_t> &batches, const CalibrationTiming &timing,
                       const CalibrationProgressFn &progress);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_MODELSTEPCALIBRATION_H
