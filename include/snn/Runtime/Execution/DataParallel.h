//===- DataParallel.h - One rank of a data-parallel run ---------*- C++ -*-===//
//
// `snn-run --nproc N train DIR` (or torchrun) on an artifact of the dp plan:
// every rank runs the same program on its slice of the global batch
// (docs/distributed.md, "Data-parallel training"). This header has what the
// commands share: loading the artifact for the run's world, the rank's dp
// group, and the check that every rank starts from the same parameters.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_DATAPARALLEL_H
#define SNN_RUNTIME_EXECUTION_DATAPARALLEL_H

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Distributed/ProcessGroups.h"
#include "snn/Runtime/Execution/ParameterStore.h"

#include <memory>
#include <string>

namespace snn::runtime {

/// This rank's place in data-parallel training (RunContext, Model).
struct DataParallelContext {
  /// The dp axis' group of this rank.
  dist::Group group;
  /// SyncBatchNorm over the group (off: --no-sync-bn, each rank normalises
  /// with its own shard's statistics, as PyTorch's plain BatchNorm under DDP).
  bool syncBatchNorm = true;

  int rank() const { return group.rank(); }
  int size() const { return group.size(); }
};

/// The process's multi-rank run (created by snn-run's main on every rank of
/// `--nproc N` or torchrun); null in one process.
struct DistributedRun {
  std::shared_ptr<dist::World> world;
};

/// The artifact `command` runs in this process. Without a run: a single-rank
/// artifact (world_size 1). With one: an artifact compiled for the run's
/// world size (checkWorldSize's message otherwise) whose plan this runtime
/// can run on many ranks (the data-parallel family: dp, dp + zero).
Artifact loadRunArtifact(const std::string &dir, const std::string &command,
                         const DistributedRun *run);

/// The dp group of the artifact's mesh (collective: every rank creates every
/// group of the mesh). For a world of one, an invalid group (size 1 is then
/// reported by size()).
DataParallelContext createDataParallel(const DistributedRun &run,
                                       const Manifest &manifest,
                                       bool syncBatchNorm);

/// Collective over the dp group: throws Error naming the first parameter or
/// buffer (manifest order) whose bytes differ between rank 0 and another
/// rank. A 64-bit hash of each tensor is all-gathered.
void checkReplicated(const DataParallelContext &dp,
                     const ParameterStore &store);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_DATAPARALLEL_H
