//===- DataParallel.cpp - One rank of a multi-rank run --------------------===//

#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Execution/RankAgreement.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/MeshAxes.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>

namespace meshaxis = snn::schema::meshaxis;

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

bool isTensorParallelMode(schema::ParallelMode mode) {
  return mode == schema::ParallelMode::TP ||
         mode == schema::ParallelMode::FSDP_TP;
}

bool hasAxis(const Manifest &manifest, const char *axis) {
  const std::vector<std::string> &axes = manifest.mesh.axes;
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

/// Partitioned programs are tp or fsdp_tp, or pp with tensor-parallel stages, over a mesh
/// with a tp axis.
void checkPartitionedPlan(const std::string &dir, const Manifest &manifest) {
  const schema::PlanSpec &plan = manifest.plan;
  std::string mode = schema::nameOf(plan.mode);
  bool tpAxis = hasAxis(manifest, meshaxis::kTensorParallel);
  bool pipeline = plan.mode == schema::ParallelMode::PP;
  if (plan.partitioned && !isTensorParallelMode(plan.mode) && !pipeline)
    throw Error(dir + ": plan mode '" + mode +
                "' with partitioned programs cannot run in this snn-run "
                "(partitioned artifacts of modes tp, fsdp_tp and pp can)");
  if (!plan.partitioned && (isTensorParallelMode(plan.mode) || (pipeline && tpAxis)))
    throw Error(dir + ": plan mode '" + mode +
                "' needs partitioned programs (plan.partitioned true, one "
                "program per tp coordinate); this artifact has one program "
                "for every rank" + (pipeline ? " of a stage" : ""));
  if (plan.partitioned && !tpAxis)
    throw Error(dir + ": plan mode '" + mode + "' needs a mesh axis '" +
                meshaxis::kTensorParallel + "'; the artifact's mesh has none");
}

/// On many ranks, beside pipelines and partitioned artifacts: the data-parallel family on a
/// mesh [dp].
void checkReplicatedPlan(const std::string &dir, const Manifest &manifest, int size) {
  if (size == 1)
    return;
  if (!schema::runsReplicatedProgram(manifest.plan.mode))
    throw Error(dir + ": plan mode '" + schema::nameOf(manifest.plan.mode) +
                "' cannot run on " + std::to_string(size) +
                " ranks in this snn-run yet (the data-parallel family and "
                "partitioned tp and fsdp_tp artifacts can: compile with "
                "snn-compile --mode dp|zero|fsdp --topology dp=" +
                std::to_string(size) + ")");
  if (manifest.mesh.axes != std::vector<std::string>{meshaxis::kDataParallel})
    throw Error(dir + ": the artifact's mesh must be one 'dp' axis for "
                      "data-parallel training");
}

[[noreturn]] void notTheSame(const dist::Group &group, int member,
                             const std::string &what, const std::string &across) {
  throw Error("the ranks do not start from the same weights: " + what +
              " differs between rank " + std::to_string(group.globalRank(0)) +
              " and rank " + std::to_string(group.globalRank(member)) + across +
              " (every rank must load the same artifact and checkpoint)");
}

/// All members' values of `local` (one int64 each), in group-rank order.
at::Tensor gatherInts(const dist::Group &group, const std::vector<int64_t> &local) {
  at::Tensor mine = at::empty({int64_t(local.size())}, at::kLong);
  std::memcpy(mine.data_ptr<int64_t>(), local.data(), local.size() * sizeof(int64_t));
  return dist::allGather(group, mine).view({group.size(), int64_t(local.size())});
}

/// Collective over `group`: throws Error naming the first of `entries`
/// whose hash differs between member 0 and another member (after checking
/// that every member lists as many). `across` says which ranks should agree
/// ("" for the dp group).
void checkSameOnMembers(const dist::Group &group,
                        const std::vector<const ParameterStore::Entry *> &entries,
                        const std::string &across) {
  at::Tensor counts = gatherInts(group, {int64_t(entries.size())});
  for (int member = 1; member < group.size(); ++member)
    if (counts.data_ptr<int64_t>()[member] != counts.data_ptr<int64_t>()[0])
      notTheSame(group, member, "the number of parameters and buffers", across);
  std::vector<int64_t> hashes;
  for (const ParameterStore::Entry *entry : entries) {
    uint64_t h = hashTensor(entry->tensor);
    int64_t value;
    std::memcpy(&value, &h, sizeof(h));
    hashes.push_back(value);
  }
  if (hashes.empty())
    return;
  at::Tensor all = gatherInts(group, hashes);
  const int64_t *table = all.data_ptr<int64_t>();
  const size_t width = hashes.size();
  for (size_t i = 0; i < width; ++i)
    for (int member = 1; member < group.size(); ++member)
      if (table[size_t(member) * width + i] != table[i])
        notTheSame(group, member, "'" + entries[i]->name + "'", across);
}

} // namespace

