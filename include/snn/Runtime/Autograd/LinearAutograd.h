//===- LinearAutograd.h - Large Linear layers split over threads -*- C++ -*-===//
//
// snn-run keeps OpenBLAS at one thread (its workers spin against ATen's
// OpenMP team, CommandSupport.cpp), so a Linear layer's GEMMs ran on one
// core while the others waited. For large GEMMs with more than one intra-op
// thread, this Linear splits every GEMM of the forward and backward into
// row blocks of its output, one per thread, each a one-thread BLAS call
// over the whole reduction dimension (no sum is split). Small GEMMs and
// one-thread runs keep at::linear.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_LINEARAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_LINEARAUTOGRAD_H

#include <ATen/core/Tensor.h>

namespace snn::runtime {

/// at::linear(x, weight, bias) for x [M, in], weight [out, in], bias [out]
/// or undefined; recorded in the autograd graph when grad mode is on.
at::Tensor threadedLinear(const at::Tensor &x, const at::Tensor &weight,
                          const at::Tensor &bias);

/// Whether threadedLinear splits this GEMM (more than one thread, float
/// CPU, a 2-D input and enough work per thread).
bool linearIsSplit(const at::Tensor &x, const at::Tensor &weight);

class WeightGradQueue;

/// threadedLinear for x [..., in] (grad mode on) whose backward computes
/// only x's gradient and queues the weight and bias gradients in `queue`
/// (WeightGradQueue.h): the same GEMMs as threadedLinear's backward (or
/// at::linear's autograd formulas), so the gradients are the same.
at::Tensor linearDeferringWeightGrad(const at::Tensor &x, const at::Tensor &weight,
                                     const at::Tensor &bias, WeightGradQueue &queue);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_LINEARAUTOGRAD_H
