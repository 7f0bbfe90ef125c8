//===- SurrogateSpikeAutograd.h - Heaviside with a surrogate gradient -*- C++ -*-===//
//
// The spike of an op that computes its pre-fire potential H with ATen ops (the
// parallel spiking neurons): S = Heaviside(H) forward, dL/dH = dL/dS * dS/dH
// by the surrogate backward, as SpikingJelly's surrogate functions do.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_SURROGATESPIKEAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_SURROGATESPIKEAUTOGRAD_H

#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <ATen/core/Tensor.h>

namespace snn::runtime {

/// A surrogate and its parameters (schema::SurrogateSpec says which is which).
struct SpikeSurrogate {
  Surrogate kind = Surrogate::ATan;
  float alpha = 2.0f;
  float beta = 0.0f;
};

/// 1 where h >= 0, else +0 (never -0: the runtime recognises spike tensors by
/// their bits, SpikeBits.h), contiguous, of h's shape and dtype.
at::Tensor heaviside(const at::Tensor &h);

/// heaviside(h) recorded in the autograd graph: its backward multiplies the
/// incoming gradient by the surrogate's dS/dH at h.
at::Tensor surrogateSpikeWithGrad(const at::Tensor &h, const SpikeSurrogate &surrogate);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_SURROGATESPIKEAUTOGRAD_H
