//===- Artifact.h - An artifact directory loaded for one rank ---*- C++ -*-===//
#ifndef SNN_RUNTIME_EXECUTION_ARTIFACT_H
#define SNN_RUNTIME_EXECUTION_ARTIFACT_H

#include "snn/Runtime/Execution/Graph.h"
#include "snn/Runtime/Execution/Manifest.h"

#include <string>

namespace snn::runtime {

struct Artifact {
  std::string dir;
  Manifest manifest;
  /// The program of the rank the artifact was loaded for.
  Graph program;
};

/// Loads DIR/manifest.json and the program that `rank` runs, and checks that
/// they agree: boundary names, parameter shapes (a replicated parameter's
/// whole shape, a split one's part: ParameterSpec::localShape) and the mesh
/// axes of the collectives.
Artifact loadArtifact(const std::string &dir, int rank = 0);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_ARTIFACT_H
