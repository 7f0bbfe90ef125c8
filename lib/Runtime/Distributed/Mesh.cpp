//===- Mesh.cpp - An artifact's device mesh as process groups -------------===//

#include "Text.h"
#include "snn/Runtime/Distributed/Error.h"
#include "snn/Runtime/Distributed/Mesh.h"

#include <algorithm>

namespace snn::dist {

using detail::joinInts;

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
