//===- GenericNeuronAutograd.h - Described neurons as autograd Functions -*- C++ -*-===//
//
// The neuron program evaluator (Kernels/GenericNeuronKernels.h) exposed to
// autograd: the forward saves every step's states, the backward is the
// evaluator's reverse sweep; the uniforms (functions of the operands) are
// computed with ATen ops so autograd carries their gradients to the operands.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_GENERICNEURONAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_GENERICNEURONAUTOGRAD_H

#include "snn/Runtime/Kernels/GenericNeuronKernels.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

namespace snn::runtime {

/// The neuron's output over dim 0 of `x` [T, N, ...], recorded in the autograd
/// graph: gradients flow to `x` and to `operands`. `fired` (may be null)
/// receives the number of spikes.
at::Tensor genericNeuronWithGrad(const std::shared_ptr<const GenericNeuron> &neuron,
                                 const at::Tensor &x, const std::vector<at::Tensor> &operands,
                                 int64_t *fired = nullptr);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_GENERICNEURONAUTOGRAD_H
