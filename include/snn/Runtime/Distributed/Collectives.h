//===- Collectives.h - Synchronous collectives on a Group --------*- C++ -*-===//
//
// Thin, synchronous helpers over the group's c10d process group. Each one
// returns when the result is in place, or throws DistributedError:
//   - for bad arguments (names the operation, the group and the problem);
//   - when a peer dies or hangs, within the group's timeout:
//       rank R: lost peer (rank K?) during OP (group G, #N): REASON
// Every member must call the same collectives in the same order with tensors
// of the same shape and dtype (as in torch.distributed). A group of size 1
// needs no communication: the helpers return at once.
//
// reduce_scatter: Gloo in LibTorch 1.13 has none (nor _allgather_base); on
// Gloo it runs as a ring of send/recv (n - 1 steps, each rank sends
// (n - 1)/n of the data, as a native reduce_scatter would). all_reduce on
// Gloo of up to 1 MiB over a power-of-two group runs as recursive doubling
// over send/recv (log2 n exchanges; Gloo's own took 5-9x as long for small
// tensors), which leaves every member the same bits. See
// docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_COLLECTIVES_H
#define SNN_RUNTIME_DISTRIBUTED_COLLECTIVES_H

#include "snn/Runtime/Distributed/Group.h"

#include <ATen/core/Tensor.h>

#include <memory>

namespace snn::dist {

enum class ReduceOp {
  Sum,
  Avg, ///< Sum, then divided by the group size (floating point only).
  Max,
  Min,
  Product,
};

const char *reduceOpName(ReduceOp op);

/// In place: every member's `tensor` becomes the reduction over members.
void allReduce(const Group &group, at::Tensor &tensor,
               ReduceOp op = ReduceOp::Sum);

/// The members' tensors concatenated along dim 0, in group-rank order:
/// [size * d0, d1, ...]; a 0-dim tensor gives [size].
at::Tensor allGather(const Group &group, const at::Tensor &tensor);

/// allGather into an existing contiguous `output` of that shape (no extra
/// result buffer; FSDP gathers straight into the storage its parameters
/// view). Throws DistributedError naming the shapes if it does not fit.
void allGatherInto(const Group &group, const at::Tensor &tensor,
                   at::Tensor &output);

/// The reduction over members of `tensor` (dim 0 divisible by the group
/// size), split along dim 0: member i gets chunk i, [d0 / size, d1, ...].
at::Tensor reduceScatter(const Group &group, const at::Tensor &tensor,
                         ReduceOp op = ReduceOp::Sum);

/// In place: every member's `tensor` becomes member `root`'s (a group rank).
void broadcast(const Group &group, at::Tensor &tensor, int root = 0);

/// Returns when every member has called it.
void barrier(const Group &group);

namespace detail {
struct PendingState;
}

/// An all_reduce or all_gather in flight (Gloo runs it on its worker
/// threads). wait() completes it, applying Avg's division; destroying a
/// PendingCollective that was never waited for waits for it (errors are then
/// swallowed).
class PendingCollective {
public:
  PendingCollective();
  PendingCollective(PendingCollective &&) noexcept;
  PendingCollective &operator=(PendingCollective &&) noexcept;
  ~PendingCollective();

  bool valid() const { return state_ != nullptr; }
  /// Blocks until done; throws DistributedError like the synchronous calls.
  void wait();

private:
  friend PendingCollective allReduceAsync(const Group &, at::Tensor &,
                                          ReduceOp);
  friend PendingCollective allGatherIntoAsync(const Group &, const at::Tensor &,
                                              at::Tensor &);
  std::unique_ptr<detail::PendingState> state_;
};

/// Starts an in-place all_reduce; the tensor must not be touched until
/// wait() returns. Members must start their async collectives in the same
/// order, and wait for them in the same order among their other collectives:
/// one that goes by recursive doubling runs when waited for.
PendingCollective allReduceAsync(const Group &group, at::Tensor &tensor,
                                 ReduceOp op = ReduceOp::Sum);

/// Starts allGatherInto (same shapes and errors); `output` must not be
/// touched until wait() returns (fsdp prefetches the next layer's parameters
/// while the current one computes). With nothing to send (a group of one, an
/// empty tensor) it completes before returning and the PendingCollective is
/// invalid.
PendingCollective allGatherIntoAsync(const Group &group,
                                     const at::Tensor &tensor,
                                     at::Tensor &output);

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_COLLECTIVES_H
