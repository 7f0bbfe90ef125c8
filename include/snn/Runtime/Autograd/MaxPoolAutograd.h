//===- MaxPoolAutograd.h - Max pooling as an autograd Function --*- C++ -*-===//
//
// MaxPoolKernels.h exposed to autograd: the forward saves the one-byte
// argmax, the backward scatters the gradient to it. The torch::autograd
// headers stay in MaxPoolAutograd.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_MAXPOOLAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_MAXPOOLAUTOGRAD_H

#include "snn/Runtime/Kernels/MaxPoolKernels.h"

namespace snn::runtime {

/// The pooled x [B, C, H, W], recorded in the autograd graph.
at::Tensor maxPoolWithGrad(const at::Tensor &x, const MaxPoolWindow &window);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_MAXPOOLAUTOGRAD_H
