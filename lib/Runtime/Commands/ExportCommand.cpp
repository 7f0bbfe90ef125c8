//===- ExportCommand.cpp - The `snn-run export` command -------------------===//

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Commands/ExportCommand.h"
#include "snn/Runtime/Checkpoint/OnnxExport.h"

#include <filesystem>
#include <iostream>

namespace snn::runtime {

void runExport(const ExportOptions &options) {
  if (options.checkpointDir.empty() == options.paramsDir.empty())
    throw Error("export needs exactly one of --checkpoint DIR and --params DIR");
  checkParentDirectory(options.outputPath, "--output");
  // Any rank's program holds every initializer of the data-parallel family.
  Artifact artifact = loadArtifact(options.artifactDir, 0);
  ParameterStore store(artifact.manifest, artifact.program);
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
