//===- Work.cpp - Starting collectives and waiting on their work ----------===//
//
// Every collective and transfer starts and is waited on here, so a failure
// is diagnosed as a lost peer (WorldState::failCollective, PeerHealth.cpp)
// and every wait counts toward blockedSeconds().
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Distributed/Work.h"
#include "GroupState.h"

#include <atomic>

namespace snn::dist {

using detail::GroupState;

c10::intrusive_ptr<c10d::Work> detail::startCollective(
    GroupState &group, const std::string &op, uint64_t &sequence,
    const std::function<c10::intrusive_ptr<c10d::Work>()> &launch) {
  sequence = ++*group.sequence;
  try {
    return launch();
  } catch (const DistributedError &) {
    throw;
  } catch (const std::exception &e) {
    // Gloo validates arguments synchronously; a broken pair also fails here.
    std::string reason = describeException(e);
    if (reason.find("onnection") != std::string::npos ||
        reason.find("Timed out") != std::string::npos ||
        reason.find("peer") != std::string::npos)
      group.world->failCollective(group, op, sequence, reason);
    throw DistributedError(group.prefix() + op + " on group " + group.name +
                           ": " + reason);
  }
}

namespace {
std::atomic<int64_t> blockedNanoseconds{0};
} // namespace

void detail::addBlocked(std::chrono::steady_clock::duration waited) {
  blockedNanoseconds.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count(),
      std::memory_order_relaxed);
}

double blockedSeconds() { return double(blockedNanoseconds.load()) * 1e-9; }

void detail::waitWork(GroupState &group,
                      const c10::intrusive_ptr<c10d::Work> &work,
                      const std::string &op, uint64_t sequence) {
  auto start = std::chrono::steady_clock::now();
  try {
    // A little longer than the backend's own timeout, whose message is
    // more precise than "Operation timed out!".
    work->wait(group.timeout + std::chrono::milliseconds(2000));
  } catch (const DistributedError &) {
    throw;
  } catch (const std::exception &e) {
    group.world->failCollective(group, op, sequence, describeException(e));
  }
  addBlocked(std::chrono::steady_clock::now() - start);
}

} // namespace snn::dist
