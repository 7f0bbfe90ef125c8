//===- RecurrentNeuronAutograd.h - A neuron fed back its own output -*- C++ -*-===//
//
// A described neuron (Kernels/GenericNeuronKernels.h) whose output reaches its
// own input one step later through a Linear: step t's input is
// x[t] + out[t-1] W^T + b, out[-1] = 0. The steps depend on each other through
// the product, so they run one at a time, each a few ATen ops (the step
// program's instructions with evaluateInstruction, the fire as the surrogate
// spike); autograd records them, and its backward is backpropagation through
// time over the feedback.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_RECURRENTNEURONAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_RECURRENTNEURONAUTOGRAD_H

#include "snn/Runtime/Kernels/GenericNeuronKernels.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace snn::runtime {

struct RecurrentNeuronResult {
  at::Tensor output; ///< x's shape, [T, N, F]
  int64_t fired = 0; ///< spikes of the fire rule
};

/// Runs `neuron` over dim 0 of `x` [T, N, F] with the feedback `weight` [F, F] and `bias`
/// [F]; `operands` the description's ([], [F], per step [T] or [T, F]). Recorded in the
/// autograd graph when grad mode is on. The program must pass
/// schema::recurrentProgramError.
RecurrentNeuronResult recurrentNeuronSteps(const GenericNeuron &neuron, const at::Tensor &x,
                                           const at::Tensor &weight, const at::Tensor &bias,
                                           const std::vector<at::Tensor> &operands);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_RECURRENTNEURONAUTOGRAD_H
