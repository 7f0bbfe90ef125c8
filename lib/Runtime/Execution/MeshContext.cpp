//===- MeshContext.cpp - The device mesh a program's collectives use ------===//

#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Distributed/Mesh.h"
#include "snn/Runtime/Support/Error.h"

#include <algorithm>

namespace snn::runtime {

void CommStats::record(const std::string &kind, const std::string &meshAxis,
                       int64_t bytes, double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  CommCount &count = table[{kind, meshAxis}];
  count.kind = kind;
  count.meshAxis = meshAxis;
  ++count.calls;
  count.bytes += bytes;
  count.seconds += seconds;
}

void CommStats::reset() {
  std::lock_guard<std::mutex> lock(mutex);
  table.clear();
}

std::vector<CommCount> CommStats::counts() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<CommCount> result;
  for (const auto &entry : table) // std::map: by kind, then axis
    result.push_back(entry.second);
  return result;
}

MeshContext MeshContext::create(dist::World *world,
                                const schema::MeshSpec &mesh) {
  MeshContext context;
  context.axisNames = mesh.axes;
  context.sizes = mesh.shape;
  if (world)
    context.worldGroup = world->group();
  if (world && world->size() > 1) {
    dist::Mesh created = dist::Mesh::create(*world, mesh.axes, mesh.shape);
    context.coordinates = created.coordinates();
    for (const std::string &axis : mesh.axes)
      context.groups.push_back(created.group(axis));
    return context;
  }
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    if (mesh.shape[i] != 1)
      throw Error("the artifact's mesh axis '" + mesh.axes[i] + "' has " +
                  std::to_string(mesh.shape[i]) +
                  " members, but this run is one process (start its ranks "
                  "with snn-run --nproc N or torchrun)");
  context.coordinates.assign(mesh.axes.size(), 0);
  context.groups.resize(mesh.axes.size());
  return context;
}

size_t MeshContext::indexOf(const std::string &axis) const {
  auto it = std::find(axisNames.begin(), axisNames.end(), axis);
  if (it == axisNames.end())
    throw Error("mesh axis '" + axis +
                "' is not an axis of the artifact's mesh (axes: " +
                describeAxes() + ")");
  return size_t(it - axisNames.begin());
}

bool MeshContext::hasAxis(const std::string &axis) const {
  return std::find(axisNames.begin(), axisNames.end(), axis) !=
         axisNames.end();
}

int64_t MeshContext::axisSize(const std::string &axis) const {
  return sizes[indexOf(axis)];
}

int MeshContext::coordinate(const std::string &axis) const {
  return coordinates[indexOf(axis)];
}

const dist::Group &MeshContext::group(const std::string &axis) const {
  const dist::Group &group = groups[indexOf(axis)];
  if (!group.valid())
    throw Error("mesh axis '" + axis + "' has no process group in this run");
  return group;
}

const dist::Group *MeshContext::groupIfSplit(const std::string &axis) const {
  return hasAxis(axis) && axisSize(axis) > 1 ? &group(axis) : nullptr;
}

int MeshContext::worldRank() const {
  return worldGroup.valid() ? worldGroup.rank() : 0;
}

std::string MeshContext::describeAxes() const {
  std::string text;
  for (const std::string &axis : axisNames)
    text += (text.empty() ? "" : ", ") + axis;
  return text.empty() ? "none" : text;
}

dist::CollectiveTrace MeshContext::trace(const std::string &axis) const {
  std::shared_ptr<CommStats> stats = counters;
  return [stats, axis](dist::CollectiveKind kind, int64_t bytes, double seconds) {
    stats->record(dist::collectiveKindName(kind), axis, bytes, seconds);
  };
}

} // namespace snn::runtime
