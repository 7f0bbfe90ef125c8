//===- SurrogateKernels.h - A surrogate's dS/dx over a tensor ----*- C++ -*-===//
//
// The derivative a surrogate gives the Heaviside spike S = (x >= 0), evaluated
// elementwise by the same SurrogateMath functions the fused neuron kernels use
// (NeuronEquations.h), for ops that fire outside those kernels.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_SURROGATEKERNELS_H
#define SNN_RUNTIME_KERNELS_SURROGATEKERNELS_H

#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <ATen/core/Tensor.h>

namespace snn::runtime {

/// dS/dx of `surrogate` (parameters `alpha`, `beta`) at every value of `x`, a
/// float32 or float64 CPU tensor; the result is contiguous, of x's shape.
at::Tensor surrogateGradient(const at::Tensor &x, Surrogate surrogate, double alpha, double beta);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_SURROGATEKERNELS_H
