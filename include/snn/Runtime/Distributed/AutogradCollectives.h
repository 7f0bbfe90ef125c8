//===- AutogradCollectives.h - Differentiable collectives -------*- C++ -*-===//
//
// Megatron-style conjugate pairs, as autograd Functions (all defined in
// AutogradCollectives.cpp). For a tensor-parallel group G:
//
//   copyToGroup      (f)  forward: identity        backward: all_reduce(sum)
//   reduceFromGroup  (g)  forward: all_reduce(sum)  backward: identity
//   gatherFromGroup       forward: all_gather      backward: own slice, or
//                                                   reduce_scatter(sum)
//   scatterToGroup        forward: own slice       backward: all_gather
//   reduceScatterToGroup  forward: reduce_scatter  backward: all_gather
//
// gatherFromGroup's backward depends on what consumes the gathered tensor:
// GatherBackward::Slice when every member computes the same function of it
// (tensor parallelism: the output gradient is replicated, each member keeps
// its slice); GatherBackward::ReduceScatter when each member uses it with
// its own data (FSDP's parameter all-gather: the gradient is the sum over
// members).
//
// `dim` is the dimension that is split over the group (its size divisible by
// the group size where a split happens). Backward collectives run on the
// thread that runs backward, in the order autograd reaches them: members
// must have the same graph.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_AUTOGRADCOLLECTIVES_H
#define SNN_RUNTIME_DISTRIBUTED_AUTOGRADCOLLECTIVES_H

#include "snn/Runtime/Distributed/ProcessGroups.h"

#include <ATen/core/Tensor.h>

namespace snn::dist {

enum class GatherBackward { Slice, ReduceScatter };

at::Tensor copyToGroup(const at::Tensor &input, const Group &group);
at::Tensor reduceFromGroup(const at::Tensor &input, const Group &group);
at::Tensor gatherFromGroup(const at::Tensor &input, const Group &group,
                           int64_t dim,
                           GatherBackward backward = GatherBackward::Slice);
at::Tensor scatterToGroup(const at::Tensor &input, const Group &group,
                          int64_t dim);
at::Tensor reduceScatterToGroup(const at::Tensor &input, const Group &group,
                                int64_t dim);

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_AUTOGRADCOLLECTIVES_H
