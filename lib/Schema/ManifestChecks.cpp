//===- ManifestChecks.cpp - A parsed manifest's fields against its plan ---===//
//
// The reader (Manifest.cpp) checks each field's type and what one field alone can say; these
// checks need the whole manifest. Each names the field as a path ("plan.tp_mesh_dim",
// "parameters[3].stage") and its value, so the one line says what to fix.
//
//===----------------------------------------------------------------------===//
#include "ManifestChecks.h"
#include "ManifestKeys.h"

#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>

namespace snn::schema {

namespace {

[[noreturn]] void fail(const std::string &name, const std::string &field,
                       const std::string &message) {
  throw ManifestError(name + ": '" + field + "' " + message);
}

std::string listText(const std::vector<std::string> &items) {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : ", ") + item;
  return "[" + text + "]";
}

std::string listText(const std::vector<int64_t> &items) {
  std::vector<std::string> texts;
  for (int64_t item : items)
    texts.push_back(std::to_string(item));
  return listText(texts);
}

std::string modeText(const PlanSpec &plan) {
  return std::string("plan mode '") + nameOf(plan.mode) + "'";
}

/// A role's mesh dimension is -1 (no such axis) or the index of the axis named after the
/// role: the runtime finds its groups by axis name, so a dimension pointing elsewhere means
/// the plan and the mesh disagree.
void checkMeshDim(const std::string &name, const MeshSpec &mesh, const char *key,
                  const std::string &role, int64_t dim) {
  if (dim == -1)
    return;
  std::string field = std::string(key::kPlan) + "." + key;
  std::string value = "is " + std::to_string(dim);
  if (dim < 0 || dim >= int64_t(mesh.axes.size()))
    fail(name, field,
         value + ", outside the mesh " + listText(mesh.axes) + ": it must be -1 (no " + role +
             " axis) or the index of the mesh's '" + role + "' axis");
  if (mesh.axes[size_t(dim)] != role)
    fail(name, field,
         value + ", the mesh's '" + mesh.axes[size_t(dim)] + "' axis, not a '" + role +
             "' axis (mesh " + listText(mesh.axes) + ")");
}

void checkNotNegative(const std::string &name, const char *key, int64_t value) {
  if (value < 0)
    fail(name, std::string(key::kPlan) + "." + key,
         "is " + std::to_string(value) + ": it must be 0 or more");
}

/// Only a pipeline has microbatches, virtual stages, a schedule and stage lists. Any other
/// mode ignores them, so a value there means the plan is not the one the artifact says.
void checkNoPipelineFields(const std::string &name, const PlanSpec &plan) {
  if (plan.mode == ParallelMode::PP)
    return;
  auto refuse = [&](const char *key, const std::string &value) {
    fail(name, std::string(key::kPlan) + "." + key,
         "is " + value + ", but " + modeText(plan) + " has no pipeline (only mode pp has one)");
  };
  using namespace plankey;
  if (plan.ppMicrobatches != 0)
    refuse(kMicrobatches, std::to_string(plan.ppMicrobatches));
  if (plan.ppVirtualStages != 0)
    refuse(kVirtualStages, std::to_string(plan.ppVirtualStages));
  if (plan.ppSchedule)
    refuse(kSchedule, std::string("'") + nameOf(*plan.ppSchedule) + "'");
  if (!plan.ppLayout.empty())
    refuse(kLayout, listText(plan.ppLayout));
  if (!plan.ppMemoptStages.empty())
    refuse(kMemoptStages, listText(plan.ppMemoptStages));
  if (!plan.ppStageUnits.empty())
    refuse(kStageUnits, std::to_string(plan.ppStageUnits.size()) + " lists");
  if (plan.ppDelayWgrad)
    refuse(kDelayWgrad, "true");
}

/// A pipeline's per-stage lists have one entry per logical stage (empty: not recorded).
void checkStageLists(const std::string &name, const Manifest &manifest) {
  if (manifest.plan.mode != ParallelMode::PP)
    return;
  int64_t stages = manifest.stageCount();
  auto check = [&](const char *key, size_t entries) {
    if (entries != 0 && int64_t(entries) != stages)
      fail(name, std::string(key::kPlan) + "." + key,
           "has " + std::to_string(entries) + " entries, but the artifact has " +
               std::to_string(stages) + " pipeline stages (its programs' 'stage')");
  };
  check(plankey::kLayout, manifest.plan.ppLayout.size());
  check(plankey::kStageUnits, manifest.plan.ppStageUnits.size());
}

void checkPlan(const std::string &name, const Manifest &manifest) {
  const PlanSpec &plan = manifest.plan;
  checkMeshDim(name, manifest.mesh, plankey::kDpMeshDim, meshaxis::kDataParallel, plan.dpMeshDim);
  checkMeshDim(name, manifest.mesh, plankey::kTpMeshDim, meshaxis::kTensorParallel, plan.tpMeshDim);
  checkMeshDim(name, manifest.mesh, plankey::kPpMeshDim, meshaxis::kPipeline, plan.ppMeshDim);
  checkNotNegative(name, plankey::kMemoptLevel, plan.memoptLevel);
  checkNotNegative(name, plankey::kMicrobatches, plan.ppMicrobatches);
  checkNotNegative(name, plankey::kVirtualStages, plan.ppVirtualStages);
  checkNoPipelineFields(name, plan);
  checkStageLists(name, manifest);
}

/// Every counted collective is one the programs can hold, over an axis of the mesh.
void checkCommunication(const std::string &name, const Manifest &manifest) {
  const std::vector<CommunicationVolume> &volumes = manifest.plan.communication;
  const std::vector<std::string> &axes = manifest.mesh.axes;
  for (size_t i = 0; i < volumes.size(); ++i) {
    std::string field = std::string(key::kPlan) + "." + plankey::kCommunication + "[" +
                        std::to_string(i) + "].";
    if (volumes[i].kind != op::kAllReduce && volumes[i].kind != op::kAllGather)
      fail(name, field + key::kKind,
           "is '" + volumes[i].kind + "': it must be '" + op::kAllReduce + "' or '" +
               op::kAllGather + "'");
    if (std::find(axes.begin(), axes.end(), volumes[i].meshAxis) == axes.end())
      fail(name, field + key::kMeshAxis,
           "is '" + volumes[i].meshAxis + "', not an axis of the mesh " + listText(axes));
  }
}

/// Programs have a stage only in a pipeline.
void checkProgramStages(const std::string &name, const Manifest &manifest) {
  if (manifest.plan.mode == ParallelMode::PP)
    return;
  for (size_t i = 0; i < manifest.programs.size(); ++i)
    if (manifest.programs[i].stage >= 0)
      fail(name, std::string(key::kPrograms) + "[" + std::to_string(i) + "]." + key::kStage,
           "is " + std::to_string(manifest.programs[i].stage) + ", but " +
               modeText(manifest.plan) + " has no pipeline stages");
}

/// How one parameter is placed: a stage only in a pipeline; a split only in partitioned
/// programs, over the tp axis (the only axis the compiler partitions over), in one block or
/// in the three blocks (q, k, v) of a fused attention projection's output channels.
void checkParameter(const std::string &name, const Manifest &manifest, size_t index) {
  const ParameterSpec &p = manifest.parameters[index];
  const PlanSpec &plan = manifest.plan;
  std::string field = std::string(key::kParameters) + "[" + std::to_string(index) + "].";
  std::string of = " on parameter '" + p.name + "'";
  if (p.stage >= 0 && plan.mode != ParallelMode::PP)
    fail(name, field + key::kStage,
         "is " + std::to_string(p.stage) + of + ", but " + modeText(plan) +
             " has no pipeline stages");
  if (!p.isSplit())
    return;
  if (!plan.partitioned)
    fail(name, field + key::kSharding,
         std::string("is \"") + kSplit + "\"" + of + ", but the programs of " + modeText(plan) +
             " are not partitioned (plan.partitioned is false): every rank holds it whole");
  if (p.meshAxis != meshaxis::kTensorParallel)
    fail(name, field + key::kMeshAxis,
         "is '" + p.meshAxis + "'" + of + ": partitioned programs split parameters over 'tp'");
  if (p.splitGroups != 1 && p.splitGroups != kFusedProjectionBlocks)
    fail(name, field + key::kSplitGroups,
         "is " + std::to_string(p.splitGroups) + of + ": a split dimension holds 1 block or " +
             std::to_string(kFusedProjectionBlocks) +
             " (the q, k and v of a fused attention projection)");
  if (p.splitGroups > 1 && p.splitDim != 0)
    fail(name, field + key::kSplitGroups,
         "is " + std::to_string(p.splitGroups) + of + " split along dimension " +
             std::to_string(p.splitDim) +
             ": q, k and v blocks lie along dimension 0 (the projection's output channels)");
}

} // namespace

void checkManifestAgainstPlan(const Manifest &manifest, const std::string &name) {
  checkPlan(name, manifest);
  checkCommunication(name, manifest);
  checkProgramStages(name, manifest);
  for (size_t i = 0; i < manifest.parameters.size(); ++i)
    checkParameter(name, manifest, i);
}

} // namespace snn::schema
