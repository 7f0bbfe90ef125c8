//===- Rendezvous.cpp - Joining and leaving the job -----------------------===//
//
// World::initialize: the store (the launcher's, torchrun's agent's or rank
// 0's), the join handshake that checks every rank agrees on WORLD_SIZE, the
// heartbeat and launcher watch, and the backend's transport. And the done
// handshake when the world state goes away.
//
//===----------------------------------------------------------------------===//

#include "GroupState.h"
#include "RankFailures.h"
#include "StoreClient.h"
#include "Text.h"
#include "snn/Runtime/Distributed/Launcher.h"
#include "snn/Runtime/Distributed/World.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SNN_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace snn::dist {

using detail::fromBytes;
using detail::joinInts;
using detail::secondsText;
using detail::toBytes;
using detail::WorldState;
using Clock = std::chrono::steady_clock;

WorldState::~WorldState() {
  stopHeartbeat();
  stopLauncherWatch();
  if (!store || !joined || env.worldSize <= 1)
    return;
  // Rank 0 hosting the store must outlive the others' last use of it: their exit, or after
  // a failure their diagnosis, which reads the store over three heartbeats (a store gone
  // mid-diagnosis would make a survivor blame rank 0 instead of the lost peer). Ranks that
  // died never say they are done, so the wait after a failure is that diagnosis' length.
  bool hostsStore = !env.externalStore && env.rank == 0;
  try {
    store->set("snn/done/" + std::to_string(env.rank), toBytes("1"));
    if (!hostsStore)
      return;
    std::vector<std::string> keys;
    for (int r = 1; r < env.worldSize; ++r)
      keys.push_back("snn/done/" + std::to_string(r));
    auto grace = failedOnce ? 4 * heartbeatInterval + std::chrono::milliseconds(1000)
                            : std::chrono::milliseconds(10000);
    auto deadline = Clock::now() + std::min(options.timeout, grace);
    while (!store->check(keys) && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } catch (const std::exception &) {
  }
}

static c10::intrusive_ptr<c10d::Store>
connectStore(const DistEnvironment &env, const InitOptions &options,
             bool server) {
  c10::intrusive_ptr<c10d::Store> store;
  if (!env.jobSecret.empty()) {
    // Ranks of `snn-run --nproc`: the launcher's authenticated store.
    store = c10::make_intrusive<detail::StoreClient>(
        env.masterAddr, env.masterPort, env.jobSecret, options.timeout);
  } else {
    // torchrun's agent store or rank 0's: c10d's TCPStore, as torch does.
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = static_cast<uint16_t>(env.masterPort);
    storeOptions.isServer = server;
    storeOptions.waitWorkers = false;
    storeOptions.timeout = options.timeout;
    store = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, storeOptions);
  }
  if (!env.storePrefix.empty())
    store = c10::make_intrusive<c10d::PrefixStore>(env.storePrefix, store);
  return store;
}

