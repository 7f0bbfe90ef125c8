//===- TrainCheckpoint.cpp - A model and optimizer in a checkpoint --------===//

#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/core/grad_mode.h>

#include <map>

namespace snn::runtime {

namespace {

[[noreturn]] void differentModel(const std::string &where,
                                 const std::string &what) {
  throw Error("checkpoint '" + where + "' is from a different model: " + what);
}

void checkEntry(const CheckpointTensor &saved,
                const ParameterStore::Entry &live, const std::string &where) {
  if (saved.kind != schema::parameterKindName(live.kind))
    differentModel(where, "'" + saved.name + "' is a " + saved.kind +
                              " there and a " + schema::parameterKindName(live.kind) + " here");
  if (saved.value.sizes() != live.tensor.sizes())
    differentModel(where, saved.kind + " '" + saved.name + "' has shape " +
                              formatShape(saved.value.sizes()) + " there and " +
                              formatShape(live.tensor.sizes()) + " here");
}

} // namespace

void captureModel(const ParameterStore &store, CheckpointState &state) {
  state.model.clear();
  for (const ParameterStore::Entry &entry : store.entries())
    state.model.push_back(
        {entry.name, schema::parameterKindName(entry.kind), entry.tensor.detach().clone()});
}

void captureOptimizer(const Optimizer &optimizer, CheckpointState &state) {
  state.optimizer = optimizerKindName(optimizer.config().kind);
  state.optimizerState.clear();
  for (size_t i = 0; i < optimizer.names().size(); ++i) {
    const ParamState &param = optimizer.states()[i];
    CheckpointOptimizerEntry entry{optimizer.names()[i], param.step, {}};
    for (const auto &[name, tensor] : namedStateTensors(param))
      entry.tensors.emplace_back(name, tensor.clone());
    state.optimizerState.push_back(std::move(entry));
  }
}

void checkSameModel(const CheckpointState &state, const ParameterStore &store,
                    const std::string &where) {
  std::map<std::string, const CheckpointTensor *> saved;
  for (const CheckpointTensor &entry : state.model)
    saved.emplace(entry.name, &entry);
  for (const ParameterStore::Entry &entry : store.entries()) {
    auto it = saved.find(entry.name);
    if (it == saved.end())
      differentModel(where, std::string(schema::parameterKindName(entry.kind)) + " '" +
                                entry.name + "' of this model is not in it");
    checkEntry(*it->second, entry, where);
    saved.erase(it);
  }
  if (!saved.empty())
    differentModel(where, saved.begin()->second->kind + " '" +
                              saved.begin()->first + "' is not in this model");
}

void restoreModel(const CheckpointState &state, ParameterStore &store,
                  const std::string &where) {
  checkSameModel(state, store, where);
  for (const CheckpointTensor &entry : state.model)
    store.set(entry.name, entry.value);
}

void checkOptimizerKind(const CheckpointState &state, OptimizerKind kind,
                        const std::string &where) {
  if (state.optimizer != optimizerKindName(kind))
    throw Error("checkpoint '" + where + "' holds " + state.optimizer +
                " state; this run uses --optimizer " + optimizerKindName(kind));
}

std::vector<const CheckpointOptimizerEntry *>
optimizerEntriesFor(const CheckpointState &state,
                    const std::vector<std::string> &names,
                    const std::string &where) {
  std::map<std::string, const CheckpointOptimizerEntry *> byName;
  for (const CheckpointOptimizerEntry &entry : state.optimizerState)
    if (!byName.emplace(entry.param, &entry).second || entry.offset >= 0)
      throw Error("checkpoint '" + where + "' holds optimizer state for '" +
                  entry.param + "' " +
                  (entry.offset >= 0 ? "in pieces" : "twice"));
  std::vector<const CheckpointOptimizerEntry *> entries;
  for (const std::string &name : names) {
    auto it = byName.find(name);
    if (it == byName.end())
      throw Error("checkpoint '" + where + "' holds no optimizer state for '" +
                  name + "'");
    entries.push_back(it->second);
    byName.erase(it);
  }
  if (!byName.empty())
    throw Error("checkpoint '" + where + "' holds optimizer state for '" +
                byName.begin()->first + "', which this model does not train");
  return entries;
}

ParamState paramStateOf(const CheckpointOptimizerEntry &entry) {
  ParamState state;
  state.step = entry.step;
  for (const auto &[name, tensor] : entry.tensors)
    setStateTensor(state, name, tensor);
  return state;
}

void restoreOptimizer(const CheckpointState &state, Optimizer &optimizer,
                      const std::string &where) {
  checkOptimizerKind(state, optimizer.config().kind, where);
  std::vector<const CheckpointOptimizerEntry *> entries =
      optimizerEntriesFor(state, optimizer.names(), where);
  std::vector<ParamState> restored;
  for (const CheckpointOptimizerEntry *entry : entries)
    restored.push_back(paramStateOf(*entry));
  optimizer.states() = std::move(restored);
}

} // namespace snn::runtime
