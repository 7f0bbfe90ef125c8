//===- BatchNormAutograd.h - Training BatchNorm as a Function ---*- C++ -*-===//
//
// BatchNormKernels.h's forward recorded in the autograd graph. The backward
// is ATen's own native_batch_norm_backward on the same saved tensors (input,
// weight, mean, invstd) that PyTorch's BatchNorm node keeps, so gradients
// are the reference's bit for bit. The torch::autograd headers stay in
// BatchNormAutograd.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_BATCHNORMAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_BATCHNORMAUTOGRAD_H

#include <ATen/core/Tensor.h>

namespace snn::runtime {

/// Training-mode BatchNorm of x [B, C, ...] with gradients to x, weight and
/// bias; the running statistics are updated in place. Requires
/// batchNormKernelAvailable() and batchNormKernelApplies(...).
at::Tensor batchNormTrainingWithGrad(const at::Tensor &x,
                                     const at::Tensor &weight,
                                     const at::Tensor &bias,
                                     const at::Tensor &runningMean,
                                     const at::Tensor &runningVar,
                                     double momentum, double eps);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_BATCHNORMAUTOGRAD_H
