//===- RankSupervisor.cpp - Spawn the local ranks and supervise them ------===//
//
// fork + exec per rank (or fork alone, LaunchOptions::rankMain), and a polling
// supervision loop (waitid with WNOWAIT, so that no rank is reaped - and no pid
// or process group id can be reused - until every rank has exited). See
// RankSupervisor.h.
//
//===----------------------------------------------------------------------===//

#include "RankSupervisor.h"
#include "JobSecret.h"
#include "LauncherWatch.h"
#include "snn/Runtime/Distributed/Error.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <iostream>
#include <set>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

namespace snn::dist::detail {

namespace {

// Set by the signal handler, read by the supervision loop.
volatile sig_atomic_t gLastSignal = 0;
volatile sig_atomic_t gSignalCount = 0;

extern "C" void onLauncherSignal(int signal) {
  gLastSignal = signal;
  gSignalCount = gSignalCount + 1;
}

// Environment of one rank: the launcher's, minus what we set, plus it.
// The job secret travels here, never in argv: /proc/<pid>/environ is
// readable by the job's user only, /proc/<pid>/cmdline by everyone.
std::vector<std::string>
rankEnvironment(int rank, int nproc, int port, const std::string &secret,
                const LaunchOptions &options, int attempt) {
  std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(nproc)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
      {"GROUP_RANK", "0"},
      {"MASTER_ADDR", options.masterAddr},
      {"MASTER_PORT", std::to_string(port)},
      // The launcher hosts the store, like torchrun's agent.
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      // Which attempt (torchrun's name): the ranks' store prefix.
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(attempt)},
      {kJobSecretVariable, secret},
      {kLauncherPidVariable, std::to_string(::getpid())},
  };
  std::set<std::string> names;
  for (const auto &entry : set)
    names.insert(entry.first);
  for (const auto &entry : options.environment)
    if (names.insert(entry.first).second)
      set.push_back(entry);

  std::vector<std::string> env;
  for (char **entry = environ; entry && *entry; ++entry) {
    std::string text = *entry;
    size_t equals = text.find('=');
    std::string name = equals == std::string::npos ? text : text.substr(0, equals);
    if (!names.count(name))
      env.push_back(std::move(text));
  }
  for (const auto &entry : set)
    env.push_back(entry.first + "=" + entry.second);
  return env;
}

std::vector<char *> pointers(std::vector<std::string> &strings) {
  std::vector<char *> result;
  for (auto &s : strings)
    result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

void sleepFor(std::chrono::milliseconds duration) {
  struct timespec request {};
  request.tv_sec = duration.count() / 1000;
  request.tv_nsec = (duration.count() % 1000) * 1000000L;
  nanosleep(&request, nullptr); // a signal cuts it short: fine
}

// Everything a child needs between fork and exec, built before fork (after
// fork, until exec, only async-signal-safe calls).
struct ExecPlan {
  std::string executable;
  std::vector<std::string> args;
  std::vector<char *> argPointers;
  std::vector<std::vector<std::string>> envs;
  std::vector<std::vector<char *>> envPointers;
  std::vector<std::string> execFailures;
  sigset_t childMask;
  pid_t launcherPid = 0;
};

// The child's side of the fork, before it runs the rank: join the group, die with the
// launcher, the launcher's signal mask, no terminal input.
void enterRankProcess(const ExecPlan &plan, pid_t group) {
  ::setpgid(0, group);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != plan.launcherPid) // the launcher died before prctl
    ::_exit(128 + SIGKILL);
  ::sigprocmask(SIG_SETMASK, &plan.childMask, nullptr);
  // A background process group must not stop on terminal output (stty tostop); an
  // ignored signal stays ignored through exec and resetAsExecWould.
  ::signal(SIGTTOU, SIG_IGN);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    ::dup2(devnull, STDIN_FILENO);
    if (devnull != STDIN_FILENO)
      ::close(devnull);
  }
}

[[noreturn]] void execRank(const ExecPlan &plan, int rank, pid_t group) {
  enterRankProcess(plan, group);
  ::execve(plan.executable.c_str(), plan.argPointers.data(),
           plan.envPointers[rank].data());
  const std::string &message = plan.execFailures[rank];
  ssize_t ignored = ::write(STDERR_FILENO, message.data(), message.size());
  (void)ignored;
  ::_exit(127);
}

