//===- Artifact.cpp - Load an artifact directory for one rank -------------===//

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallelResize.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Execution/OnnxLoader.h"
#include "snn/Runtime/Execution/ProgramParameters.h"
#include "snn/Runtime/Execution/StageInterface.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"

#include <algorithm>
#include <filesystem>

namespace snn::runtime {

namespace fs = std::filesystem;

namespace {

std::string manifestPathOf(const std::string &dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw Error("artifact directory '" + dir + "' does not exist");
  if (!fs::is_directory(dir, ec))
    throw Error("'" + dir + "' is not an artifact directory");
  fs::path manifest = fs::path(dir) / "manifest.json";
  if (!fs::exists(manifest, ec))
    throw Error("'" + dir + "' is not an artifact: it has no manifest.json");
  return fileInside(dir, "manifest.json");
}

/// The manifest's boundary tensors must be the program's graph input and
/// output: a mismatch means the manifest belongs to another program.
void checkBoundary(const Manifest &manifest, const Graph &program) {
  const std::vector<std::string> &inputs = program.inputs;
  if (std::find(inputs.begin(), inputs.end(), manifest.input.name) ==
      inputs.end())
    throw Error(program.file + ": graph has no input '" + manifest.input.name +
                "' (named by manifest.json)");
  if (inputs.size() != 1)
    throw Error(program.file + ": graph has " + std::to_string(inputs.size()) +
                " inputs; snn-run feeds exactly one ('" + manifest.input.name +
                "')");
  const std::vector<std::string> &outputs = program.outputs;
  if (std::find(outputs.begin(), outputs.end(), manifest.output.name) ==
      outputs.end())
    throw Error(program.file + ": graph has no output '" +
                manifest.output.name + "' (named by manifest.json)");
}

/// Members of the mesh axis `axis` (0 when the mesh lacks it; the manifest
/// reader has refused a split over such an axis).
int64_t meshAxisSize(const Manifest &manifest, const std::string &axis) {
  const schema::MeshSpec &mesh = manifest.mesh;
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    if (mesh.axes[i] == axis)
      return mesh.shape[i];
  return 0;
}

/// A replicated parameter has its full shape in every program that holds it;
/// a split one the shape of one part (the runtime's shard-size check).
void checkParameters(const Manifest &manifest, const Graph &program) {
  for (const ParameterSpec &parameter : manifest.parameters) {
    auto it = program.initializers.find(parameter.name);
    if (it == program.initializers.end())
      continue;
    if (!parameter.isSplit()) {
      if (it->second.sizes() != at::IntArrayRef(parameter.shape))
        throw Error(program.file + ": initializer '" + parameter.name +
                    "' has shape " + formatShape(it->second.sizes()) +
                    ", manifest.json says " + formatShape(parameter.shape));
      continue;
    }
    int64_t parts = meshAxisSize(manifest, parameter.meshAxis);
    std::vector<int64_t> local = parameter.localShape(parts);
    if (it->second.sizes() != at::IntArrayRef(local))
      throw Error(program.file + ": initializer '" + parameter.name +
                  "' has shape " + formatShape(it->second.sizes()) +
                  ", but manifest.json splits its shape " +
                  formatShape(parameter.shape) + " along dimension " +
                  std::to_string(parameter.splitDim) + " over the " +
                  std::to_string(parts) + " members of mesh axis '" +
                  parameter.meshAxis + "', so each program holds " +
                  formatShape(local));
  }
}

/// Every collective runs over an axis of the artifact's mesh.
void checkCollectives(const Manifest &manifest, const Graph &program) {
  for (const Node &node : program.nodes) {
    auto it = node.attributes.find(schema::attr::kMeshAxis);
    if (it == node.attributes.end() ||
        it->second.kind != Attribute::Kind::String)
      continue; // the op's builder reports a missing or mistyped one
    const std::string &axis = it->second.s;
    const std::vector<std::string> &axes = manifest.mesh.axes;
    if (std::find(axes.begin(), axes.end(), axis) != axes.end())
      continue;
    std::string known;
    for (const std::string &name : axes)
      known += (known.empty() ? "" : ", ") + name;
    throw Error(program.file + ": " + node.describe() + ": mesh axis '" +
                axis + "' is not an axis of the artifact's mesh (axes: " +
                (known.empty() ? "none" : known) + ")");
  }
}

/// A stage program: its recv/send boundary, and parameters of another
/// stage are not in it (the manifest names the stage of each).
void checkStage(const Manifest &manifest, const StageProgram &stage) {
  readStageInterface(stage.program, stage.stage, manifest.stageCount(),
                     manifest.input.name, manifest.output.name);
  for (const ParameterSpec &parameter : manifest.parameters)
    if (parameter.stage != stage.stage &&
        stage.program.initializers.count(parameter.name))
      throw Error(stage.program.file + ": initializer '" + parameter.name +
                  "' belongs to pipeline stage " + std::to_string(parameter.stage) +
                  " (manifest.json), not to stage " + std::to_string(stage.stage));
}

StageProgram loadStage(const Artifact &artifact, const ProgramSpec &spec) {
  StageProgram stage{spec.stage, loadOnnxProgram(fileInside(artifact.dir, spec.file))};
  checkStage(artifact.manifest, stage);
  checkProgramParameters(artifact.manifest, stage.program, stage.stage);
  checkParameters(artifact.manifest, stage.program);
  checkCollectives(artifact.manifest, stage.program);
  return stage;
}

} // namespace

Artifact loadArtifact(const std::string &dir, int rank, int worldSize) {
  Artifact artifact;
  artifact.dir = dir;
  std::string manifestPath = manifestPathOf(dir);
  artifact.manifest = readManifest(manifestPath);
  artifact.run.plannedWorldSize = artifact.manifest.worldSize;
  if (worldSize > 0) {
    try {
      resizeDataParallelAxis(artifact.manifest, worldSize);
    } catch (const Error &e) {
      throw Error(dir + ": " + e.what());
    }
  }
  std::vector<const ProgramSpec *> specs;
  try {
    specs = artifact.manifest.programsForRank(rank);
  } catch (const schema::ManifestError &) {
    throw Error(manifestPath + ": no program for rank " + std::to_string(rank));
  }
  if (specs.front()->stage >= 0) {
    for (const ProgramSpec *spec : specs)
      artifact.stages.push_back(loadStage(artifact, *spec));
    artifact.program = artifact.stages.front().program;
    return artifact;
  }
  artifact.program = loadOnnxProgram(fileInside(dir, specs.front()->file));
  checkBoundary(artifact.manifest, artifact.program);
  checkProgramParameters(artifact.manifest, artifact.program, -1);
  checkParameters(artifact.manifest, artifact.program);
  checkCollectives(artifact.manifest, artifact.program);
  return artifact;
}

Artifact loadSingleRankArtifact(const std::string &dir,
                                const std::string &command) {
  Artifact artifact = loadArtifact(dir);
  if (artifact.manifest.worldSize != 1)
    throw Error(dir + ": artifact is partitioned for " +
                std::to_string(artifact.manifest.worldSize) +
                " ranks; 'snn-run " + command +
                "' runs single-rank artifacts in one process (start it with "
                "'snn-run --nproc " + std::to_string(artifact.manifest.worldSize) +
                " " + command + " ...' or torchrun)");
  return artifact;
}

std::vector<StageProgram> loadAllStages(const Artifact &artifact) {
  std::vector<const ProgramSpec *> specs;
  for (const ProgramSpec &spec : artifact.manifest.programs)
    specs.push_back(&spec);
  std::sort(specs.begin(), specs.end(), [](const ProgramSpec *a, const ProgramSpec *b) {
    return a->stage < b->stage;
  });
  std::vector<StageProgram> stages;
  for (const ProgramSpec *spec : specs) {
    if (spec->stage < 0)
      throw Error(artifact.dir + ": not a pipeline artifact (its programs have no stage)");
    stages.push_back(loadStage(artifact, *spec));
  }
  return stages;
}

} // namespace snn::runtime
