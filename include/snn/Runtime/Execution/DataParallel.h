//===- DataParallel.h - One rank of a multi-rank run ------------*- C++ -*-===//
//
// `snn-run --nproc N train DIR` (or torchrun). On an artifact of the
// data-parallel family (dp, dp + zero, fsdp) every rank runs the same program
// on its slice of the global batch (docs/distributed.md, "Data-parallel
// training"). On a partitioned artifact (tp, fsdp_tp) the rank runs the
// program of its tp coordinate, and the ranks that share it form the dp
// group that splits the batch ("Tensor-parallel runs"). This header has what
// the commands share: loading the artifact for the run's world, the rank's
// dp group, and the checks that every rank starts from the same parameters.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_DATAPARALLEL_H
#define SNN_RUNTIME_EXECUTION_DATAPARALLEL_H

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/World.h"
// For lib/Runtime/Commands/TrainCommand.cpp, which takes dist::blockedSeconds
// from here; other code includes Work.h itself.
#include "snn/Runtime/Distributed/Work.h"
#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Execution/ParameterPartition.h"
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
/// can run on many ranks: the data-parallel family (dp, dp + zero, fsdp: one
/// program, mesh [dp]) or a partitioned tp / fsdp_tp artifact (this rank's
/// program; the mesh must have a `tp` axis). Either way a partitioned
/// artifact must be of mode tp or fsdp_tp. With per-rank programs (tp,
/// fsdp_tp, pp) the ranks then agree on them before any other collective
/// (checkRanksAgree, RankAgreement.h): collective over the world.
Artifact loadRunArtifact(const std::string &dir, const std::string &command,
                         const DistributedRun *run);

/// Whether the artifact's programs are per-rank partitions (tp, fsdp_tp).
bool isPartitioned(const Manifest &manifest);

/// The ranks that split a global batch: the size of the mesh's `dp` axis;
/// without one, 1 for a partitioned or pipeline artifact (every rank reads
/// the whole batch) and the world size for the others.
int64_t dataParallelSize(const Manifest &manifest);

/// The run's mesh (MeshContext::create; collective with a world of several
/// ranks).
MeshContext createRunMesh(const DistributedRun *run, const Manifest &manifest);

/// The dp group of the mesh: its `dp` axis' group when that axis has more
/// than one member; otherwise an invalid group (no data parallelism: one
/// process, or a mesh [tp] whose ranks all read the whole batch).
DataParallelContext createDataParallel(const MeshContext &mesh,
                                       bool syncBatchNorm);

/// Collective over the dp group: throws Error naming the first parameter or
/// buffer (manifest order) whose bytes differ between rank 0 and another
/// rank. A 64-bit hash of each tensor is all-gathered.
void checkReplicated(const DataParallelContext &dp,
                     const ParameterStore &store);

/// Collective over every mesh axis other than `dp` with more than one
/// member (tensor parallelism): the parameters and buffers not split over
/// that axis must be identical on its members; throws Error naming the first
/// that differs. Nothing to do for a mesh without such an axis.
void checkReplicatedOverMesh(const MeshContext &mesh,
                             const ParameterPartition &partition,
                             const ParameterStore &store);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_DATAPARALLEL_H
