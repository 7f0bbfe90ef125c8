//===- ProcessGroups.cpp - Rendezvous, groups, mesh -----------------------===//

#include "GroupState.h"
#include "RendezvousStore.h"
#include "snn/Runtime/Distributed/Launcher.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SNN_WITH_NCCL
#ifndef USE_C10D_NCCL
#error "SNN_ENABLE_CUDA needs a LibTorch built with NCCL (USE_C10D_NCCL)"
#endif
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace snn::dist {

using detail::fromBytes;
using detail::GroupState;
using detail::joinInts;
using detail::toBytes;
using detail::WorldState;
using Clock = std::chrono::steady_clock;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

static std::string seconds(std::chrono::milliseconds duration) {
  std::ostringstream out;
  out << duration.count() / 1000.0 << " s";
  return out.str();
}

const char *backendName(Backend backend) {
  return backend == Backend::Nccl ? "nccl" : "gloo";
}

bool ncclAvailable() {
#ifdef SNN_WITH_NCCL
  return true;
#else
  return false;
#endif
}

Backend parseBackend(const std::string &name) {
  if (name == "gloo")
    return Backend::Gloo;
  if (name == "nccl") {
    if (!ncclAvailable())
      throw DistributedError(
          "backend nccl: this build has no NCCL path (configure with "
          "-DSNN_ENABLE_CUDA=ON against a CUDA LibTorch)");
    return Backend::Nccl;
  }
  throw DistributedError("unknown backend '" + name +
                         "' (expected gloo or nccl)");
}

//===----------------------------------------------------------------------===//
// Group
//===----------------------------------------------------------------------===//

static GroupState &requireState(const std::shared_ptr<GroupState> &state) {
  if (!state)
    throw DistributedError("use of an invalid group (this rank is not a "
                           "member)");
  return *state;
}

int Group::rank() const { return requireState(state_).rank; }
int Group::size() const { return requireState(state_).size(); }
const std::vector<int> &Group::ranks() const {
  return requireState(state_).ranks;
}
int Group::globalRank(int groupRank) const {
  const GroupState &s = requireState(state_);
  if (groupRank < 0 || groupRank >= s.size())
    throw DistributedError("group " + s.name + " has no rank " +
                           std::to_string(groupRank) + " (size " +
                           std::to_string(s.size()) + ")");
  return s.ranks[groupRank];
}
const std::string &Group::name() const { return requireState(state_).name; }
std::chrono::milliseconds Group::timeout() const {
  return requireState(state_).timeout;
}
Backend Group::backend() const { return requireState(state_).backend; }
GroupState &Group::state() const { return requireState(state_); }

//===----------------------------------------------------------------------===//
// World state (its heartbeat and failure diagnosis: PeerHealth.cpp)
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Waiting on work
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// World
//===----------------------------------------------------------------------===//

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
                           seconds(state.options.timeout) + ": " +
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
          seconds(state.options.timeout) + ": " +
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

World::~World() {
  // Groups keep the state alive; the heartbeat stops with the last of them.
}

int World::rank() const { return state_->env.rank; }
int World::size() const { return state_->env.worldSize; }
const DistEnvironment &World::environment() const { return state_->env; }
const InitOptions &World::options() const { return state_->options; }
const Group &World::group() const { return worldGroup_; }

// The group's own process group, over the world's store (its keys under
// snn/pg/<index>).
static void connectProcessGroup(WorldState &world, GroupState &group,
                                const std::string &prefix) {
  auto store = c10::make_intrusive<c10d::PrefixStore>(
      "snn/pg/" + std::to_string(group.index), world.store);
  try {
    if (group.backend == Backend::Gloo) {
      auto pgOptions = c10d::ProcessGroupGloo::Options::create(group.timeout);
      pgOptions->devices.push_back(world.glooDevice);
      pgOptions->threads = std::max(1, world.options.glooThreads);
      group.pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
          store, group.rank, group.size(), pgOptions);
    } else {
#ifdef SNN_WITH_NCCL
      // Without async error handling a hung NCCL collective never times
      // out; ask for it unless the user chose.
      ::setenv("NCCL_ASYNC_ERROR_HANDLING", "1", /*overwrite=*/0);
      auto pgOptions = c10d::ProcessGroupNCCL::Options::create();
      pgOptions->timeout = group.timeout;
      group.pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          store, group.rank, group.size(), pgOptions);
#else
      parseBackend("nccl");
#endif
    }
  } catch (const DistributedError &) {
    throw;
  } catch (const std::exception &e) {
    throw DistributedError(prefix + "cannot connect group " + group.name +
                           " (ranks " + joinInts(group.ranks) + ") within " +
                           seconds(group.timeout) + ": " +
                           describeException(e));
  }
}

Group World::newGroup(const std::vector<int> &ranks, const std::string &name) {
  WorldState &world = *state_;
  const std::string prefix = "rank " + std::to_string(world.env.rank) + ": ";
  if (ranks.empty())
    throw DistributedError(prefix + "group " + name + " has no ranks");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world.env.worldSize)
      throw DistributedError(prefix + "group " + name + ": rank " +
                             std::to_string(ranks[i]) +
                             " is out of range for world size " +
                             std::to_string(world.env.worldSize));
    if (i > 0 && ranks[i] <= ranks[i - 1])
      throw DistributedError(prefix + "group " + name +
                             ": ranks must be distinct and increasing");
  }
  int index;
  {
    std::lock_guard<std::mutex> lock(world.groupsMutex);
    index = static_cast<int>(world.sequences.size());
    world.sequences.emplace_back();
  }
  auto member = std::find(ranks.begin(), ranks.end(), world.env.rank);
  if (member == ranks.end())
    return Group();

  auto group = std::make_shared<GroupState>();
  group->world = state_;
  group->ranks = ranks;
  group->rank = static_cast<int>(member - ranks.begin());
  group->name = name;
  group->index = index;
  group->backend = world.options.backend;
  group->timeout = world.options.timeout;

  // A group of all ranks reuses the world's process group (and its
  // collective numbering: same process group, one order).
  if (worldGroup_.valid() && ranks.size() == size_t(world.env.worldSize)) {
    const GroupState &all = worldGroup_.state();
    group->pg = all.pg;
    group->index = all.index;
    group->sequence = all.sequence;
    return Group(group);
  }
  group->sequence = std::make_shared<std::atomic<uint64_t>>(0);

  if (ranks.size() > 1)
    connectProcessGroup(world, *group, prefix);
  {
    std::lock_guard<std::mutex> lock(world.groupsMutex);
    world.sequences[index] = group->sequence;
  }
  return Group(group);
}

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

