//===- NonFiniteValues.h - No checkpoint of NaN weights ---------*- C++ -*-===//
//
// A checkpoint is where a run goes back to when something went wrong, so it
// must never hold a NaN or an infinity: a finite loss does not guarantee
// finite weights (a NaN input that no neuron lets through still reaches the
// gradients of the layers before it). Every save looks first.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_NONFINITEVALUES_H
#define SNN_RUNTIME_CHECKPOINT_NONFINITEVALUES_H

#include "snn/Runtime/Checkpoint/Checkpoint.h"

#include <string>

namespace snn::runtime {

/// The first floating-point tensor of `state` (parameters and buffers in
/// order, then the optimizer state) holding a NaN or an infinity, named as
/// "parameter 'fc.weight'" or "optimizer state 'exp_avg' of 'fc.weight'";
/// empty when every value is finite. One read of each tensor.
std::string firstNonFiniteTensor(const CheckpointState &state);

/// Why `state` must not be saved: "parameter 'fc.weight' is not finite after
/// step 4: no checkpoint of it is written"; empty when every value is finite.
std::string nonFiniteRefusal(const CheckpointState &state);

/// The same for one tensor: whether every value is finite.
bool allFinite(const at::Tensor &tensor);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_NONFINITEVALUES_H
