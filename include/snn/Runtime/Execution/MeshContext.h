//===- MeshContext.h - The device mesh a program's collectives use -*- C++ -*-===//
//
// A partitioned artifact's programs hold collectives (all_reduce, all_gather,
// all_slice, backward_all_reduce), each over one named axis of the artifact's
// mesh (docs/artifact-format.md, "Partitioned programs"). The executor hands
// the kernels this rank's MeshContext through RunContext::mesh: every axis of
// the mesh with its size, this rank's coordinate and its group on it, and the
// run's communication counters, which the collective kernels feed in forward
// and in backward (snn-run train --comm-stats and the rank logs report them).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_MESHCONTEXT_H
#define SNN_RUNTIME_EXECUTION_MESHCONTEXT_H

#include "snn/Runtime/Distributed/AutogradCollectives.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/World.h"
#include "snn/Schema/Manifest.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace snn::runtime {

/// The collectives of one kind over one mesh axis that a program's collective
/// ops ran (forward and backward) since the counters were last reset.
struct CommCount {
  std::string kind;     ///< "all_reduce" or "all_gather"
  std::string meshAxis; ///< the mesh axis whose group ran them
  int64_t calls = 0;
  /// Of the tensors the collectives returned on this rank (an all_reduce of
  /// a [4, 16, 128] float32 tensor: 32768).
  int64_t bytes = 0;
  /// Wall time this rank spent in them (waiting for the slowest member
  /// included): what the step lost to communication.
  double seconds = 0;
};

/// Per (kind, mesh axis) counters; safe to feed from any thread.
class CommStats {
public:
  void record(const std::string &kind, const std::string &meshAxis,
              int64_t bytes, double seconds = 0);
  void reset();
  /// Every (kind, mesh axis) with at least one call, sorted by kind, then
  /// mesh axis.
  std::vector<CommCount> counts() const;

private:
  mutable std::mutex mutex;
  std::map<std::pair<std::string, std::string>, CommCount> table;
};

class MeshContext {
public:
  /// A mesh without axes (one process, no collectives).
  MeshContext() = default;

  /// The artifact's mesh for this process. With a world of more than one
  /// rank this is collective: every rank creates every group of the mesh
  /// (dist::Mesh::create, which also checks the mesh against the world
  /// size). Without one (null, or a world of one) each axis must have size
  /// 1 and has no group: its collectives are the identity.
  static MeshContext create(dist::World *world, const schema::MeshSpec &mesh);

  const std::vector<std::string> &axes() const { return axisNames; }
  const std::vector<int64_t> &shape() const { return sizes; }
  bool hasAxis(const std::string &axis) const;
  /// Size of, and this rank's coordinate on, an axis; Error for an unknown
  /// one (naming the mesh's axes).
  int64_t axisSize(const std::string &axis) const;
  int coordinate(const std::string &axis) const;
  /// This rank's group along an axis of size > 1 (Error otherwise).
  const dist::Group &group(const std::string &axis) const;
  /// The group along `axis` when it has more than one member; null for an
  /// axis of size 1 (nothing to talk to) or one the mesh lacks.
  const dist::Group *groupIfSplit(const std::string &axis) const;
  /// Every rank of the run (invalid in a process without a world).
  const dist::Group &world() const { return worldGroup; }
  /// This process's rank in the run (0 without a world).
  int worldRank() const;
  /// "dp, tp", or "none".
  std::string describeAxes() const;

  /// The counters, shared by every copy of this context.
  CommStats &stats() const { return *counters; }
  /// A trace that counts a collective over `axis` in stats().
  dist::CollectiveTrace trace(const std::string &axis) const;

private:
  size_t indexOf(const std::string &axis) const;

  std::vector<std::string> axisNames;
  std::vector<int64_t> sizes;
  std::vector<int> coordinates;
  std::vector<dist::Group> groups;
  dist::Group worldGroup;
  std::shared_ptr<CommStats> counters = std::make_shared<CommStats>();
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_MESHCONTEXT_H
