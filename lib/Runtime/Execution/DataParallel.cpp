//===- DataParallel.cpp - One rank of a data-parallel run -----------------===//

#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/empty.h>

#include <cstring>

namespace snn::runtime {

namespace {

/// FNV-1a over the tensor's bytes (contiguous copy if needed).
uint64_t hashTensor(const at::Tensor &tensor) {
  at::Tensor t = tensor.detach().contiguous();
  const unsigned char *bytes =
      static_cast<const unsigned char *>(t.data_ptr());
  size_t size = size_t(t.numel()) * t.element_size();
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  return h;
}



} // namespace

Artifact loadRunArtifact(const std::string &dir, const std::string &command,
                         const DistributedRun *run) {
  if (!run || !run->world)
    return loadSingleRankArtifact(dir, command);
  int rank = run->world->rank(), size = run->world->size();
  Artifact artifact = loadArtifact(dir, rank);
  const Manifest &manifest = artifact.manifest;
  dist::checkWorldSize(manifest.worldSize, size);
  if (size > 1 && !schema::runsReplicatedProgram(manifest.plan.mode))
    throw Error(dir + ": plan mode '" + schema::nameOf(manifest.plan.mode) +
                "' cannot run on " + std::to_string(size) +
                " ranks in this snn-run yet (the data-parallel family can: "
                "compile with snn-compile --mode dp|zero|fsdp --topology dp=" +
                std::to_string(size) + ")");
  return artifact;
}

DataParallelContext createDataParallel(const DistributedRun &run,
                                       const Manifest &manifest,
                                       bool syncBatchNorm) {
  DataParallelContext context;
  context.syncBatchNorm = syncBatchNorm;
  if (!run.world || run.world->size() == 1) {
    context.group = run.world ? run.world->group() : dist::Group();
    return context;
  }
  dist::Mesh mesh =
      dist::Mesh::create(*run.world, manifest.mesh.axes, manifest.mesh.shape);
  if (!mesh.hasAxis("dp") || mesh.axes().size() != 1)
    throw Error("the artifact's mesh must be one 'dp' axis for data-parallel "
                "training");
  context.group = mesh.group("dp");
  return context;
}

void checkReplicated(const DataParallelContext &dp,
                     const ParameterStore &store) {
  if (!dp.group.valid() || dp.size() == 1)
    return;
  const auto &entries = store.entries();
  at::Tensor hashes = at::empty({int64_t(entries.size())}, at::kLong);
  int64_t *out = hashes.data_ptr<int64_t>();
  for (size_t i = 0; i < entries.size(); ++i) {
    uint64_t h = hashTensor(entries[i].tensor);
    std::memcpy(&out[i], &h, sizeof(h));
  }
  at::Tensor all = dist::allGather(dp.group, hashes)
                       .view({dp.size(), int64_t(entries.size())});
  const int64_t *table = all.data_ptr<int64_t>();
  for (size_t i = 0; i < entries.size(); ++i)
    for (int member = 1; member < dp.size(); ++member)
      if (table[size_t(member) * entries.size() + i] != table[i])
        throw Error("the ranks do not start from the same weights: '" +
                    entries[i].name + "' differs between rank " +
                    std::to_string(dp.group.globalRank(0)) + " and rank " +
                    std::to_string(dp.group.globalRank(member)) +
                    " (every rank must load the same artifact and "
                    "checkpoint)");
}

} // namespace snn::runtime
