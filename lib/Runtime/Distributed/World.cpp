//===- World.cpp - The job's process groups --------------------------------===//
//
// The job as seen from this rank (its rendezvous, World::initialize, is in
// Rendezvous.cpp): newGroup and each group's c10d process group.
//
//===----------------------------------------------------------------------===//

#include "GroupState.h"
#include "Text.h"
#include "snn/Runtime/Distributed/World.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef SNN_WITH_NCCL
#ifndef USE_C10D_NCCL
#error "SNN_ENABLE_CUDA needs a LibTorch built with NCCL (USE_C10D_NCCL)"
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cstdlib>

namespace snn::dist {

using detail::GroupState;
using detail::joinInts;
using detail::secondsText;
using detail::WorldState;

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
                           secondsText(group.timeout) + ": " +
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

void checkWorldSize(int64_t artifactWorldSize, int worldSize) {
  if (artifactWorldSize != worldSize)
    throw DistributedError(
        "the artifact is compiled for world_size " +
        std::to_string(artifactWorldSize) + " but this run has " +
        std::to_string(worldSize) + (worldSize == 1 ? " rank" : " ranks") +
        " (--nproc / WORLD_SIZE must be " + std::to_string(artifactWorldSize) +
        ")");
}

} // namespace snn::dist
