//===- PointToPoint.cpp - Asynchronous send and receive on a Group --------===//

#include "snn/Runtime/Distributed/PointToPoint.h"
#include "GroupState.h"

#include <c10/core/InferenceMode.h>

#include <mutex>
#include <vector>

namespace snn::dist {

using detail::GroupState;

struct detail::TransferState {
  Group group;
  bool send = true;
  int peer = 0; // group rank
  int64_t tag = 0;
  at::Tensor tensor;
  c10::intrusive_ptr<c10d::Work> work;

  /// "send to rank 3", "recv from rank 0"
  std::string what() const {
    return std::string(send ? "send to" : "recv from") + " rank " +
           std::to_string(group.globalRank(peer));
  }
};

namespace {

/// Callers' tags live below kMaxTransferTag; the library's ring
/// reduce_scatter uses tags below it on the same process groups, so the
/// callers' are moved above.
int backendTag(int64_t tag) { return int(kMaxTransferTag + tag); }

void checkArguments(const GroupState &g, const char *op, const at::Tensor &tensor,
                    int peer, int64_t tag) {
  std::string where = g.prefix() + op + " on group " + g.name + ": ";
  if (peer < 0 || peer >= g.size() || peer == g.rank)
    throw DistributedError(where + "peer " + std::to_string(peer) +
                           " is not another member of the group (size " +
                           std::to_string(g.size()) + ", this member " +
                           std::to_string(g.rank) + ")");
  if (tag < 0 || tag >= kMaxTransferTag)
    throw DistributedError(where + "tag " + std::to_string(tag) +
                           " is outside [0, 2^30)");
  if (!tensor.defined() || tensor.layout() != c10::kStrided)
    throw DistributedError(where + "needs a defined dense tensor");
  if (g.backend == Backend::Gloo && !tensor.device().is_cpu())
    throw DistributedError(where + "the gloo backend needs CPU tensors, got " +
                           tensor.device().str());
  if (g.backend == Backend::Nccl && !tensor.device().is_cuda())
    throw DistributedError(where + "the nccl backend needs CUDA tensors, got " +
                           tensor.device().str());
}

/// Posts the transfer; a failure to post (a broken connection) is a lost
/// peer like a failure in wait().
void post(detail::TransferState &state) {
  GroupState &g = state.group.state();
  std::vector<at::Tensor> tensors{state.tensor};
  try {
    state.work = state.send ? g.pg->send(tensors, state.peer, backendTag(state.tag))
                            : g.pg->recv(tensors, state.peer, backendTag(state.tag));
  } catch (const std::exception &e) {
    g.world->failTransfer(g, state.what(), state.group.globalRank(state.peer),
                          state.tag, describeException(e));
  }
}

} // namespace

PendingTransfer isend(const Group &group, const at::Tensor &tensor, int peer,
                      int64_t tag) {
  GroupState &g = group.state();
  checkArguments(g, "send", tensor, peer, tag);
  auto state = std::make_unique<detail::TransferState>();
  state->group = group;
  state->send = true;
  state->peer = peer;
  state->tag = tag;
  state->tensor = tensor.is_contiguous() ? tensor : tensor.contiguous();
  post(*state);
  PendingTransfer pending;
  pending.state_ = std::move(state);
  return pending;
}

PendingTransfer irecv(const Group &group, const at::Tensor &buffer, int peer,
                      int64_t tag) {
  GroupState &g = group.state();
  checkArguments(g, "recv", buffer, peer, tag);
  if (!buffer.is_contiguous())
    throw DistributedError(g.prefix() + "recv on group " + g.name +
                           ": the receive buffer must be contiguous");
  auto state = std::make_unique<detail::TransferState>();
  state->group = group;
  state->send = false;
  state->peer = peer;
  state->tag = tag;
  state->tensor = buffer;
  post(*state);
  PendingTransfer pending;
  pending.state_ = std::move(state);
  return pending;
}

namespace {

/// A transfer dropped before it completed (an error path: the program is
/// unwinding) is aborted rather than waited for, which could take the whole
/// timeout while its peer waits for this rank. Gloo may still move data
/// through its buffer afterwards, so the buffer is kept until the process
/// ends.
void abandon(std::unique_ptr<detail::TransferState> state) {
  static std::mutex mutex;
  static auto *kept = new std::vector<std::unique_ptr<detail::TransferState>>();
  try {
    state->work->abort();
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(state));
}

} // namespace

PendingTransfer::PendingTransfer() = default;
PendingTransfer::PendingTransfer(PendingTransfer &&) noexcept = default;

PendingTransfer &PendingTransfer::operator=(PendingTransfer &&other) noexcept {
  if (this != &other) {
    if (state_ && state_->work)
      abandon(std::move(state_));
    state_ = std::move(other.state_);
  }
  return *this;
}

PendingTransfer::~PendingTransfer() {
  if (state_ && state_->work)
    abandon(std::move(state_));
}

void PendingTransfer::wait() {
  if (!state_ || !state_->work)
    throw DistributedError("wait() on an empty or finished transfer");
  detail::TransferState &state = *state_;
  GroupState &g = state.group.state();
  auto start = std::chrono::steady_clock::now();
  try {
    state.work->wait(state.group.timeout());
  } catch (const std::exception &e) {
    state.work.reset();
    g.world->failTransfer(g, state.what(), state.group.globalRank(state.peer),
                          state.tag, describeException(e));
  }
  detail::addBlocked(std::chrono::steady_clock::now() - start);
  state.work.reset();
}

const at::Tensor &PendingTransfer::tensor() const {
  if (!state_)
    throw DistributedError("tensor() of an empty transfer");
  return state_->tensor;
}

} // namespace snn::dist
