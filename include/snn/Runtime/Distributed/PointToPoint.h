//===- PointToPoint.h - Asynchronous send and receive on a Group -*- C++ -*-===//
//
// The transfers of a pipeline: one member sends a tensor to another, which
// receives it into a buffer of the same shape and dtype. Both start at once
// and return a PendingTransfer; the data moves on the backend's threads
// while the caller computes, and wait() completes it. A receive matches the
// send from its peer with the same tag; transfers with different tags may be
// started and completed in any order (Gloo matches them by tag, FIFO among
// equal tags).
//
// wait() is bounded by the group's timeout. A transfer whose peer died or
// never posted the matching call ends in one line naming the peer:
//   rank 0: lost peer rank 1 during recv from rank 1 (group pp {0, 1},
//   tag 7): Connection closed by peer [...] [no heartbeat from rank 1]
// Transfers do not count as collectives (the members need not run the same
// ones), so they never shift the collectives' numbering.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_POINTTOPOINT_H
#define SNN_RUNTIME_DISTRIBUTED_POINTTOPOINT_H

#include "snn/Runtime/Distributed/Group.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

namespace snn::dist {

/// Tags a caller may use: 0 <= tag < kMaxTransferTag (the range above is
/// the library's own, e.g. the Gloo reduce_scatter ring).
constexpr int64_t kMaxTransferTag = int64_t(1) << 30;

namespace detail {
struct TransferState;
}

/// A send or receive in flight. Destroying one that was never waited for
/// (an error path) aborts it at once instead of waiting; its buffer then
/// stays allocated until the process ends, since the backend may still move
/// data through it.
class PendingTransfer {
public:
  PendingTransfer();
  PendingTransfer(PendingTransfer &&) noexcept;
  PendingTransfer &operator=(PendingTransfer &&) noexcept;
  ~PendingTransfer();

  bool valid() const { return state_ != nullptr; }
  /// Blocks until the transfer is done; a receive's data is then in
  /// tensor(). Throws DistributedError naming the peer (see above).
  void wait();
  /// The tensor sent, or the receive buffer.
  const at::Tensor &tensor() const;

private:
  friend PendingTransfer isend(const Group &, const at::Tensor &, int, int64_t);
  friend PendingTransfer irecv(const Group &, const at::Tensor &, int, int64_t);
  std::unique_ptr<detail::TransferState> state_;
};

/// Starts sending `tensor` to group member `peer` (a rank in the group, not
/// this one) with `tag`. A non-contiguous tensor is sent through a
/// contiguous copy; the caller must not modify `tensor` until wait().
/// Throws DistributedError for bad arguments or a peer already lost.
PendingTransfer isend(const Group &group, const at::Tensor &tensor, int peer,
                      int64_t tag);

/// Starts receiving from group member `peer` the tensor it sends with `tag`
/// into `buffer`, which must be contiguous and have the shape and dtype the
/// peer sends.
PendingTransfer irecv(const Group &group, const at::Tensor &buffer, int peer,
                      int64_t tag);

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_POINTTOPOINT_H
