//===- Launcher.cpp - Start N local ranks and supervise them --------------===//
//
// fork + exec per rank, a TCPStore server in the launcher, and a polling
// supervision loop (waitid with WNOWAIT, so that no rank is reaped - and no
// pid or process group id can be reused - until every rank has exited).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Distributed/Launcher.h"
#include "snn/Runtime/Distributed/Error.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <map>
#include <netinet/in.h>
#include <optional>
#include <set>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>

extern char **environ;

namespace snn::dist {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxRanks = 4096;

// Set by the signal handler, read by the supervision loop.
volatile sig_atomic_t gLastSignal = 0;
volatile sig_atomic_t gSignalCount = 0;

extern "C" void onLauncherSignal(int signal) {
  gLastSignal = signal;
  gSignalCount = gSignalCount + 1;
}

// Installs the forwarding handlers and restores the previous ones.
class SignalForwarding {
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

struct Child {
  int rank = 0;
  pid_t pid = -1;
  bool exited = false;
  int exitCode = 0;   // valid when exited by exit()
  int termSignal = 0; // valid when killed by a signal
  bool signaledByLauncher = false;
};

std::string describeExit(const Child &child) {
  if (child.termSignal)
    return "rank " + std::to_string(child.rank) + " killed by signal " +
           std::to_string(child.termSignal) + " (" +
           signalName(child.termSignal) + ")";
  return "rank " + std::to_string(child.rank) + " exited with code " +
         std::to_string(child.exitCode);
}

bool failed(const Child &child) {
  return child.exited && (child.termSignal != 0 || child.exitCode != 0);
}

int parsePositive(const std::string &flag, const std::string &value, int low,
                  int high, const char *what) {
  std::string hint = std::string("expected ") + what + ", " +
                     std::to_string(low) + " to " + std::to_string(high);
  if (value.empty() ||
      value.find_first_not_of("0123456789") != std::string::npos ||
      value.size() > 9)
    throw DistributedError(flag + " '" + value + "': " + hint);
  int parsed = std::stoi(value);
  if (parsed < low || parsed > high)
    throw DistributedError(flag + " " + value + ": " + hint);
  return parsed;
}

// Environment of one rank: the launcher's, minus what we set, plus it.
std::vector<std::string>
rankEnvironment(int rank, int nproc, int port,
                const std::vector<std::pair<std::string, std::string>> &extra) {
  std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(nproc)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
      {"GROUP_RANK", "0"},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(port)},
      // The launcher hosts the store, like torchrun's agent.
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
  };
  for (const auto &entry : extra)
    set.push_back(entry);
  std::set<std::string> names;
  for (const auto &entry : set)
    names.insert(entry.first);

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

} // namespace

std::string signalName(int signal) {
  switch (signal) {
  case SIGHUP: return "SIGHUP";
  case SIGINT: return "SIGINT";
  case SIGQUIT: return "SIGQUIT";
  case SIGILL: return "SIGILL";
  case SIGTRAP: return "SIGTRAP";
  case SIGABRT: return "SIGABRT";
  case SIGBUS: return "SIGBUS";
  case SIGFPE: return "SIGFPE";
  case SIGKILL: return "SIGKILL";
  case SIGUSR1: return "SIGUSR1";
  case SIGSEGV: return "SIGSEGV";
  case SIGUSR2: return "SIGUSR2";
  case SIGPIPE: return "SIGPIPE";
  case SIGALRM: return "SIGALRM";
  case SIGTERM: return "SIGTERM";
  case SIGCHLD: return "SIGCHLD";
  case SIGCONT: return "SIGCONT";
  case SIGSTOP: return "SIGSTOP";
  case SIGTSTP: return "SIGTSTP";
  case SIGXCPU: return "SIGXCPU";
  case SIGXFSZ: return "SIGXFSZ";
  case SIGSYS: return "SIGSYS";
  default: return "signal " + std::to_string(signal);
  }
}

int pickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    throw DistributedError(std::string("cannot create a socket: ") +
                           std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0) {
    int error = errno;
    ::close(fd);
    throw DistributedError(std::string("cannot bind a port on 127.0.0.1: ") +
                           std::strerror(error));
  }
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// 0 when a listener could bind `port` on every IPv4 address, else errno.
static int probePort(int port) {
  // The store listens on every address (as TCPStore does), so probe
  // 0.0.0.0: it collides with a listener on 127.0.0.1 as well.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return errno;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  int error = 0;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0)
    error = errno;
  else if (::listen(fd, 1) != 0)
    error = errno;
  ::close(fd);
  return error;
}

bool portInUse(int port) { return probePort(port) == EADDRINUSE; }

void checkPortAvailable(int port) {
  if (port < 1 || port > 65535)
    throw DistributedError("--master-port " + std::to_string(port) +
                           ": expected a TCP port, 1 to 65535");
  int error = probePort(port);
  if (error == 0)
    return;
  std::string p = std::to_string(port);
  if (error == EADDRINUSE)
    throw DistributedError("--master-port " + p + ": port " + p +
                           " is already in use on this host (another job?); "
                           "choose another port, or leave --master-port out "
                           "to use a free one");
  throw DistributedError("--master-port " + p + ": cannot listen on port " +
                         p + ": " + std::strerror(error));
}

LauncherArguments extractLauncherArguments(const std::vector<std::string> &argv) {
  LauncherArguments result;
  bool haveNproc = false, havePort = false;
  bool passThrough = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string &arg = argv[i];
    if (i == 0 || passThrough) {
      result.argv.push_back(arg);
      continue;
    }
    if (arg == "--") {
      passThrough = true;
      result.argv.push_back(arg);
      continue;
    }
    std::string name;
    std::optional<std::string> value;
    for (const char *flag : {"--nproc", "--master-port"}) {
      if (arg == flag) {
        name = flag;
        if (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)
          throw DistributedError(
              name + ": expected a value (" +
              (name == "--nproc" ? "the number of ranks" : "a TCP port") +
              ")");
        value = argv[++i];
      } else if (arg.rfind(std::string(flag) + "=", 0) == 0) {
        name = flag;
        value = arg.substr(name.size() + 1);
      }
    }
    if (name.empty()) {
      result.argv.push_back(arg);
      continue;
    }
    if (name == "--nproc") {
      if (haveNproc)
        throw DistributedError("--nproc given twice");
      haveNproc = true;
      result.nproc =
          parsePositive(name, *value, 1, kMaxRanks, "a number of ranks");
    } else {
      if (havePort)
        throw DistributedError("--master-port given twice");
      havePort = true;
      result.masterPort = parsePositive(name, *value, 1, 65535, "a TCP port");
    }
  }
  if (havePort && !haveNproc)
    throw DistributedError("--master-port needs --nproc (under torchrun, "
                           "MASTER_PORT sets the port)");
  return result;
}

LauncherArguments extractLauncherArguments(int argc, const char *const *argv) {
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i)
    args.emplace_back(argv[i]);
  return extractLauncherArguments(args);
}