static std::shared_ptr<gloo::transport::Device>
createGlooDevice(const DistEnvironment &env) {
  if (env.singleHost())
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  if (const char *names = std::getenv("GLOO_SOCKET_IFNAME")) {
    std::string first = names;
    first = first.substr(0, first.find(','));
    if (!first.empty())
      return c10d::ProcessGroupGloo::createDeviceForInterface(first);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// Rank 0 (without an external store) hosts the store; the others connect.
static void connectRendezvousStore(WorldState &state, const std::string &prefix,
                                   const std::string &address) {
  const DistEnvironment &env = state.env;
  const bool server = !env.externalStore && env.rank == 0;
  if (server && env.singleHost() && portInUse(env.masterPort))
    throw DistributedError(prefix + "cannot start the rendezvous store: port " +
                           std::to_string(env.masterPort) +
                           " (MASTER_PORT) is already in use on this host");
  try {
    state.store = connectStore(env, state.options, server);
  } catch (const std::exception &e) {
    if (server)
      throw DistributedError(prefix + "cannot start the rendezvous store on "
                                      "port " +
                             std::to_string(env.masterPort) +
                             " (MASTER_PORT): " + describeException(e));
    throw DistributedError(prefix + "cannot reach the rendezvous store at " +
                           address + " (MASTER_ADDR:MASTER_PORT) within " +
                           secondsText(state.options.timeout) + ": " +
                           describeException(e));
  }
}

// Polls until every rank's join key is there; names the missing ranks when
// the timeout passes.
static void waitForEveryRank(WorldState &state,
                             const std::vector<std::string> &keys,
                             const std::string &prefix,
                             const std::string &address) {
  const DistEnvironment &env = state.env;
  const auto deadline = Clock::now() + state.options.timeout;
  while (!state.store->check(keys)) {
    if (Clock::now() >= deadline) {
      std::vector<int> missing;
      for (int r = 0; r < env.worldSize; ++r)
        if (!state.store->check({keys[r]}))
          missing.push_back(r);
      throw DistributedError(
          prefix + "rendezvous at " + address + " timed out after " +
          secondsText(state.options.timeout) + ": " +
          (missing.size() == 1 ? "rank " : "ranks ") + joinInts(missing) +
          " of WORLD_SIZE=" + std::to_string(env.worldSize) + " did not join");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Join: claim the rank, publish what we believe, wait for everyone, and
// check that everyone believes the same world size.
static void joinRendezvous(WorldState &state, const std::string &prefix,
                           const std::string &address) {
  const DistEnvironment &env = state.env;
  try {
    const std::string rank = std::to_string(env.rank);
    if (state.store->add("snn/join/claim/" + rank, 1) > 1)
      throw DistributedError(prefix + "another process already joined as rank " +
                             rank + " (two processes with RANK=" + rank + "?)");
    state.store->set("snn/join/" + rank,
                     toBytes(std::to_string(env.worldSize) + " " +
                             std::to_string(::getpid())));
    std::vector<std::string> keys;
    for (int r = 0; r < env.worldSize; ++r)
      keys.push_back("snn/join/" + std::to_string(r));
    waitForEveryRank(state, keys, prefix, address);
    for (int r = 0; r < env.worldSize; ++r) {
      std::istringstream in(fromBytes(state.store->get(keys[r])));
      int theirWorldSize = 0;
      in >> theirWorldSize;
      if (theirWorldSize != env.worldSize)
        throw DistributedError(
            prefix + "rank " + std::to_string(r) + " was started with "
            "WORLD_SIZE=" + std::to_string(theirWorldSize) +
            ", this rank with WORLD_SIZE=" + std::to_string(env.worldSize));
    }
  } catch (const DistributedError &) {
    throw;
  } catch (const std::exception &e) {
    throw DistributedError(prefix + "rendezvous at " + address +
                           " failed: " + describeException(e));
  }
}

// The heartbeat, on its own connection (PeerHealth.cpp).
static void connectHeartbeat(WorldState &state, const std::string &prefix,
                           const std::string &address) {
  try {
    state.heartbeatStore = connectStore(state.env, state.options,
                                        /*server=*/false);
  } catch (const std::exception &e) {
    throw DistributedError(prefix + "cannot reach the rendezvous store at " +
                           address + ": " + describeException(e));
  }
  auto interval = state.options.timeout / 20;
  state.heartbeatInterval = std::clamp(
      interval, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  state.startHeartbeat();
}

// The backend's transport: this rank's GPU for NCCL, the Gloo device.
static void createTransport(WorldState &state, const std::string &prefix) {
  const DistEnvironment &env = state.env;
#ifdef SNN_WITH_NCCL
  if (state.options.backend == Backend::Nccl) {
    // One GPU per local rank, as torchrun users expect.
    const int devices = c10::cuda::device_count();
    if (devices < 1)
      throw DistributedError(prefix + "backend nccl: no CUDA device is visible");
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.localRank % devices));
  }
#endif
  if (state.options.backend == Backend::Gloo) {
    try {
      state.glooDevice = createGlooDevice(env);
    } catch (const std::exception &e) {
      throw DistributedError(prefix + "cannot create the Gloo transport: " +
                             describeException(e) +
                             " (set GLOO_SOCKET_IFNAME to the interface "
                             "that reaches the other hosts)");
    }
  }
}

std::shared_ptr<World> World::initialize(const DistEnvironment &env,
                                         const InitOptions &options) {
  if (env.worldSize < 1 || env.rank < 0 || env.rank >= env.worldSize)
    throw DistributedError("invalid rank " + std::to_string(env.rank) +
                           " for world size " + std::to_string(env.worldSize));
  if (options.timeout.count() <= 0)
    throw DistributedError("distributed timeout must be positive");
  if (options.backend == Backend::Nccl && !ncclAvailable())
    parseBackend("nccl"); // throws the explanation

  std::shared_ptr<World> world(new World());
  auto state = std::make_shared<WorldState>();
  state->env = env;
  state->options = options;
  world->state_ = state;
  const std::string prefix = "rank " + std::to_string(env.rank) + ": ";

  if (env.worldSize == 1) {
    world->worldGroup_ = world->newGroup({0}, "world");
    return world;
  }

  detail::installRankFailureHandlers(env.rank);
  std::string address = env.masterAddr + ":" + std::to_string(env.masterPort);
  if (!env.jobSecret.empty() && env.launcherPid > 0)
    address += " (the launcher, pid " + std::to_string(env.launcherPid) + ")";
  connectRendezvousStore(*state, prefix, address);
  joinRendezvous(*state, prefix, address);
  state->joined = true;
  if (!env.jobSecret.empty())
    state->startLauncherWatch();
  if (options.heartbeat)
    connectHeartbeat(*state, prefix, address);
  createTransport(*state, prefix);

  std::vector<int> all(env.worldSize);
  for (int r = 0; r < env.worldSize; ++r)
    all[r] = r;
  world->worldGroup_ = world->newGroup(all, "world");
  return world;
}

} // namespace snn::dist