bool isPartitioned(const Manifest &manifest) {
  return manifest.plan.partitioned;
}

int64_t dataParallelSize(const Manifest &manifest) {
  const schema::MeshSpec &mesh = manifest.mesh;
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    if (mesh.axes[i] == meshaxis::kDataParallel)
      return mesh.shape[i];
  // Without a dp axis every rank of a tp or pp mesh reads the whole batch.
  return isPartitioned(manifest) || isPipeline(manifest) ? 1 : manifest.worldSize;
}

Artifact loadRunArtifact(const std::string &dir, const std::string &command,
                         const DistributedRun *run) {
  const bool manyRanks = run && run->world;
  Artifact artifact = manyRanks ? loadArtifact(dir, run->world->rank(), run->world->size())
                                : loadSingleRankArtifact(dir, command);
  const Manifest &manifest = artifact.manifest;
  if (manyRanks)
    dist::checkWorldSize(manifest.worldSize, run->world->size());
  if (manyRanks || isPartitioned(manifest))
    checkPartitionedPlan(dir, manifest);
  RunDescription &description = artifact.run;
  description.partitioned = isPartitioned(manifest);
  if (isPipeline(manifest) || manifest.stageCount() > 0)
    description.pipeline = readPipelineLayout(dir, manifest);
  else if (manyRanks && !description.partitioned)
    checkReplicatedPlan(dir, manifest, run->world->size());
  description.dataParallelSize = dataParallelSize(manifest);
  if (manyRanks)
    checkRanksAgree(artifact, *run->world);
  return artifact;
}

MeshContext createRunMesh(const DistributedRun *run, const Manifest &manifest) {
  return MeshContext::create(run ? run->world.get() : nullptr, manifest.mesh);
}

DataParallelContext createDataParallel(const MeshContext &mesh,
                                       bool syncBatchNorm) {
  DataParallelContext context;
  context.syncBatchNorm = syncBatchNorm;
  if (mesh.hasAxis(meshaxis::kDataParallel) && mesh.axisSize(meshaxis::kDataParallel) > 1)
    context.group = mesh.group(meshaxis::kDataParallel);
  return context;
}

void checkReplicated(const DataParallelContext &dp,
                     const ParameterStore &store) {
  if (!dp.group.valid() || dp.size() == 1)
    return;
  std::vector<const ParameterStore::Entry *> entries;
  for (const ParameterStore::Entry &entry : store.entries())
    entries.push_back(&entry);
  checkSameOnMembers(dp.group, entries, "");
}

void checkReplicatedOverMesh(const MeshContext &mesh,
                             const ParameterPartition &partition,
                             const ParameterStore &store) {
  for (const std::string &axis : mesh.axes()) {
    // A pipeline's ranks hold different stages: nothing is replicated
    // over its pp axis.
    if (axis == meshaxis::kDataParallel || axis == meshaxis::kPipeline || mesh.axisSize(axis) == 1)
      continue;
    std::vector<const ParameterStore::Entry *> entries;
    for (const ParameterStore::Entry &entry : store.entries()) {
      const ParameterSpec *split = partition.splitOf(entry.name);
      if (!split || split->meshAxis != axis)
        entries.push_back(&entry);
    }
    checkSameOnMembers(mesh.group(axis), entries,
                       " of mesh axis '" + axis + "', where it is replicated");
  }
}

} // namespace snn::runtime
