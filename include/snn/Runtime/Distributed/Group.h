//===- Group.h - A set of ranks that run collectives together ---*- C++ -*-===//
//
// Groups come from World::newGroup (World.h) or a Mesh's axes (Mesh.h); the
// collectives on them are in Collectives.h, PointToPoint.h and
// AutogradCollectives.h.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_GROUP_H
#define SNN_RUNTIME_DISTRIBUTED_GROUP_H

#include "snn/Runtime/Distributed/Backend.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace snn::dist {

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

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_GROUP_H
