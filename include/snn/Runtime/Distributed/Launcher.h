//===- Launcher.h - Start N local ranks and supervise them ------*- C++ -*-===//
//
// `snn-run --nproc N ...` re-executes itself N times (fork + exec of
// /proc/self/exe with the same arguments minus the launcher flags), with
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR (127.0.0.1 or
// --master-addr) and MASTER_PORT set, like torchrun. The launcher hosts the
// rendezvous store (as torchrun's agent does: TORCHELASTIC_USE_AGENT_STORE=
// True), so the store outlives any rank and a dead rank 0 can still be named
// by the others. The store listens on MASTER_ADDR only and answers only
// clients holding the job's secret, which the ranks get in SNN_JOB_SECRET
// (never on a command line); a rank exits when the launcher stops answering
// (docs/distributed.md, "Rendezvous and groups").
//
// Supervision: rank output goes straight to the launcher's stdout/stderr (no
// prefix). When a rank exits non-zero or is killed, the others get a grace
// period to notice and exit on their own (they fail their next collective),
// then SIGTERM, then SIGKILL. The ranks run in their own process group and
// die with the launcher (PR_SET_PDEATHSIG), so none is left behind even when
// the launcher is SIGKILLed. SIGINT, SIGTERM and SIGHUP are forwarded.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_LAUNCHER_H
#define SNN_RUNTIME_DISTRIBUTED_LAUNCHER_H

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace snn::dist {

struct LaunchOptions {
  /// Address the rendezvous store listens on, and the ranks' MASTER_ADDR:
  /// loopback unless --master-addr says otherwise.
  std::string masterAddr = "127.0.0.1";
  /// TCP port of the rendezvous store; 0 picks a free one.
  int masterPort = 0;
  /// After the first rank fails: how long the others may take to exit on
  /// their own before they get SIGTERM.
  std::chrono::milliseconds gracePeriod{5000};
  /// After SIGTERM: how long before SIGKILL.
  std::chrono::milliseconds terminateTimeout{3000};
  /// Program to execute; empty means /proc/self/exe (this program).
  std::string executable;
  /// This program's entry for one rank (its argv as `launchLocalRanks` gets it; returns the
  /// exit code). Given, with `executable` empty, each rank of the first attempt is a fork of
  /// the launcher that calls it instead of executing the program again, while the launcher
  /// still has one thread: it skips loading the program and its libraries once per rank
  /// (0.6-1.3 s of CPU each on a 2-CPU machine). Otherwise, and for restarts, exec.
  std::function<int(const std::vector<std::string> &argv)> rankMain;
  /// Extra variables set in every rank's environment.
  std::vector<std::pair<std::string, std::string>> environment;
  /// Print the launcher's `error:` line for a failed rank (tests may mute).
  bool reportFailures = true;
  /// After a rank fails, stop every rank and start them all again, up to
  /// this many times (--max-restarts); each attempt gets its own store
  /// prefix and TORCHELASTIC_RESTART_COUNT, as under torchrun's agent.
  int maxRestarts = 0;
};

/// Starts `nproc` ranks running `argv` (argv[0] is passed as the program
/// name; the launcher flags must already be removed, see
/// extractLauncherArguments) and waits for all of them.
///
/// With options.maxRestarts K, a failure (not an interrupt) stops every rank
/// and starts them all again, up to K times, each restart announced by one
/// `snn-run: <the failure>; restarting N ranks (restart k of K)` line; what
/// follows describes the last attempt.
///
/// Returns 0 when every rank exits 0. Otherwise prints one line,
/// `error: rank R exited with code C` or `error: rank R killed by signal S
/// (NAME)`, for the rank that failed first (ranks that only report a lost
/// peer are consequences, not the cause) and returns that rank's exit code,
/// or 128 + S for a signal. After SIGINT/SIGTERM/SIGHUP to the launcher
/// returns 128 + that signal.
///
/// Throws DistributedError before starting anything for an invalid `nproc`,
/// a `masterPort` that is in use, or a store that cannot start; and after
/// stopping the ranks already started when fork fails.
///
/// Call it from the main thread: PR_SET_PDEATHSIG fires when the thread that
/// forked exits.
int launchLocalRanks(int nproc, const std::vector<std::string> &argv,
                     const LaunchOptions &options = {});

/// The command line with the launcher flags taken out.
struct LauncherArguments {
  /// --nproc N / --nproc=N; 0 when not given.
  int nproc = 0;
  /// --master-port P / --master-port=P; 0 when not given.
  int masterPort = 0;
  /// --master-addr A / --master-addr=A; 127.0.0.1 when not given.
  std::string masterAddr = "127.0.0.1";
  /// --max-restarts K / --max-restarts=K; 0 when not given.
  int maxRestarts = 0;
  /// Everything else, in order (argv[0] included).
  std::vector<std::string> argv;
};

/// Removes `--nproc`, `--master-port`, `--master-addr` and `--max-restarts`
/// (with their values) from anywhere before a `--` argument. Throws
/// DistributedError for a missing or invalid value (nproc must be 1 to 4096,
/// the port 1 to 65535, restarts 0 to 1000), a flag given twice, or
/// --master-port / --master-addr / --max-restarts without --nproc.
LauncherArguments extractLauncherArguments(const std::vector<std::string> &argv);
LauncherArguments extractLauncherArguments(int argc, const char *const *argv);

/// A TCP port that is free on 127.0.0.1 right now (the kernel picks it).
int pickFreePort();

/// Whether a TCP listener on `port` (any address) would fail with
/// EADDRINUSE right now.
bool portInUse(int port);

/// Throws DistributedError when `port` cannot be bound (another process
/// listens on it): "--master-port 29500: port 29500 is already in use ...".
void checkPortAvailable(int port);

/// "SIGKILL" for 9, "signal 64" for an unnamed one.
std::string signalName(int signal);

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_LAUNCHER_H
