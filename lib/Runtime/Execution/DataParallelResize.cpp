//===- DataParallelResize.cpp - A dp axis fitted to the ranks at hand -----===//

#include "snn/Runtime/Execution/DataParallelResize.h"
#include "snn/Runtime/Distributed/Mesh.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>
#include <set>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::runtime {

namespace {

std::string planned(const Manifest &manifest) {
  std::string text = "the artifact is compiled for world_size " +
                     std::to_string(manifest.worldSize);
  std::string axes;
  for (size_t i = 0; i < manifest.mesh.axes.size(); ++i)
    axes += (axes.empty() ? "" : ", ") + manifest.mesh.axes[i] + "=" +
            std::to_string(manifest.mesh.shape[i]);
  return text + (axes.empty() ? "" : " (" + axes + ")");
}

/// A rank's coordinates with the dp axis' left out: what decides its program.
std::vector<int> placeBesidesDp(const std::vector<int64_t> &shape, size_t dpAxis, int rank) {
  std::vector<int> coordinates = dist::Mesh::coordinatesOf(shape, rank);
  coordinates.erase(coordinates.begin() + long(dpAxis));
  return coordinates;
}

/// Each program's ranks on the resized mesh: those at its place on the other axes.
void relistPrograms(Manifest &manifest, size_t dpAxis, const std::vector<int64_t> &resized) {
  int worldSize = 1;
  for (int64_t size : resized)
    worldSize *= int(size);
  for (ProgramSpec &program : manifest.programs) {
    std::set<std::vector<int>> places;
    for (int rank : program.ranks)
      places.insert(placeBesidesDp(manifest.mesh.shape, dpAxis, rank));
    if (places.size() != 1)
      throw Error("manifest.json: program '" + program.file +
                  "' is listed for ranks at different places on the mesh's other axes than " +
                  meshaxis::kDataParallel + "; its dp axis cannot be resized");
    program.ranks.clear();
    for (int rank = 0; rank < worldSize; ++rank)
      if (placeBesidesDp(resized, dpAxis, rank) == *places.begin())
        program.ranks.push_back(rank);
  }
}

/// A pipeline cuts each replica's contiguous share of the batch into M contiguous
/// microbatches, and BatchNorm normalises each with its own statistics: with D x M fixed the
/// microbatches are the same samples on any dp size, so the run computes the same.
void keepMicrobatches(Manifest &manifest, int64_t dp, int64_t resized) {
  int64_t &microbatches = manifest.plan.ppMicrobatches;
  if (microbatches <= 0 || dp == resized)
    return;
  if ((microbatches * dp) % resized != 0)
    throw Error("the pipeline's " + std::to_string(microbatches) + " microbatches (" +
                "pp_microbatches) on " + std::to_string(dp) +
                " data-parallel replicas cannot be the same microbatches on " +
                std::to_string(resized) + " replicas: the replicas must divide " +
                std::to_string(microbatches * dp));
  microbatches = microbatches * dp / resized;
}

} // namespace

void resizeDataParallelAxis(Manifest &manifest, int worldSize) {
  if (manifest.worldSize == worldSize)
    return;
  const std::vector<std::string> &axes = manifest.mesh.axes;
  auto dp = std::find(axes.begin(), axes.end(), meshaxis::kDataParallel);
  std::string ranks = std::to_string(worldSize) + (worldSize == 1 ? " rank" : " ranks");
  if (dp == axes.end())
    throw Error(planned(manifest) + " but this run has " + ranks + ", and it has no '" +
                meshaxis::kDataParallel + "' axis to resize (--nproc / WORLD_SIZE must be " +
                std::to_string(manifest.worldSize) + ")");
  size_t dpAxis = size_t(dp - axes.begin());
  int64_t others = 1;
  std::string fixed;
  for (size_t i = 0; i < axes.size(); ++i)
    if (i != dpAxis) {
      others *= manifest.mesh.shape[i];
      fixed += (fixed.empty() ? "" : " x ") + axes[i] + "=" +
               std::to_string(manifest.mesh.shape[i]);
    }
  if (worldSize < 1 || worldSize % others != 0)
    throw Error(planned(manifest) + " but this run has " + ranks + ": only its '" +
                meshaxis::kDataParallel + "' axis can change size, not " + fixed +
                ", so the ranks must be a multiple of " + std::to_string(others));
  std::vector<int64_t> resized = manifest.mesh.shape;
  resized[dpAxis] = worldSize / others;
  keepMicrobatches(manifest, manifest.mesh.shape[dpAxis], resized[dpAxis]);
  relistPrograms(manifest, dpAxis, resized);
  manifest.mesh.shape = resized;
  manifest.worldSize = worldSize;
}

} // namespace snn::runtime
