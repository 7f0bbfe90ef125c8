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
// A CollectiveTrace, when given, hears of every collective the function runs
// on its group, in forward and in backward, with the bytes of the tensor the
// collective returns on this rank (the all_gather of scatterToGroup's
// backward: the gathered gradient). A group of one communicates nothing and
// reports nothing. snn-run counts a partitioned program's communication this
// way (--comm-stats).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_AUTOGRADCOLLECTIVES_H
#define SNN_RUNTIME_DISTRIBUTED_AUTOGRADCOLLECTIVES_H

#include "snn/Runtime/Distributed/Group.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>

namespace snn::dist {

enum class GatherBackward { Slice, ReduceScatter };

/// The collective a differentiable collective ran.
enum class CollectiveKind { AllReduce, AllGather, ReduceScatter };
/// "all_reduce", "all_gather", "reduce_scatter".
const char *collectiveKindName(CollectiveKind kind);

/// Called once per collective that communicates (forward or backward), on
/// the thread that runs it, with the bytes of the tensor it returns here.
using CollectiveTrace =
    std::function<void(CollectiveKind kind, int64_t bytes, double seconds)>;

at::Tensor copyToGroup(const at::Tensor &input, const Group &group,
                       const CollectiveTrace &trace = {});
at::Tensor reduceFromGroup(const at::Tensor &input, const Group &group,
                           const CollectiveTrace &trace = {});
at::Tensor gatherFromGroup(const at::Tensor &input, const Group &group,
                           int64_t dim,
                           GatherBackward backward = GatherBackward::Slice,
                           const CollectiveTrace &trace = {});
at::Tensor scatterToGroup(const at::Tensor &input, const Group &group,
                          int64_t dim, const CollectiveTrace &trace = {});
at::Tensor reduceScatterToGroup(const at::Tensor &input, const Group &group,
                                int64_t dim, const CollectiveTrace &trace = {});

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_AUTOGRADCOLLECTIVES_H
