//===- LauncherWatch.cpp - Ranks end when their launcher stops answering --===//
//
// A rank of `snn-run --nproc` dies with its launcher (PR_SET_PDEATHSIG), but
// a launcher that is stopped (SIGSTOP, a debugger, a frozen container) is
// not dead: without this watch its ranks trained on, unsupervised, for as
// long as their collectives succeeded. The watch pings the launcher's store
// on its own connection every kPingInterval; an answer that does not come
// within launcherAnswerTimeout ends the rank with one line naming the
// launcher.
//
//===----------------------------------------------------------------------===//

#include "LauncherWatch.h"
#include "GroupState.h"
#include "StoreClient.h"

#include <algorithm>
#include <sstream>
#include <unistd.h>

namespace snn::dist::detail {

std::chrono::milliseconds
launcherAnswerTimeout(std::chrono::milliseconds timeout) {
  return std::clamp(timeout, kLauncherAnswerMin,
                    std::chrono::milliseconds(30000));
}

namespace {

constexpr std::chrono::milliseconds kPingInterval{1000};
// The rank's exit code when it gives up on its launcher.
constexpr int kLauncherLostExitCode = 1;

// Ends the process from the watch thread: the main thread may be anywhere
// (inside a collective, in a kernel), so unwinding it is not possible;
// _exit skips the destructors, which would wait on the silent store.
[[noreturn]] void abandonJob(const std::string &line) {
  const std::string text = "error: " + line + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
  ::_exit(kLauncherLostExitCode);
}

std::string seconds(std::chrono::milliseconds duration) {
  std::ostringstream out;
  out << duration.count() / 1000.0 << " s";
  return out.str();
}

} // namespace

void WorldState::startLauncherWatch() {
  const auto limit = launcherAnswerTimeout(options.timeout);
  const std::string who =
      "rank " + std::to_string(env.rank) + ": the launcher (pid " +
      std::to_string(env.launcherPid > 0 ? env.launcherPid : ::getppid()) + ")";
  c10::intrusive_ptr<StoreClient> client;
  try {
    client = c10::make_intrusive<StoreClient>(env.masterAddr, env.masterPort,
                                              env.jobSecret, limit);
  } catch (const std::exception &e) {
    throw DistributedError(who + " does not answer: " + describeException(e));
  }
  launcherWatchThread = std::thread([this, client, limit, who] {
    std::unique_lock<std::mutex> lock(launcherWatchMutex);
    while (!launcherWatchStop) {
      lock.unlock();
      try {
        client->ping(limit);
      } catch (const std::exception &e) {
        std::string reason = describeException(e);
        if (reason.find("did not answer") != std::string::npos)
          abandonJob(who + " stopped answering for " + seconds(limit));
        abandonJob(who + " is gone: " + reason);
      }
      lock.lock();
      launcherWatchWake.wait_for(lock, kPingInterval,
                                 [this] { return launcherWatchStop; });
    }
  });
}

void WorldState::stopLauncherWatch() {
  {
    std::lock_guard<std::mutex> lock(launcherWatchMutex);
    launcherWatchStop = true;
  }
  launcherWatchWake.notify_all();
  if (launcherWatchThread.joinable())
    launcherWatchThread.join();
}

} // namespace snn::dist::detail