int launchLocalRanks(int nproc, const std::vector<std::string> &argv,
                     const LaunchOptions &options) {
  if (nproc < 1 || nproc > kMaxRanks)
    throw DistributedError("--nproc " + std::to_string(nproc) +
                           ": expected a number of ranks, 1 to " +
                           std::to_string(kMaxRanks));
  if (argv.empty())
    throw DistributedError("launcher: no command to run");
  std::string executable =
      options.executable.empty() ? "/proc/self/exe" : options.executable;

  // The rendezvous store lives in the launcher for the whole run.
  if (options.masterPort != 0)
    checkPortAvailable(options.masterPort);
  c10::intrusive_ptr<c10d::TCPStore> tcpStore;
  try {
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = static_cast<uint16_t>(options.masterPort);
    storeOptions.isServer = true;
    storeOptions.waitWorkers = false;
    storeOptions.timeout = std::chrono::milliseconds(10000);
    tcpStore = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", storeOptions);
  } catch (const std::exception &e) {
    std::string port = std::to_string(options.masterPort);
    if (options.masterPort != 0)
      throw DistributedError("--master-port " + port +
                             ": cannot start the rendezvous store on port " +
                             port + ": " + describeException(e));
    throw DistributedError("cannot start the rendezvous store on 127.0.0.1: " +
                           describeException(e));
  }
  const int port = tcpStore->getPort();
  auto store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_0",
                                                      tcpStore);

  // Everything the children need, built before fork (after fork, until
  // exec, only async-signal-safe calls).
  std::vector<std::string> args = argv;
  std::vector<char *> argPointers = pointers(args);
  std::vector<std::vector<std::string>> envs;
  std::vector<std::vector<char *>> envPointers;
  std::vector<std::string> execFailures;
  for (int rank = 0; rank < nproc; ++rank) {
    envs.push_back(rankEnvironment(rank, nproc, port, options.environment));
    execFailures.push_back("error: rank " + std::to_string(rank) +
                           ": cannot execute " + executable + "\n");
  }
  for (auto &env : envs)
    envPointers.push_back(pointers(env));

  SignalForwarding forwarding;
  sigset_t childMask;
  sigprocmask(SIG_SETMASK, nullptr, &childMask);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);

  const pid_t launcherPid = ::getpid();
  std::vector<Child> children(nproc);
  pid_t group = 0;

  auto signalAll = [&](int signal) {
    // The group reaches grandchildren too; the per-pid kill covers a child
    // that has not joined the group yet. No child is reaped before the
    // end, so neither id can have been reused.
    if (group > 0)
      ::killpg(group, signal);
    for (const Child &child : children)
      if (child.pid > 0 && !child.exited)
        ::kill(child.pid, signal);
  };
  auto reapAll = [&]() {
    if (group > 0)
      ::killpg(group, SIGKILL);
    for (Child &child : children) {
      if (child.pid <= 0)
        continue;
      if (!child.exited)
        ::kill(child.pid, SIGKILL);
      int status = 0;
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  };

  for (int rank = 0; rank < nproc; ++rank) {
    pid_t pid = ::fork();
    if (pid < 0) {
      int error = errno;
      reapAll();
      throw DistributedError("cannot start rank " + std::to_string(rank) +
                             ": fork failed: " + std::strerror(error));
    }
    if (pid == 0) {
      // Child.
      ::setpgid(0, group);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcherPid) // the launcher died before prctl
        ::_exit(128 + SIGKILL);
      ::sigprocmask(SIG_SETMASK, &childMask, nullptr);
      // A background process group must not stop on terminal output
      // (stty tostop) and has no business reading the terminal.
      ::signal(SIGTTOU, SIG_IGN);
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) {
        ::dup2(devnull, STDIN_FILENO);
        if (devnull != STDIN_FILENO)
          ::close(devnull);
      }
      ::execve(executable.c_str(), argPointers.data(),
               envPointers[rank].data());
      const std::string &message = execFailures[rank];
      ssize_t ignored = ::write(STDERR_FILENO, message.data(), message.size());
      (void)ignored;
      ::_exit(127);
    }
    if (group == 0)
      group = pid;
    ::setpgid(pid, group); // also from here: no race with the child
    children[rank].rank = rank;
    children[rank].pid = pid;
  }

  // Supervise.
  std::vector<int> failureOrder; // ranks, in the order their failure was seen
  std::optional<Clock::time_point> firstFailure;
  std::optional<Clock::time_point> terminateSent;
  bool killSent = false;
  int forwardedSignals = 0;
  int interruptSignal = 0;
  const auto poll = std::chrono::milliseconds(10);

  while (true) {
    int running = 0;
    for (Child &child : children) {
      if (child.exited)
        continue;
      siginfo_t info{};
      info.si_pid = 0;
      int result = ::waitid(P_PID, child.pid, &info, WEXITED | WNOHANG | WNOWAIT);
      if (result < 0 && errno == EINTR)
        result = ::waitid(P_PID, child.pid, &info, WEXITED | WNOHANG | WNOWAIT);
      const bool gone = result < 0 && errno == ECHILD; // reaped elsewhere
      if (gone || (result == 0 && info.si_pid == child.pid)) {
        child.exited = true;
        if (gone)
          child.exitCode = 1; // status lost: count it as a failure
        else if (info.si_code == CLD_EXITED)
          child.exitCode = info.si_status;
        else
          child.termSignal = info.si_status;
        if (failed(child)) {
          failureOrder.push_back(child.rank);
          if (!firstFailure)
            firstFailure = Clock::now();
        }
        continue;
      }
      ++running;
    }
    if (running == 0)
      break;

    const auto now = Clock::now();
    int signalCount = gSignalCount;
    if (signalCount > forwardedSignals) {
      int signal = gLastSignal;
      forwardedSignals = signalCount;
      if (!interruptSignal) {
        // First signal: pass it on, give the ranks the grace period.
        interruptSignal = signal;
        for (Child &child : children)
          if (!child.exited)
            child.signaledByLauncher = true;
        signalAll(signal);
        terminateSent = now;
      } else if (!killSent) {
        signalAll(SIGKILL); // asked twice
        killSent = true;
      }
    }
    if (firstFailure && !terminateSent &&
        now - *firstFailure >= options.gracePeriod) {
      for (Child &child : children)
        if (!child.exited)
          child.signaledByLauncher = true;
      signalAll(SIGTERM);
      terminateSent = now;
    }
    if (terminateSent && !killSent &&
        now - *terminateSent >=
            (interruptSignal ? options.gracePeriod : options.terminateTimeout)) {
      signalAll(SIGKILL);
      killSent = true;
    }
    sleepFor(poll);
  }

  // The cause: the first failed rank that did not merely report a lost peer
  // (those write snn/failed/<rank> in the store), and was not stopped by us.
  auto isConsequence = [&](const Child &child) {
    if (child.signaledByLauncher)
      return true;
    try {
      return store->check({"snn/failed/" + std::to_string(child.rank)});
    } catch (const std::exception &) {
      return false;
    }
  };
  const Child *cause = nullptr;
  for (int rank : failureOrder)
    if (!isConsequence(children[rank])) {
      cause = &children[rank];
      break;
    }
  // Only consequences, and no interrupt: e.g. a hung rank that the others
  // timed out on, then stopped by us. Name the rank they lost, if they
  // agree on one; else report the first failure seen.
  std::string lostReport;
  if (!cause && !interruptSignal && !failureOrder.empty()) {
    cause = &children[failureOrder.front()];
    std::map<int, std::vector<int>> blamedBy;
    for (const Child &child : children) {
      if (!failed(child) || child.signaledByLauncher)
        continue;
      try {
        std::string key = "snn/suspects/" + std::to_string(child.rank);
        if (!store->check({key}))
          continue;
        std::vector<uint8_t> value = store->get(key);
        std::string list(value.begin(), value.end());
        if (list.find(',') == std::string::npos && !list.empty())
          blamedBy[std::stoi(list)].push_back(child.rank);
      } catch (const std::exception &) {
      }
    }
    if (blamedBy.size() == 1) {
      const Child &lost = children.at(blamedBy.begin()->first);
      const std::vector<int> &by = blamedBy.begin()->second;
      std::string ranks;
      for (size_t i = 0; i < by.size(); ++i)
        ranks += (i ? ", " : "") + std::to_string(by[i]);
      lostReport = "rank " + std::to_string(lost.rank) + " stopped answering (" +
                   (by.size() == 1 ? "rank " : "ranks ") + ranks +
                   " lost it in a collective)";
      if (lost.signaledByLauncher)
        lostReport += "; stopped by the launcher";
      else if (lost.exited && !failed(lost))
        lostReport += "; it had exited with code 0";
    }
  }

  reapAll();

  if (!lostReport.empty()) {
    if (options.reportFailures)
      std::cerr << ("error: " + lostReport + "\n") << std::flush;
    return cause->termSignal ? 128 + cause->termSignal : cause->exitCode;
  }

  if (cause) {
    if (options.reportFailures)
      std::cerr << ("error: " + describeExit(*cause) + "\n") << std::flush;
    return cause->termSignal ? 128 + cause->termSignal : cause->exitCode;
  }
  if (interruptSignal) {
    if (options.reportFailures)
      std::cerr << ("error: interrupted by " + signalName(interruptSignal) +
                    "; stopped " + std::to_string(nproc) +
                    (nproc == 1 ? " rank\n" : " ranks\n"))
                << std::flush;
    return 128 + interruptSignal;
  }
  return 0;
}

} // namespace snn::dist
