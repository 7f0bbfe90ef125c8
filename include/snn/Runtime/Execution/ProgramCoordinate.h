//===- ProgramCoordinate.h - Whose program a per-rank program is -*- C++ -*-===//
//
// The compiler writes into each per-rank program (one per tp coordinate, one
// per pipeline stage) the mesh coordinate of the ranks that run it
// (schema::kMeshCoordinateKey, "tp=1", "pp=0,tp=1"). A rank checks it
// against its own place in the mesh, so that a program copied or renamed
// from another rank's is refused instead of running wrong.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_PROGRAMCOORDINATE_H
#define SNN_RUNTIME_EXECUTION_PROGRAMCOORDINATE_H

#include "snn/Runtime/Execution/Artifact.h"

#include <string>

namespace snn::runtime {

/// Whether the run's programs are per rank (partitioned, or pipeline stages)
/// and so carry a mesh coordinate.
bool hasPerRankPrograms(const RunDescription &run);

/// What is wrong with the coordinates of the programs `rank` loaded, as a
/// sentence naming the rank and the file; "" when each program names the
/// rank's coordinate on its tp and pp axes. A program without the metadata
/// (an older compiler's) is refused with a request to recompile. Reads
/// `artifact.run` (loadRunArtifact fills it).
std::string coordinateProblem(const Artifact &artifact, int rank);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_PROGRAMCOORDINATE_H
