//===- ProgramCoordinate.cpp - Whose program a per-rank program is --------===//

#include "snn/Runtime/Execution/ProgramCoordinate.h"
#include "snn/Runtime/Distributed/Mesh.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::runtime {

namespace {

/// "tp=1,pp=0" -> {tp: 1, pp: 0}; false for any other text.
bool parseCoordinate(const std::string &text, std::map<std::string, int64_t> &out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, end - start);
    size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0)
      return false;
    int64_t index = -1;
    const char *first = item.data() + equals + 1, *last = item.data() + item.size();
    auto [ptr, ec] = std::from_chars(first, last, index);
    if (ec != std::errc() || ptr != last || first == last || index < 0 ||
        !out.emplace(item.substr(0, equals), index).second)
      return false;
    start = end + 1;
  }
  return !out.empty();
}

/// The axes a per-rank program must name: the pp axis of a pipeline, the tp
/// axis of partitioned programs.
std::vector<std::string> requiredAxes(const Artifact &artifact) {
  const std::vector<std::string> &mesh = artifact.manifest.mesh.axes;
  std::vector<std::string> axes;
  for (const char *axis : {meshaxis::kPipeline, meshaxis::kTensorParallel}) {
    bool has = std::count(mesh.begin(), mesh.end(), axis) > 0;
    bool perRank = axis == std::string(meshaxis::kPipeline) ? artifact.run.pipeline.has_value()
                                             : artifact.run.partitioned;
    if (has && perRank)
      axes.push_back(axis);
  }
  return axes;
}

/// The rank's coordinate on `axis` of the mesh, or -1 without that axis.
int64_t rankCoordinate(const Manifest &manifest, int rank, const std::string &axis) {
  const std::vector<std::string> &axes = manifest.mesh.axes;
  auto it = std::find(axes.begin(), axes.end(), axis);
  if (it == axes.end())
    return -1;
  return dist::Mesh::coordinatesOf(manifest.mesh.shape, rank)[size_t(it - axes.begin())];
}

std::string programProblem(const Artifact &artifact, const Graph &program, int rank) {
  std::string who = "rank " + std::to_string(rank) + "'s program " + program.file;
  auto it = program.metadata.find(schema::kMeshCoordinateKey);
  if (it == program.metadata.end())
    return who + " has no mesh coordinate (metadata '" + schema::kMeshCoordinateKey +
           "'): it was written by an older snn-compile or by hand; recompile the model";
  std::map<std::string, int64_t> named;
  if (!parseCoordinate(it->second, named))
    return who + " has mesh coordinate '" + it->second + "', not '<axis>=<index>,...'";
  for (const std::string &axis : requiredAxes(artifact)) {
    int64_t mine = rankCoordinate(artifact.manifest, rank, axis);
    auto found = named.find(axis);
    if (found == named.end())
      return who + " has mesh coordinate '" + it->second + "', which does not name its '" +
             axis + "' coordinate";
    if (found->second != mine)
      return who + " is the program of mesh coordinate " + it->second + ", but rank " +
             std::to_string(rank) + " is at " + axis + "=" + std::to_string(mine) +
             " (a program copied or renamed from another rank's?)";
  }
  return "";
}

} // namespace

bool hasPerRankPrograms(const RunDescription &run) {
  return run.partitioned || run.pipeline.has_value();
}

std::string coordinateProblem(const Artifact &artifact, int rank) {
  if (!hasPerRankPrograms(artifact.run))
    return "";
  if (artifact.stages.empty())
    return programProblem(artifact, artifact.program, rank);
  for (const StageProgram &stage : artifact.stages)
    if (std::string problem = programProblem(artifact, stage.program, rank);
        !problem.empty())
      return problem;
  return "";
}

} // namespace snn::runtime
