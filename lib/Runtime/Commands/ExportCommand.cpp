//===- ExportCommand.cpp - The `snn-run export` command -------------------===//

#include "snn/Runtime/Commands/ExportCommand.h"
#include "snn/Runtime/Checkpoint/NirExport.h"
#include "snn/Runtime/Checkpoint/OnnxExport.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/zeros.h>

#include <filesystem>
#include <iostream>

namespace snn::runtime {

namespace {

/// The store of the whole model: the manifest's shape for every parameter
/// and buffer the program holds (a split one's value is zeros until the
/// trained weights replace it).
ParameterStore wholeModelStore(const Manifest &manifest, const Graph &program) {
  std::vector<ParameterStore::Entry> entries;
  for (const ParameterSpec &spec : manifest.parameters) {
    auto it = program.initializers.find(spec.name);
    if (it == program.initializers.end())
      continue;
    at::Tensor value =
        spec.isSplit() ? at::zeros(spec.shape, at::kFloat) : it->second.clone();
    entries.push_back({spec.name, spec.kind, value});
  }
  return ParameterStore(std::move(entries));
}

/// A pipeline artifact: every stage's parameters take the (whole) trained
/// weights, and the stage programs are joined into one program.
void exportPipeline(const Artifact &artifact, const ExportOptions &options) {
  const Manifest &manifest = artifact.manifest;
  std::vector<StageProgram> stages = loadAllStages(artifact);
  std::vector<const Graph *> programs;
  for (const StageProgram &stage : stages)
    programs.push_back(&stage.program);
  ParameterStore store(manifest, programs);
  std::string source = loadTrainedWeights(options.paramsDir, options.checkpointDir, store);
  exportTrainedPipelineOnnx(stageProgramPaths(artifact.dir, manifest), manifest.input.name,
                            manifest.output.name, store, options.outputPath);
  std::cerr << "snn-run: wrote " << options.outputPath << " (the " << stages.size()
            << " pipeline stages joined; weights of '" << source << "')" << std::endl;
}

/// One program of the whole model (none or the data-parallel family) as a NIR graph.
void exportNir(const Artifact &artifact, const ExportOptions &options) {
  if (isPipeline(artifact.manifest) || isPartitioned(artifact.manifest))
    throw Error("--format nir: the artifact is split into " +
                std::string(isPipeline(artifact.manifest) ? "pipeline stages" : "tp parts") +
                "; export its weights from an artifact of the whole model (compiled without "
                "a plan or with dp, zero or fsdp), or as ONNX");
  ParameterStore store(artifact.manifest, artifact.program);
  std::string source = loadTrainedWeights(options.paramsDir, options.checkpointDir, store);
  exportTrainedNir(artifact.program, store, options.nirDt, options.outputPath);
  std::cerr << "snn-run: wrote " << options.outputPath << " (NIR, dt " << options.nirDt
            << "; weights of '" << source << "')" << std::endl;
}

} // namespace

void runExport(const ExportOptions &options) {
  if (options.checkpointDir.empty() == options.paramsDir.empty())
    throw Error("export needs exactly one of --checkpoint DIR and --params DIR");
  checkParentDirectory(options.outputPath, "--output");
  // Any rank's program holds every initializer of the data-parallel family;
  // a partitioned artifact's programs hold a part of each split one, and
  // the exported initializers are the whole trained tensors.
  Artifact artifact = loadArtifact(options.artifactDir, 0);
  if (options.format == "nir") {
    exportNir(artifact, options);
    return;
  }
  if (isPipeline(artifact.manifest)) {
    exportPipeline(artifact, options);
    return;
  }
  ParameterStore store = isPartitioned(artifact.manifest)
                             ? wholeModelStore(artifact.manifest, artifact.program)
                             : ParameterStore(artifact.manifest, artifact.program);
  std::string source =
      loadTrainedWeights(options.paramsDir, options.checkpointDir, store);
  std::string program = (std::filesystem::path(artifact.dir) /
                         artifact.manifest.programForRank(0).file)
                            .string();
  exportTrainedOnnx(program, store, options.outputPath);
  std::cerr << "snn-run: wrote " << options.outputPath << " (weights of '"
            << source << "')" << std::endl;
}

} // namespace snn::runtime
