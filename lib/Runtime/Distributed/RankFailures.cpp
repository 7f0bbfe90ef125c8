//===- RankFailures.cpp - A rank fails with a line, never a signal --------===//
//
// See RankFailures.h; World::recordFailure (World.h) is here too: the time
// of the rank's error line, for the launcher's attribution.
//
//===----------------------------------------------------------------------===//

#include "RankFailures.h"
#include "GroupState.h"
#include "PeerHealth.h"
#include "Text.h"
#include "snn/Runtime/Support/Error.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <exception>
#include <string>
#include <unistd.h>

namespace snn::dist {

namespace detail {

namespace {

std::atomic<int> rankOfProcess{-1};

/// std::terminate's handler: the thread may hold any lock, so one write and
/// _exit, no unwinding and no destructors.
[[noreturn]] void endRankOnUncaughtException() {
  std::string what = "std::terminate was called without an exception";
  if (std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception &e) {
      what = describeException(e);
    } catch (...) {
      what = "an exception of unknown type";
    }
  }
  const std::string line = "error: rank " + std::to_string(rankOfProcess.load()) +
                           ": a thread of this rank failed (the ranks' messages did not "
                           "match, or the transport broke): " + what + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  ::_exit(1);
}

} // namespace

void installRankFailureHandlers(int rank) {
  rankOfProcess.store(rank);
  ::signal(SIGPIPE, SIG_IGN);
  std::set_terminate(endRankOnUncaughtException);
}

} // namespace detail

void World::recordFailure() const {
  detail::WorldState &state = *state_;
  if (!state.store || !state.joined)
    return;
  try {
    auto now = std::chrono::steady_clock::now().time_since_epoch();
    state.store->set(detail::failedAtKey(state.env.rank),
                     detail::toBytes(std::to_string(
                         std::chrono::duration_cast<std::chrono::nanoseconds>(now).count())));
  } catch (const std::exception &) {
    // The launcher's store is gone: it falls back to when it saw the exit.
  }
}

} // namespace snn::dist