// What exec would do to the forked launcher: caught signals back to their default (ignored
// ones stay ignored), close-on-exec descriptors (the store's socket) closed.
void resetAsExecWould() {
  for (int signal = 1; signal < NSIG; ++signal) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) == 0 && current.sa_handler != SIG_IGN &&
        current.sa_handler != SIG_DFL)
      ::signal(signal, SIG_DFL);
  }
  std::vector<int> closing;
  if (DIR *fds = ::opendir("/proc/self/fd")) {
    while (const dirent *entry = ::readdir(fds)) {
      int fd = std::atoi(entry->d_name);
      if (entry->d_name[0] != '.' && fd != ::dirfd(fds) && (::fcntl(fd, F_GETFD) & FD_CLOEXEC))
        closing.push_back(fd);
    }
    ::closedir(fds);
  }
  for (int fd : closing)
    ::close(fd);
}

// A rank that is a fork of the single-threaded launcher: its environment as exec would have
// set it, then this program's entry, then exit as a program does.
[[noreturn]] void runForkedRank(const ExecPlan &plan, int rank, pid_t group,
                                const LaunchOptions &options) {
  enterRankProcess(plan, group);
  resetAsExecWould();
  ::clearenv();
  for (char *entry : plan.envPointers[rank])
    if (entry)
      ::putenv(entry);
  int code = 1;
  try {
    code = options.rankMain(plan.args);
  } catch (const std::exception &e) {
    std::cerr << "error: rank " << rank << ": " << e.what() << std::endl;
  }
  std::exit(code);
}

// Forking a process with other threads leaves their locks held in the child: only a launcher
// that has one thread (before its store serves) forks ranks that run on.
bool singleThreaded() {
  DIR *tasks = ::opendir("/proc/self/task");
  if (!tasks)
    return false;
  int count = 0;
  while (const dirent *entry = ::readdir(tasks))
    count += entry->d_name[0] != '.';
  ::closedir(tasks);
  return count == 1;
}

} // namespace

// Installs the forwarding handlers and restores the previous ones.
class RankSupervisor::SignalForwarding {
public:
  SignalForwarding() {
    gLastSignal = 0;
    gSignalCount = 0;
    struct sigaction action {};
    action.sa_handler = onLauncherSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; // no SA_RESTART: interrupt the sleep
    for (size_t i = 0; i < kSignals.size(); ++i) {
      sigaction(kSignals[i], nullptr, &previous_[i]);
      // A signal the caller ignores (nohup) stays ignored, in the ranks too.
      if (previous_[i].sa_handler == SIG_IGN)
        continue;
      sigaction(kSignals[i], &action, nullptr);
      installed_[i] = true;
    }
    // waitid needs un-reaped children: SIGCHLD ignored would auto-reap.
    struct sigaction childDefault {};
    childDefault.sa_handler = SIG_DFL;
    sigemptyset(&childDefault.sa_mask);
    sigaction(SIGCHLD, &childDefault, &previousChild_);
  }
  ~SignalForwarding() {
    for (size_t i = 0; i < kSignals.size(); ++i)
      if (installed_[i])
        sigaction(kSignals[i], &previous_[i], nullptr);
    sigaction(SIGCHLD, &previousChild_, nullptr);
  }

private:
  struct sigaction previousChild_ {};
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> previous_{};
  std::array<bool, 3> installed_{};
};

//===----------------------------------------------------------------------===//
// RankProcess
//===----------------------------------------------------------------------===//

bool RankProcess::failed() const {
  return exited && (termSignal != 0 || exitCode != 0);
}

std::string RankProcess::describeExit() const {
  if (termSignal)
    return "rank " + std::to_string(rank) + " killed by signal " +
           std::to_string(termSignal) + " (" + signalName(termSignal) + ")";
  return "rank " + std::to_string(rank) + " exited with code " +
         std::to_string(exitCode);
}

int RankProcess::launcherExitCode() const {
  return termSignal ? 128 + termSignal : exitCode;
}

//===----------------------------------------------------------------------===//
// Spawn
//===----------------------------------------------------------------------===//

RankSupervisor::RankSupervisor(int nproc, const LaunchOptions &options, int attempt)
    : options_(options), ranks_(nproc), attempt_(attempt) {}

RankSupervisor::~RankSupervisor() = default;

