//===- Mesh.h - An artifact's device mesh as process groups -----*- C++ -*-===//
//
// Mesh builds one group per slice of each axis of the artifact's device mesh
// (row-major rank layout).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_MESH_H
#define SNN_RUNTIME_DISTRIBUTED_MESH_H

#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/World.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace snn::dist {

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

#endif // SNN_RUNTIME_DISTRIBUTED_MESH_H
