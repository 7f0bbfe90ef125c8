//===- ShardPieceState.cpp - Optimizer state of a rank's pieces -----------===//

#include "snn/Runtime/ShardPieceState.h"
#include "snn/Runtime/ParameterStore.h"

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

void captureBuffers(const ParameterStore &store, CheckpointState &state) {
  for (const ParameterStore::Entry &entry : store.entries())
    if (entry.kind == ParameterKind::Buffer)
      state.model.push_back({entry.name, "buffer", entry.tensor.detach().clone()});
}

} // namespace snn::runtime