void RankSupervisor::spawn(const std::string &executable,
                           const std::vector<std::string> &argv, int port,
                           const std::string &secret) {
  const int nproc = static_cast<int>(ranks_.size());
  ExecPlan plan;
  plan.executable = executable;
  plan.args = argv;
  plan.argPointers = pointers(plan.args);
  for (int rank = 0; rank < nproc; ++rank) {
    plan.envs.push_back(
        rankEnvironment(rank, nproc, port, secret, options_, attempt_));
    plan.execFailures.push_back("error: rank " + std::to_string(rank) +
                                ": cannot execute " + executable + "\n");
  }
  for (auto &env : plan.envs)
    plan.envPointers.push_back(pointers(env));

  forwarding_ = std::make_unique<SignalForwarding>();
  sigprocmask(SIG_SETMASK, nullptr, &plan.childMask);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  plan.launcherPid = ::getpid();
  const bool forked = options_.rankMain && options_.executable.empty() && singleThreaded();

  for (int rank = 0; rank < nproc; ++rank) {
    pid_t pid = ::fork();
    if (pid < 0) {
      int error = errno;
      reapAll();
      throw DistributedError("cannot start rank " + std::to_string(rank) +
                             ": fork failed: " + std::strerror(error));
    }
    if (pid == 0) {
      if (forked)
        runForkedRank(plan, rank, group_, options_);
      execRank(plan, rank, group_);
    }
    if (group_ == 0)
      group_ = pid;
    ::setpgid(pid, group_); // also from here: no race with the child
    ranks_[rank].rank = rank;
    ranks_[rank].pid = pid;
  }
}

void RankSupervisor::signalAll(int signal) {
  // The group reaches grandchildren too; the per-pid kill covers a child
  // that has not joined the group yet. No child is reaped before the end,
  // so neither id can have been reused.
  if (group_ > 0)
    ::killpg(group_, signal);
  for (const RankProcess &child : ranks_)
    if (child.pid > 0 && !child.exited)
      ::kill(child.pid, signal);
}

void RankSupervisor::reapAll() {
  if (group_ > 0)
    ::killpg(group_, SIGKILL);
  for (RankProcess &child : ranks_) {
    if (child.pid <= 0)
      continue;
    if (!child.exited)
      ::kill(child.pid, SIGKILL);
    int status = 0;
    while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

//===----------------------------------------------------------------------===//
// Supervise
//===----------------------------------------------------------------------===//

SupervisionOutcome RankSupervisor::supervise() {
  const auto poll = std::chrono::milliseconds(10);
  auto last = Clock::now();
  for (;;) {
    // Measured before the exit check: a pause that ends with every rank
    // gone (they gave up on a stopped launcher) must still count.
    const auto now = Clock::now();
    outcome_.longestPause = std::max(
        outcome_.longestPause,
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last));
    last = now;
    if (pollExits() == 0)
      break;
    forwardSignals(now);
    escalate(now);
    sleepFor(poll);
  }
  return outcome_;
}

int RankSupervisor::pollExits() {
  int running = 0;
  for (RankProcess &child : ranks_) {
    if (child.exited)
      continue;
    siginfo_t info{};
    info.si_pid = 0;
    int result = ::waitid(P_PID, child.pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (result < 0 && errno == EINTR)
      result = ::waitid(P_PID, child.pid, &info, WEXITED | WNOHANG | WNOWAIT);
    const bool gone = result < 0 && errno == ECHILD; // reaped elsewhere
    if (!gone && !(result == 0 && info.si_pid == child.pid)) {
      ++running;
      continue;
    }
    child.exited = true;
    if (gone)
      child.exitCode = 1; // status lost: count it as a failure
    else if (info.si_code == CLD_EXITED)
      child.exitCode = info.si_status;
    else
      child.termSignal = info.si_status;
    if (child.failed()) {
      child.failedAt = Clock::now();
      outcome_.failureOrder.push_back(child.rank);
      if (!firstFailure_)
        firstFailure_ = Clock::now();
    }
  }
  return running;
}

void RankSupervisor::markRunningAsSignaled() {
  for (RankProcess &child : ranks_)
    if (!child.exited)
      child.signaledByLauncher = true;
}

void RankSupervisor::forwardSignals(Clock::time_point now) {
  int signalCount = gSignalCount;
  if (signalCount <= forwardedSignals_)
    return;
  int signal = gLastSignal;
  forwardedSignals_ = signalCount;
  if (!outcome_.interruptSignal) {
    // First signal: pass it on, give the ranks the grace period.
    outcome_.interruptSignal = signal;
    markRunningAsSignaled();
    signalAll(signal);
    terminateSent_ = now;
  } else if (!killSent_) {
    signalAll(SIGKILL); // asked twice
    killSent_ = true;
  }
}

void RankSupervisor::escalate(Clock::time_point now) {
  if (firstFailure_ && !terminateSent_ &&
      now - *firstFailure_ >= options_.gracePeriod) {
    markRunningAsSignaled();
    signalAll(SIGTERM);
    terminateSent_ = now;
  }
  if (terminateSent_ && !killSent_ &&
      now - *terminateSent_ >= (outcome_.interruptSignal
                                    ? options_.gracePeriod
                                    : options_.terminateTimeout)) {
    signalAll(SIGKILL);
    killSent_ = true;
  }
}

} // namespace snn::dist::detail
