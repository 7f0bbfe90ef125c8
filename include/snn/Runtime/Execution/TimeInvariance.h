//===- TimeInvariance.h - Inputs that are the same at every step -*- C++ -*-===//
//
// A directly encoded input repeats one image over the T steps. A conv2d on
// such an input computes one step and returns it as a view repeated over T
// (stride 0 along dim 0), so the first layer of a direct-encoded network
// does 1/T of its forward and weight-gradient work (the backward convolves
// the steps' summed gradient; ConvAutograd.h), and a spiking
// block after it reads the one step in place and, in training, hands the
// convolution that summed gradient itself (repeatedStepWithHistory): no
// gradient of T steps is held. Layers that cannot use the
// view read it through reshape or contiguous(), which materialise it: the
// values are the same either way.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_TIMEINVARIANCE_H
#define SNN_RUNTIME_EXECUTION_TIMEINVARIANCE_H

#include <ATen/core/Tensor.h>

namespace snn::runtime {

/// Step 0 of x [T, N, ...] (T > 1) when every step equals it: x is a view
/// repeated over T (stride 0), or x holds no autograd history that would
/// need per-step gradients and its steps are bytewise equal. Undefined
/// otherwise.
at::Tensor timeInvariantStep(const at::Tensor &x);

/// conv2d runs so far that computed one step of a time-invariant input.
int64_t timeInvariantRuns();
/// Counts one (the layers call it when they take the one-step path).
void countTimeInvariantRun();

/// `step` [N, ...] as the view [T, N, ...] repeated over `steps`.
at::Tensor repeatedOverTime(const at::Tensor &step, int64_t steps);

/// The step that x is repeatedOverTime() of, when that step has autograd
/// history (a layer of one step, as conv2d's above): a node may take the step
/// itself and give it the steps' summed gradient without holding T of them.
/// Undefined otherwise.
at::Tensor repeatedStepWithHistory(const at::Tensor &x);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_TIMEINVARIANCE_H
