//===- Launcher.cpp - Start N local ranks and supervise them --------------===//
//
// The launcher flags, the port checks, the rendezvous store in the launcher,
// and launchLocalRanks, which runs the three pieces of RankSupervisor.h:
// spawn (fork + exec per rank), supervise (a polling loop) and attribute
// the failure (FailureAttribution.cpp).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Distributed/Launcher.h"
#include "JobSecret.h"
#include "MemoryStore.h"
#include "RankSupervisor.h"
#include "StoreServer.h"
#include "snn/Runtime/Distributed/Error.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <netinet/in.h>
#include <optional>
#include <set>
#include <sys/socket.h>
#include <unistd.h>

namespace snn::dist {

namespace {

constexpr int kMaxRanks = 4096;

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

namespace {

const char *const kLauncherFlags[] = {"--nproc", "--master-port",
                                      "--master-addr", "--max-restarts"};

constexpr int kMaxRestarts = 1000;

const char *flagValueHint(const std::string &flag) {
  if (flag == "--nproc")
    return "the number of ranks";
  if (flag == "--master-port")
    return "a TCP port";
  if (flag == "--max-restarts")
    return "how many times to restart the ranks after a failure";
  return "an address of this host";
}

// Stores one launcher flag's value; `seen` catches a flag given twice.
void assignLauncherFlag(LauncherArguments &result, std::set<std::string> &seen,
                        const std::string &name, const std::string &value) {
  if (!seen.insert(name).second)
    throw DistributedError(name + " given twice");
  if (name == "--nproc")
    result.nproc = parsePositive(name, value, 1, kMaxRanks, "a number of ranks");
  else if (name == "--master-port")
    result.masterPort = parsePositive(name, value, 1, 65535, "a TCP port");
  else if (name == "--max-restarts")
    result.maxRestarts =
        parsePositive(name, value, 0, kMaxRestarts, "a number of restarts");
  else if (value.empty() || value.find_first_of(" \t\n/") != std::string::npos)
    throw DistributedError("--master-addr '" + value +
                           "': expected a host name or IP address of this host");
  else
    result.masterAddr = value;
}

} // namespace

LauncherArguments extractLauncherArguments(const std::vector<std::string> &argv) {
  LauncherArguments result;
  std::set<std::string> seen;
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
    for (const char *flag : kLauncherFlags) {
      if (arg == flag) {
        name = flag;
        if (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)
          throw DistributedError(name + ": expected a value (" +
                                 flagValueHint(name) + ")");
        value = argv[++i];
      } else if (arg.rfind(std::string(flag) + "=", 0) == 0) {
        name = flag;
        value = arg.substr(name.size() + 1);
      }
    }
    if (name.empty())
      result.argv.push_back(arg);
    else
      assignLauncherFlag(result, seen, name, *value);
  }
  if (seen.count("--master-port") && !seen.count("--nproc"))
    throw DistributedError("--master-port needs --nproc (under torchrun, "
                           "MASTER_PORT sets the port)");
  if (seen.count("--master-addr") && !seen.count("--nproc"))
    throw DistributedError("--master-addr needs --nproc (under torchrun, "
                           "MASTER_ADDR sets the address)");
  if (seen.count("--max-restarts") && !seen.count("--nproc"))
    throw DistributedError("--max-restarts needs --nproc (under torchrun, "
                           "torchrun's own --max_restarts restarts the ranks)");
  return result;
}

LauncherArguments extractLauncherArguments(int argc, const char *const *argv) {
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i)
    args.emplace_back(argv[i]);
  return extractLauncherArguments(args);
}

// The rendezvous store: it lives in the launcher for the whole run, on
// options.masterAddr only (loopback unless --master-addr), and answers only
// connections that present the job's secret (StoreServer.h).
static std::unique_ptr<detail::StoreServer>
startStore(const LaunchOptions &options, const std::string &secret,
           const c10::intrusive_ptr<detail::MemoryStore> &memory) {
  const int masterPort = options.masterPort;
  if (masterPort != 0)
    checkPortAvailable(masterPort);
  try {
    return std::make_unique<detail::StoreServer>(options.masterAddr, masterPort,
                                                 secret, memory);
  } catch (const std::exception &e) {
    std::string port = std::to_string(masterPort);
    if (masterPort != 0)
      throw DistributedError("--master-port " + port +
                             ": cannot start the rendezvous store on port " +
                             port + ": " + describeException(e));
    throw DistributedError("--master-addr " + options.masterAddr +
                           ": cannot start the rendezvous store: " +
                           describeException(e));
  }
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

  const std::string secret = detail::newJobSecret();
  auto memory = c10::make_intrusive<detail::MemoryStore>(
      std::chrono::milliseconds(10000));
  std::unique_ptr<detail::StoreServer> server =
      startStore(options, secret, memory);
  for (int attempt = 0;; ++attempt) {
    // Each attempt's keys apart, as torchrun's agent keeps them: a restarted
    // rank must not read the rendezvous or failure records of the last one.
    auto store = c10::make_intrusive<c10d::PrefixStore>(
        "/worker/attempt_" + std::to_string(attempt), memory);
    detail::RankSupervisor supervisor(nproc, options, attempt);
    supervisor.spawn(executable, argv, server->port(), secret);
    server->start(); // after the first ranks forked (LaunchOptions::rankMain)
    const detail::SupervisionOutcome outcome = supervisor.supervise();
    const detail::FailureAttribution attribution =
        detail::attributeFailure(supervisor.ranks(), outcome, *store);
    supervisor.reapAll();
    // A failure restarts every rank; an interrupt is the user's and does not.
    bool restart = attribution.cause >= 0 && !outcome.interruptSignal &&
                   attempt < options.maxRestarts;
    if (!restart)
      return detail::reportLaunchOutcome(supervisor.ranks(), outcome,
                                         attribution, options);
    std::cerr << ("snn-run: " +
                  detail::describeLaunchFailure(supervisor.ranks(), outcome,
                                                attribution) +
                  "; restarting " + std::to_string(nproc) + " ranks (restart " +
                  std::to_string(attempt + 1) + " of " +
                  std::to_string(options.maxRestarts) + ")\n")
              << std::flush;
  }
}

} // namespace snn::dist