void checkWorldSize(int64_t artifactWorldSize, int worldSize) {
  if (artifactWorldSize != worldSize)
    throw DistributedError(
        "the artifact is compiled for world_size " +
        std::to_string(artifactWorldSize) + " but this run has " +
        std::to_string(worldSize) + (worldSize == 1 ? " rank" : " ranks") +
        " (--nproc / WORLD_SIZE must be " + std::to_string(artifactWorldSize) +
        ")");
}

static std::string describeMesh(const std::vector<std::string> &axes,
                                 const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  text += "] (axes ";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? ", " : "") + axes[i];
  return text + ")";
}

void Mesh::validate(const std::vector<std::string> &axes,
                    const std::vector<int64_t> &shape, int worldSize) {
  if (axes.size() != shape.size())
    throw DistributedError("mesh: " + std::to_string(axes.size()) +
                           " axis names for " + std::to_string(shape.size()) +
                           " dimensions");
  int64_t product = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i].empty())
      throw DistributedError("mesh: axis " + std::to_string(i) +
                             " has an empty name");
    for (size_t j = 0; j < i; ++j)
      if (axes[j] == axes[i])
        throw DistributedError("mesh: axis name '" + axes[i] +
                               "' appears twice");
    if (shape[i] < 1 || shape[i] > (1 << 20))
      throw DistributedError("mesh: axis " + axes[i] + " has size " +
                             std::to_string(shape[i]) +
                             " (expected at least 1)");
    product *= shape[i];
    if (product > (int64_t(1) << 30))
      throw DistributedError("mesh " + describeMesh(axes, shape) +
                             " is too large");
  }
  if (product != worldSize)
    throw DistributedError(
        "the artifact's mesh " + describeMesh(axes, shape) + " has " +
        std::to_string(product) + (product == 1 ? " rank" : " ranks") +
        " but this run has " + std::to_string(worldSize) +
        " (--nproc / WORLD_SIZE must be " + std::to_string(product) + ")");
}

std::vector<int> Mesh::coordinatesOf(const std::vector<int64_t> &shape,
                                     int rank) {
  std::vector<int> coordinates(shape.size());
  int64_t rest = rank;
  for (size_t i = shape.size(); i-- > 0;) {
    coordinates[i] = static_cast<int>(rest % shape[i]);
    rest /= shape[i];
  }
  return coordinates;
}

int Mesh::rankOf(const std::vector<int64_t> &shape,
                 const std::vector<int> &coordinates) {
  int64_t rank = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    rank = rank * shape[i] + coordinates[i];
  return static_cast<int>(rank);
}

std::vector<std::vector<int>> Mesh::slices(const std::vector<int64_t> &shape,
                                           size_t axis) {
  int64_t total = 1;
  for (int64_t size : shape)
    total *= size;
  std::vector<std::vector<int>> result;
  // Each rank with coordinate 0 on `axis`, in rank order, starts a slice.
  for (int64_t rank = 0; rank < total; ++rank) {
    std::vector<int> coordinates = coordinatesOf(shape, static_cast<int>(rank));
    if (coordinates[axis] != 0)
      continue;
    std::vector<int> slice;
    for (int64_t k = 0; k < shape[axis]; ++k) {
      coordinates[axis] = static_cast<int>(k);
      slice.push_back(rankOf(shape, coordinates));
    }
    result.push_back(std::move(slice));
  }
  return result;
}

Mesh Mesh::create(World &world, const std::vector<std::string> &axes,
                  const std::vector<int64_t> &shape) {
  validate(axes, shape, world.size());
  Mesh mesh;
  mesh.axes_ = axes;
  mesh.shape_ = shape;
  mesh.coordinates_ = coordinatesOf(shape, world.rank());
  for (size_t axis = 0; axis < axes.size(); ++axis) {
    Group mine;
    for (const std::vector<int> &slice : slices(shape, axis)) {
      std::string name = axes[axis] + " {" + joinInts(slice) + "}";
      Group group = world.newGroup(slice, name);
      if (group.valid())
        mine = group;
    }
    mesh.groups_.push_back(mine);
  }
  return mesh;
}

size_t Mesh::axisIndex(const std::string &axis) const {
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i] == axis)
      return i;
  std::string known;
  for (size_t i = 0; i < axes_.size(); ++i)
    known += (i ? ", " : "") + axes_[i];
  throw DistributedError("mesh has no axis '" + axis + "' (axes: " +
                         (known.empty() ? "none" : known) + ")");
}

bool Mesh::hasAxis(const std::string &axis) const {
  return std::find(axes_.begin(), axes_.end(), axis) != axes_.end();
}

int Mesh::coordinate(const std::string &axis) const {
  return coordinates_[axisIndex(axis)];
}

const Group &Mesh::group(const std::string &axis) const {
  return groups_[axisIndex(axis)];
}

} // namespace snn::dist
