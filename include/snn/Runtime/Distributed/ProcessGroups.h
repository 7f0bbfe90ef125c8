//===- ProcessGroups.h - Rendezvous, process groups, device mesh -*- C++ -*-===//
//
// World::initialize connects this rank to the others: a c10d TCPStore at
// MASTER_ADDR:MASTER_PORT (hosted by the launcher or torchrun's agent, or by
// rank 0), a join handshake that checks every rank agrees on WORLD_SIZE, and
// one c10d process group over all ranks (Gloo on CPU; NCCL when built with
// SNN_WITH_NCCL and asked for). Mesh builds one group per slice of each axis
// of the artifact's device mesh (row-major rank layout).
//
// Every collective has a timeout (InitOptions::timeout, 60 s by default). A
// background heartbeat through the store lets a rank whose collective fails
// name the peer that died or hung:
//   rank 1: lost peer (rank 3?) during all_reduce (group world, #12): ...
// See docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_PROCESSGROUPS_H
#define SNN_RUNTIME_DISTRIBUTED_PROCESSGROUPS_H

#include "snn/Runtime/Distributed/Environment.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace snn::dist {

enum class Backend {
  Gloo, ///< CPU tensors, TCP (loopback or the host's interface).
  Nccl, ///< CUDA tensors; only in builds with SNN_WITH_NCCL.
};

/// "gloo" / "nccl".
const char *backendName(Backend backend);
/// Parses "gloo" or "nccl"; throws DistributedError otherwise, and for
/// "nccl" in a build without SNN_WITH_NCCL.
Backend parseBackend(const std::string &name);
/// Whether this build has the NCCL path (SNN_WITH_NCCL).
bool ncclAvailable();

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

namespace detail {
struct GroupState;
struct WorldState;
} // namespace detail

/// A set of ranks that run collectives together; a cheap shared handle.
/// A default-constructed Group is invalid (this rank is not a member).
class Group {
public:
  Group() = default;

  bool valid() const { return state_ != nullptr; }
  explicit operator bool() const { return valid(); }

  /// This process's rank inside the group.
  int rank() const;
  int size() const;
  /// Global ranks of the members; index = rank in the group.
  const std::vector<int> &ranks() const;
  /// Global rank of group member `groupRank`.
  int globalRank(int groupRank) const;
  /// For messages: "world", "dp {0, 2}", ...
  const std::string &name() const;
  std::chrono::milliseconds timeout() const;
  Backend backend() const;

  /// Implementation access (Collectives.cpp and friends).
  detail::GroupState &state() const;

private:
  friend class World;
  explicit Group(std::shared_ptr<detail::GroupState> state)
      : state_(std::move(state)) {}
  std::shared_ptr<detail::GroupState> state_;
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

  detail::WorldState &state() const { return *state_; }

private:
  World() = default;
  std::shared_ptr<detail::WorldState> state_;
  Group worldGroup_;
};

/// Throws DistributedError unless `worldSize` ranks run an artifact compiled
/// for `artifactWorldSize` ranks.
void checkWorldSize(int64_t artifactWorldSize, int worldSize);

/// Wall seconds this process has spent waiting for its collectives and
/// point-to-point transfers to complete since it started: the communication
/// its computation did not hide. A step's share is the difference across it.
double blockedSeconds();

/// The device mesh of an artifact (manifest "mesh": {axes, shape}): rank r
/// has row-major coordinates in `shape`, and each axis has one group per
/// slice (the ranks that differ only in that axis' coordinate).
class Mesh {
public:
  /// Validates the mesh (as many axes as dimensions, distinct non-empty
  /// names, sizes >= 1, product == world size) and creates every group on
  /// every rank in the same order. An empty mesh means one process.
  static Mesh create(World &world, const std::vector<std::string> &axes,
                     const std::vector<int64_t> &shape);

  const std::vector<std::string> &axes() const { return axes_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// Index of an axis; throws DistributedError for an unknown name.
  size_t axisIndex(const std::string &axis) const;
  bool hasAxis(const std::string &axis) const;
  /// This rank's coordinate along an axis.
  int coordinate(const std::string &axis) const;
  const std::vector<int> &coordinates() const { return coordinates_; }
  /// The group of this rank's slice along an axis.
  const Group &group(const std::string &axis) const;

  /// Row-major layout helpers (no communication).
  static std::vector<int> coordinatesOf(const std::vector<int64_t> &shape,
                                        int rank);
  static int rankOf(const std::vector<int64_t> &shape,
                    const std::vector<int> &coordinates);
  /// Every slice of `axis`, in creation order; each lists global ranks in
  /// increasing coordinate along the axis.
  static std::vector<std::vector<int>> slices(const std::vector<int64_t> &shape,
                                              size_t axis);
  /// Throws DistributedError unless axes/shape describe a mesh of
  /// `worldSize` ranks.
  static void validate(const std::vector<std::string> &axes,
                       const std::vector<int64_t> &shape, int worldSize);

private:
  std::vector<std::string> axes_;
  std::vector<int64_t> shape_;
  std::vector<int> coordinates_;
  std::vector<Group> groups_;
};

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_PROCESSGROUPS_H
