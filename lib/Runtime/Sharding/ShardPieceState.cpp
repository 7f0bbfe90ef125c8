//===- ShardPieceState.cpp - Optimizer state of a rank's pieces -----------===//

#include "snn/Runtime/Sharding/ShardPieceState.h"
#include "snn/Runtime/Execution/ParameterStore.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"

namespace snn::runtime {

CheckpointTensor parameterPiece(const std::string &name,
                                const at::Tensor &values,
                                const ShardPiece &piece,
                                std::vector<int64_t> fullShape) {
  CheckpointTensor entry{name, "parameter", values.detach().clone()};
  entry.offset = piece.offset;
  entry.fullShape = std::move(fullShape);
  return entry;
}

CheckpointOptimizerEntry statePiece(const std::string &name,
                                    const ParamState &state,
                                    const ShardPiece &piece) {
  CheckpointOptimizerEntry entry{name, state.step, {}};
  for (const auto &[stateName, tensor] : namedStateTensors(state))
    entry.tensors.emplace_back(stateName, tensor.clone());
  entry.offset = piece.offset;
  entry.length = piece.length;
  return entry;
}

ParamState sliceParamState(const ParamState &whole, const ShardPiece &piece) {
  ParamState slice;
  slice.step = whole.step;
  for (const auto &[name, tensor] : namedStateTensors(whole))
    setStateTensor(slice, name,
                   tensor.reshape({-1}).narrow(0, piece.offset, piece.length)
                       .clone());
  return slice;
}

int64_t stateBytes(const std::vector<ParamState> &states) {
  int64_t bytes = 0;
  for (const ParamState &state : states)
    for (const auto &entry : namedStateTensors(state))
      bytes += int64_t(entry.second.nbytes());
  return bytes;
}

void beginShardCapture(CheckpointState &state, OptimizerKind kind,
                       const ParameterStore &store, CheckpointShard shard) {
  state.model.clear();
  state.optimizerState.clear();
  state.optimizer = optimizerKindName(kind);
  state.shard = std::move(shard);
  for (const ParameterStore::Entry &entry : store.entries())
    if (entry.kind == ParameterKind::Buffer)
      state.model.push_back({entry.name, "buffer", entry.tensor.detach().clone()});
}

std::map<std::string, const CheckpointOptimizerEntry *>
wholeOptimizerEntries(const CheckpointState &state, OptimizerKind kind,
                      const std::vector<std::string> &names,
                      const std::string &where) {
  checkOptimizerKind(state, kind, where);
  std::vector<const CheckpointOptimizerEntry *> entries =
      optimizerEntriesFor(state, names, where);
  std::map<std::string, const CheckpointOptimizerEntry *> byName;
  for (size_t i = 0; i < names.size(); ++i)
    byName[names[i]] = entries[i];
  return byName;
}

PieceOptimizer::PieceOptimizer(const FlatParameterGroup &flat,
                               std::vector<std::string> names)
    : flat(flat), names(std::move(names)), states(flat.ownPieces().size()) {}

void PieceOptimizer::step(
    const OptimizerConfig &config, double lr, const at::Tensor &chunk,
    const std::function<at::Tensor(const ShardPiece &)> &gradOf) {
  std::vector<UpdateSlice> slices;
  const std::vector<ShardPiece> &pieces = flat.ownPieces();
  for (size_t k = 0; k < pieces.size(); ++k)
    slices.push_back({flat.pieceOfChunk(chunk, pieces[k]), gradOf(pieces[k]), &states[k]});
  applyUpdate(config, lr, slices);
}

void PieceOptimizer::capture(const at::Tensor &chunk,
                             CheckpointState &state) const {
  const std::vector<ShardPiece> &pieces = flat.ownPieces();
  for (size_t k = 0; k < pieces.size(); ++k) {
    const ShardPiece &piece = pieces[k];
    const std::string &name = names[piece.tensor];
    state.model.push_back(parameterPiece(name, flat.pieceOfChunk(chunk, piece), piece,
                                         flat.params()[piece.tensor].sizes().vec()));
    state.optimizerState.push_back(statePiece(name, states[k], piece));
  }
}

void PieceOptimizer::restore(
    const std::map<std::string, const CheckpointOptimizerEntry *> &entries) {
  std::vector<ParamState> restored;
  for (const ShardPiece &piece : flat.ownPieces())
    restored.push_back(sliceParamState(
        paramStateOf(*entries.at(names[piece.tensor])), piece));
  states = std::move(restored);
}

int64_t PieceOptimizer::stateBytes() const {
  return runtime::stateBytes(states);
}

} // namespace snn::runtime
