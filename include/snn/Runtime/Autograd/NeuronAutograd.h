//===- NeuronAutograd.h - Neurons as autograd Functions ---------*- C++ -*-===//
//
// The fused neuron kernels exposed to autograd: the forward saves the
// pre-fire potential H (and, for PLIF, its input), the backward is the one
// reverse loop over T of neuronBackward. The torch::autograd headers stay in
// NeuronAutograd.cpp; callers only see this function.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_NEURONAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_NEURONAUTOGRAD_H

#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <ATen/core/Tensor.h>

namespace snn::runtime {

/// Spikes of the neuron layer over dim 0 of `x` [T, N, ...], recorded in the
/// autograd graph: gradients flow to `x` and, for PLIF, to its weight `w`
/// (one element; undefined for IF and LIF). Saved for backward: H (x's size)
/// and for PLIF also x and w. `fired` (may be null) receives the number of
/// spikes.
at::Tensor neuronSpikesWithGrad(const at::Tensor &x, const at::Tensor &w,
                                const NeuronConfig &config, int64_t *fired = nullptr);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_NEURONAUTOGRAD_H
