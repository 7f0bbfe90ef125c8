//===- Environment.cpp - The torchrun variables ---------------------------===//

#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/Error.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <vector>

namespace snn::dist {

static const char *const kHowToLaunch =
    "start the ranks with `snn-run --nproc N ...` or with torchrun, which "
    "set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT";

bool DistEnvironment::singleHost() const {
  if (localWorldSize != worldSize)
    return false;
  return masterAddr == "localhost" || masterAddr == "::1" ||
         masterAddr.rfind("127.", 0) == 0;
}

EnvironmentLookup processEnvironment() {
  return [](const std::string &name) -> std::optional<std::string> {
    const char *value = std::getenv(name.c_str());
    if (!value)
      return std::nullopt;
    return std::string(value);
  };
}

// A decimal integer in [low, high], the whole string (no sign for ports).
static int parseInteger(const std::string &name, const std::string &value,
                        long low, long high, const std::string &rangeHint) {
  std::string trimmed = value;
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\n'))
    trimmed.pop_back();
  size_t start = 0;
  while (start < trimmed.size() && trimmed[start] == ' ')
    ++start;
  trimmed = trimmed.substr(start);
  if (trimmed.empty())
    throw DistributedError(name + " is empty (expected an integer; " +
                           rangeHint + ")");
  errno = 0;
  char *end = nullptr;
  long parsed = std::strtol(trimmed.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE)
    throw DistributedError(name + "='" + value + "' is not an integer (" +
                           rangeHint + ")");
  if (parsed < low || parsed > high)
    throw DistributedError(name + "=" + trimmed + " is out of range (" +
                           rangeHint + ")");
  return static_cast<int>(parsed);
}

bool torchrunEnvironmentPresent(const EnvironmentLookup &lookup) {
  return lookup("RANK").has_value() || lookup("WORLD_SIZE").has_value();
}

bool torchrunEnvironmentPresent() {
  return torchrunEnvironmentPresent(processEnvironment());
}

DistEnvironment readTorchrunEnvironment() {
  return readTorchrunEnvironment(processEnvironment());
}

// What `snn-run --nproc` adds for its ranks: the job secret of its store and
// its pid.
static void readLauncherVariables(const EnvironmentLookup &lookup,
                                  DistEnvironment &env) {
  auto secret = lookup("SNN_JOB_SECRET");
  if (!secret)
    return;
  if (secret->size() != 64 ||
      secret->find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    throw DistributedError("SNN_JOB_SECRET is not 64 hexadecimal digits (it is "
                           "set by snn-run --nproc for its ranks; unset it "
                           "otherwise)");
  if (!env.externalStore)
    throw DistributedError("SNN_JOB_SECRET is set but "
                           "TORCHELASTIC_USE_AGENT_STORE is not True (both are "
                           "set by snn-run --nproc for its ranks; unset "
                           "SNN_JOB_SECRET otherwise)");
  env.jobSecret = *secret;
  if (auto pid = lookup("SNN_LAUNCHER_PID"))
    env.launcherPid = parseInteger("SNN_LAUNCHER_PID", *pid, 1,
                                   std::numeric_limits<int>::max(),
                                   "the launcher's process id");
}

DistEnvironment readTorchrunEnvironment(const EnvironmentLookup &lookup) {
  std::vector<std::string> missing;
  for (const char *name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    if (!lookup(name))
      missing.push_back(name);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i)
      list += (i ? ", " : "") + missing[i];
    throw DistributedError(
        std::string("distributed launch: ") + list +
        (missing.size() == 1 ? " is" : " are") + " not set: " + kHowToLaunch);
  }

  DistEnvironment env;
  const int maxRanks = 1 << 20;
  env.worldSize = parseInteger("WORLD_SIZE", *lookup("WORLD_SIZE"), 1,
                               maxRanks, "at least 1");
  env.rank = parseInteger("RANK", *lookup("RANK"), 0, env.worldSize - 1,
                          "0 to " + std::to_string(env.worldSize - 1) +
                              " for WORLD_SIZE=" +
                              std::to_string(env.worldSize));
  env.masterAddr = *lookup("MASTER_ADDR");
  if (env.masterAddr.empty())
    throw DistributedError("MASTER_ADDR is empty (expected the host name or "
                           "address of the rendezvous store)");
  env.masterPort =
      parseInteger("MASTER_PORT", *lookup("MASTER_PORT"), 1, 65535,
                   "a TCP port, 1 to 65535");

  env.localWorldSize = env.worldSize;
  if (auto value = lookup("LOCAL_WORLD_SIZE"))
    env.localWorldSize = parseInteger("LOCAL_WORLD_SIZE", *value, 1,
                                      env.worldSize,
                                      "1 to WORLD_SIZE=" +
                                          std::to_string(env.worldSize));
  if (auto value = lookup("LOCAL_RANK"))
    env.localRank = parseInteger(
        "LOCAL_RANK", *value, 0, env.localWorldSize - 1,
        "0 to " + std::to_string(env.localWorldSize - 1) +
            " for LOCAL_WORLD_SIZE=" + std::to_string(env.localWorldSize));
  else
    env.localRank = env.rank % env.localWorldSize;

  // torchrun's static rendezvous: its agent hosts the store and every rank
  // is a client under a per-restart prefix (torch/distributed/rendezvous.py).
  auto agentStore = lookup("TORCHELASTIC_USE_AGENT_STORE");
  if (agentStore && *agentStore == "True") {
    auto restart = lookup("TORCHELASTIC_RESTART_COUNT");
    if (!restart)
      throw DistributedError("TORCHELASTIC_USE_AGENT_STORE=True needs "
                             "TORCHELASTIC_RESTART_COUNT (the attempt number)");
    int attempt =
        parseInteger("TORCHELASTIC_RESTART_COUNT", *restart, 0,
                     std::numeric_limits<int>::max(), "0 or more");
    env.externalStore = true;
    env.storePrefix = "/worker/attempt_" + std::to_string(attempt);
  }
  readLauncherVariables(lookup, env);
  return env;
}

DistEnvironment singleProcessEnvironment() {
  DistEnvironment env;
  env.rank = 0;
  env.worldSize = 1;
  env.localRank = 0;
  env.localWorldSize = 1;
  return env;
}

} // namespace snn::dist
