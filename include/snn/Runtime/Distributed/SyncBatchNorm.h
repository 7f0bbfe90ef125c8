//===- SyncBatchNorm.h - BatchNorm with statistics over a group -*- C++ -*-===//
//
// PyTorch's SyncBatchNorm semantics for data parallelism: in training, every
// member normalises with the mean and biased variance of the whole batch (all
// members' inputs together), the running statistics are updated with the
// global unbiased variance, and backward all-reduces the two per-channel
// gradient reductions, so that the input gradient is the one of BatchNorm on
// the concatenated batch. The weight and bias gradients are this member's
// own (as PyTorch's): the data-parallel gradient average makes them global.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_SYNCBATCHNORM_H
#define SNN_RUNTIME_DISTRIBUTED_SYNCBATCHNORM_H

#include "snn/Runtime/Distributed/Group.h"

#include <ATen/core/Tensor.h>

namespace snn::dist {

/// Training-mode BatchNorm over `group` of x [M, C, ...] (channels on dim 1;
/// statistics over every other dim and every member). `weight` and `bias`
/// ([C]) may be undefined; `runningMean` / `runningVar` ([C], float) are
/// updated in place when defined (PyTorch's momentum, unbiased variance over
/// the global count). Differentiable in x, weight and bias.
///
/// Collective: one all_reduce of [sum x, sum x^2, count] (double; every
/// member gets the same bits) in forward and one of [sum dy,
/// sum dy * (x - mean)] in backward. Each is one pass over x (and dy), and
/// the input gradient one more: float32 and float64 inputs.
/// A group of one, or an invalid group, gives plain at::batch_norm.
at::Tensor syncBatchNorm(const at::Tensor &x, const at::Tensor &weight,
                         const at::Tensor &bias, const at::Tensor &runningMean,
                         const at::Tensor &runningVar, double momentum,
                         double eps, const Group &group);

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_SYNCBATCHNORM_H
