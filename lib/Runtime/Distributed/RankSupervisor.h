//===- RankSupervisor.h - The launcher's ranks (private) --------*- C++ -*-===//
//
// The three pieces of launchLocalRanks (Launcher.cpp), in the order it runs
// them:
//   spawn      RankSupervisor::spawn: fork (+ exec) of every rank, in one
//              process group, with the rank's environment
//   supervise  RankSupervisor::supervise: poll the ranks until all have
//              exited; forward SIGINT/SIGTERM/SIGHUP; after the first
//              failure, the grace period, then SIGTERM, then SIGKILL
//   attribute  attributeFailure / reportLaunchOutcome (FailureAttribution
//              .cpp): which rank caused the failure, the launcher's `error:`
//              line and exit code
// No rank is reaped (waitid with WNOWAIT) until reapAll, so no pid or
// process group id can be reused while the launcher still signals them.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_RANKSUPERVISOR_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_RANKSUPERVISOR_H

#include "snn/Runtime/Distributed/Launcher.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace c10d {
class Store;
}

namespace snn::dist::detail {

/// One rank as the launcher sees it.
struct RankProcess {
  int rank = 0;
  pid_t pid = -1;
  bool exited = false;
  int exitCode = 0;   // valid when exited by exit()
  int termSignal = 0; // valid when killed by a signal
  bool signaledByLauncher = false;
  /// When the launcher saw it fail (valid when failed()).
  std::chrono::steady_clock::time_point failedAt{};

  /// Exited non-zero or killed.
  bool failed() const;
  /// "rank R exited with code C" / "rank R killed by signal S (NAME)".
  std::string describeExit() const;
  /// What the launcher returns for it: the exit code, or 128 + signal.
  int launcherExitCode() const;
};

/// What supervision saw, for the attribution.
struct SupervisionOutcome {
  /// Ranks, in the order their failure was seen.
  std::vector<int> failureOrder;
  /// The first signal the launcher received (0: none).
  int interruptSignal = 0;
  /// The longest time between two polls: long only when the launcher was
  /// stopped (SIGSTOP) or starved, and its ranks may have given up on it.
  std::chrono::milliseconds longestPause{0};
};

class RankSupervisor {
public:
  /// `attempt`: 0, then 1, 2, ... for the restarts (--max-restarts).
  RankSupervisor(int nproc, const LaunchOptions &options, int attempt = 0);
  /// Restores the signal handlers that spawn replaced.
  ~RankSupervisor();
  RankSupervisor(const RankSupervisor &) = delete;
  RankSupervisor &operator=(const RankSupervisor &) = delete;

  /// Installs the signal forwarding and starts every rank: `executable`
  /// with `argv`, the launcher's environment plus the rank variables
  /// (MASTER_ADDR=options.masterAddr, MASTER_PORT=`port`, the job's
  /// `secret` and the launcher's pid) and options.environment (which cannot
  /// override those). Throws DistributedError, after stopping the ranks
  /// already started, when fork fails.
  void spawn(const std::string &executable,
             const std::vector<std::string> &argv, int port,
             const std::string &secret);
  /// Returns once every rank has exited (none is reaped yet).
  SupervisionOutcome supervise();
  /// SIGKILLs the process group and anything left, and reaps every rank.
  void reapAll();

  const std::vector<RankProcess> &ranks() const { return ranks_; }

private:
  using Clock = std::chrono::steady_clock;

  /// Records the ranks that exited since the last poll; returns how many
  /// are still running.
  int pollExits();
  /// A signal to the launcher: the first is passed on, a second SIGKILLs.
  void forwardSignals(Clock::time_point now);
  /// The grace period after the first failure, then SIGTERM, then SIGKILL.
  void escalate(Clock::time_point now);
  /// To the process group and to every rank not yet exited.
  void signalAll(int signal);
  /// Marks every running rank as stopped by the launcher.
  void markRunningAsSignaled();

  class SignalForwarding;

  LaunchOptions options_;
  std::vector<RankProcess> ranks_;
  int attempt_ = 0;
  pid_t group_ = 0;
  std::unique_ptr<SignalForwarding> forwarding_;

  // Supervision state.
  SupervisionOutcome outcome_;
  std::optional<Clock::time_point> firstFailure_;
  std::optional<Clock::time_point> terminateSent_;
  bool killSent_ = false;
  int forwardedSignals_ = 0;
};

/// The cause of a failed launch, decided after supervision (before reapAll).
struct FailureAttribution {
  /// Index into the ranks; -1 when no rank failed on its own.
  int cause = -1;
  /// "rank R stopped answering (ranks ... lost it in a collective or transfer)...",
  /// when only consequences failed and the survivors agree on one lost rank.
  std::string lostReport;
};

/// The first failed rank that did not merely report a lost peer (those write
/// snn/failed/<rank> in the store) and was not stopped by the launcher;
/// else, without an interrupt, the rank the others lost (snn/suspects/<rank>)
/// or the first failure seen.
FailureAttribution attributeFailure(const std::vector<RankProcess> &ranks,
                                    const SupervisionOutcome &outcome,
                                    c10d::Store &store);

/// What went wrong, as the launcher's `error:` line says it ("" when nothing
/// did): the cause's exit, or the lost rank, or the interrupting signal.
std::string describeLaunchFailure(const std::vector<RankProcess> &ranks,
                                  const SupervisionOutcome &outcome,
                                  const FailureAttribution &attribution);

/// Prints the launcher's `error:` line (unless options.reportFailures is
/// off) and returns its exit code: 0, the cause's code, or 128 + the
/// interrupting signal.
int reportLaunchOutcome(const std::vector<RankProcess> &ranks,
                        const SupervisionOutcome &outcome,
                        const FailureAttribution &attribution,
                        const LaunchOptions &options);

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_RANKSUPERVISOR_H
