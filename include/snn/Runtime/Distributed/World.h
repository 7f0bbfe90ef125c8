//===- World.h - Rendezvous and the job as seen from a rank -----*- C++ -*-===//
//
// World::initialize connects this rank to the others: a c10d TCPStore at
// MASTER_ADDR:MASTER_PORT (hosted by the launcher or torchrun's agent, or by
// rank 0), a join handshake that checks every rank agrees on WORLD_SIZE, and
// one c10d process group over all ranks (Gloo on CPU; NCCL when built with
// SNN_WITH_NCCL and asked for). World::newGroup makes the others.
//
// Every collective has a timeout (InitOptions::timeout, 60 s by default). A
// background heartbeat through the store lets a rank whose collective fails
// name the peer that died or hung:
//   rank 1: lost peer (rank 3?) during all_reduce (group world, #12): ...
// See docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_WORLD_H
#define SNN_RUNTIME_DISTRIBUTED_WORLD_H

#include "snn/Runtime/Distributed/Backend.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/Group.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace snn::dist {

struct InitOptions {
  /// Bound on every collective and on the rendezvous: a dead or hung peer
  /// makes the others fail within about this long.
  std::chrono::milliseconds timeout{60000};
  Backend backend = Backend::Gloo;
  /// Gloo worker threads per process group (parallel async collectives).
  int glooThreads = 2;
  /// Publish a heartbeat through the store so a failed collective can name
  /// the lost peer. Off: the message says "(rank ?)".
  bool heartbeat = true;
};

/// The job as seen from this rank. Keep it alive while any Group is in use
/// (groups also keep the connection alive). Not copyable.
class World {
public:
  /// Rendezvous with every other rank and create the world group. A world
  /// of size 1 needs no store and no process group. Throws DistributedError
  /// naming the store address, the ranks that did not join within the
  /// timeout, or a rank that disagrees on WORLD_SIZE.
  static std::shared_ptr<World> initialize(const DistEnvironment &environment,
                                           const InitOptions &options = {});

  ~World();
  World(const World &) = delete;
  World &operator=(const World &) = delete;

  int rank() const;
  int size() const;
  const DistEnvironment &environment() const;
  const InitOptions &options() const;
  /// All ranks, in order.
  const Group &group() const;

  /// A group of the given global ranks (sorted, distinct, in range).
  /// Collective over ALL ranks: every rank must call newGroup with the same
  /// ranks in the same order, members or not. Returns an invalid Group on a
  /// non-member. `name` shows up in error messages.
  Group newGroup(const std::vector<int> &ranks, const std::string &name);

  /// Tells the launcher when this rank failed; call it before printing the
  /// rank's error line. A rank's exit can come long after its error (closing
  /// its connections, waiting on queued work), and a peer that fails because
  /// of it may exit first: the launcher names the rank whose failure came
  /// first. Does nothing without the launcher's store.
  void recordFailure() const;

  detail::WorldState &state() const { return *state_; }

private:
  World() = default;
  std::shared_ptr<detail::WorldState> state_;
  Group worldGroup_;
};

/// Throws DistributedError unless `worldSize` ranks run an artifact compiled
/// for `artifactWorldSize` ranks.
void checkWorldSize(int64_t artifactWorldSize, int worldSize);

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_WORLD_H
