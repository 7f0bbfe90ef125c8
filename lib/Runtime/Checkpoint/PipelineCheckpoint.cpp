//===- PipelineCheckpoint.cpp - Whole checkpoints of pipeline runs --------===//

#include "snn/Runtime/Checkpoint/PipelineCheckpoint.h"
#include "snn/Runtime/Checkpoint/PartitionedCheckpoint.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/empty.h>

#include <map>

namespace snn::runtime {

namespace {

/// The manifest's model as a store of uninitialised tensors of the right
/// shapes: what a whole checkpoint must match.
ParameterStore manifestShapes(const Manifest &manifest) {
  std::vector<ParameterStore::Entry> entries;
  for (const ParameterSpec &spec : manifest.parameters)
    entries.push_back({spec.name, spec.kind, at::empty(spec.shape, at::kFloat)});
  return ParameterStore(std::move(entries));
}

/// Model entries in manifest order with their kinds; optimizer state of the
/// parameters only (the merge gives every listed name an entry).
void putInManifestOrder(CheckpointState &state, const Manifest &manifest) {
  std::map<std::string, at::Tensor> values;
  for (CheckpointTensor &entry : state.model)
    values[entry.name] = entry.value;
  std::map<std::string, CheckpointOptimizerEntry> optimizer;
  for (CheckpointOptimizerEntry &entry : state.optimizerState)
    optimizer[entry.param] = std::move(entry);
  state.model.clear();
  state.optimizerState.clear();
  for (const ParameterSpec &spec : manifest.parameters) {
    auto value = values.find(spec.name);
    if (value == values.end())
      throw Error("pipeline checkpoint: no stage holds '" + spec.name + "'");
    state.model.push_back({spec.name, schema::parameterKindName(spec.kind), value->second});
    auto found = optimizer.find(spec.name);
    if (spec.kind == ParameterKind::Parameter && found != optimizer.end())
      state.optimizerState.push_back(std::move(found->second));
  }
}

} // namespace

void gatherPipelineCheckpoint(CheckpointState &state, const Manifest &manifest,
                              const dist::Group *group) {
  if (group && group->valid() && group->size() > 1) {
    // Each rank's entries are pieces at offset 0 of tensors the others lack.
    for (CheckpointTensor &entry : state.model) {
      entry.offset = 0;
      entry.fullShape = entry.value.sizes().vec();
    }
    std::vector<ParameterShape> all;
    for (const ParameterSpec &spec : manifest.parameters)
      all.emplace_back(spec.name, spec.shape);
    mergePiecesOverGroup(state, all, *group);
  }
  putInManifestOrder(state, manifest);
}

CheckpointState pipelineLocalCheckpoint(const CheckpointState &whole,
                                        const ParameterStore &store,
                                        const Manifest &manifest,
                                        const std::string &where) {
  checkSameModel(whole, manifestShapes(manifest), where);
  CheckpointState local = whole;
  local.model.clear();
  for (const CheckpointTensor &entry : whole.model)
    if (store.contains(entry.name))
      local.model.push_back(entry);
  local.optimizerState.clear();
  for (const CheckpointOptimizerEntry &entry : whole.optimizerState)
    if (store.contains(entry.param))
      local.optimizerState.push_back(entry);
  return local;
}

ParameterStore gatherPipelineStore(const ParameterStore &local, const Manifest &manifest,
                                   const dist::Group *group) {
  CheckpointState state;
  captureModel(local, state);
  gatherPipelineCheckpoint(state, manifest, group);
  std::vector<ParameterStore::Entry> entries;
  for (size_t i = 0; i < state.model.size(); ++i)
    entries.push_back({state.model[i].name, manifest.parameters[i].kind, state.model[i].value});
  return ParameterStore(std::move(entries));
}

} // namespace snn::runtime
