//===- ProgramCheckpoint.cpp - Checkpoints of the Python API's programs ---===//
//
// The Python API writes and reads the checkpoints `snn-run train --checkpoint` does
// (docs/checkpoints.md), so a job moves between a Python loop and snn-run in either
// direction. A save assembles the whole model as the trainer's does for its mode: fsdp pieces
// merged over the dp group, tp parts gathered over their axis, a pipeline's stages over pp;
// world rank 0 publishes it. A load cuts the whole checkpoint to this rank's share.
//
//===----------------------------------------------------------------------===//
#include "Program.h"

#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Checkpoint/PartitionedCheckpoint.h"
#include "snn/Runtime/Checkpoint/PipelineCheckpoint.h"
#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Sharding/ShardPieceState.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/MeshAxes.h"

#include <pybind11/pybind11.h>

#include <filesystem>

namespace meshaxis = snn::schema::meshaxis;

namespace py = pybind11;
using namespace snn::runtime;

namespace snn::python {

namespace {

CheckpointOptimizerEntry checkpointEntry(const Program::OptimizerEntry &entry) {
  CheckpointOptimizerEntry out{entry.param, entry.step, {}};
  for (const auto &[name, tensor] : entry.tensors)
    out.tensors.emplace_back(name, tensor.detach().to(at::kFloat).contiguous().clone());
  return out;
}

/// fsdp: the buffers whole, each parameter's piece with its optimizer state's piece, as a
/// sharded trainer's capture holds them before mergePiecesOverGroup.
void captureFsdpPieces(CheckpointState &state, const ParameterStore &store,
                       const ParameterSharding &fsdp, OptimizerKind kind,
                       const std::map<std::string, const Program::OptimizerEntry *> &optimizer,
                       const dist::Group &group) {
  beginShardCapture(state, kind, store, {group.rank(), group.size(), "fsdp"});
  for (const ParameterSharding::LocalPiece &piece : fsdp.localPieces()) {
    ShardPiece place{0, piece.offset, piece.values.numel(), 0};
    state.model.push_back(
        parameterPiece(piece.name, piece.values, place, store.get(piece.name).sizes().vec()));
    auto found = optimizer.find(piece.name);
    if (found != optimizer.end())
      state.optimizerState.push_back(
          statePiece(piece.name, paramStateOf(checkpointEntry(*found->second)), place));
  }
}

std::vector<ParameterShape> localParameterShapes(const ParameterStore &store) {
  std::vector<ParameterShape> shapes;
  for (const ParameterStore::Entry &entry : store.entries())
    if (entry.kind == ParameterKind::Parameter)
      shapes.emplace_back(entry.name, entry.tensor.sizes().vec());
  return shapes;
}

/// The fsdp rank's piece of a whole state tensor of its (local) parameter.
at::Tensor pieceOf(const at::Tensor &whole, const ParameterSharding::LocalPiece &piece) {
  return whole.reshape({-1}).narrow(0, piece.offset, piece.values.numel()).clone();
}

} // namespace

std::string Program::saveCheckpoint(const std::string &dir, const CheckpointPosition &position,
                                    const std::string &optimizerKind,
                                    const std::vector<OptimizerEntry> &optimizer, int keep) {
  Model &m = bound();
  CheckpointState state;
  state.step = position.step;
  state.epoch = position.epoch;
  state.batch = position.batch;
  state.seed = position.seed;
  state.runId = position.runId;
  state.settings = position.settings;
  state.generatorState = cpuGeneratorState();
  py::gil_scoped_release release;
  at::NoGradGuard noGrad;
  if (fsdp) {
    std::map<std::string, const OptimizerEntry *> byName;
    for (const OptimizerEntry &entry : optimizer)
      byName[entry.param] = &entry;
    // Without optimizer state the kind only names what the entries would hold.
    OptimizerKind kind =
        optimizerKind.empty() ? OptimizerKind::Sgd : parseOptimizerKind(optimizerKind);
    captureFsdpPieces(state, m.params(), *fsdp, kind, byName, dp.group);
    mergePiecesOverGroup(state, localParameterShapes(m.params()), dp.group);
  } else {
    captureModel(m.params(), state);
    for (const OptimizerEntry &entry : optimizer)
      state.optimizerState.push_back(checkpointEntry(entry));
  }
  state.optimizer = optimizerKind;
  if (artifact.run.partitioned)
    gatherWholeCheckpoint(state, partition);
  if (place)
    gatherPipelineCheckpoint(state, m.manifest(),
                             mesh.groupIfSplit(meshaxis::kPipeline));
  if (rank() != 0)
    return "";
  std::filesystem::create_directories(dir);
  CheckpointDirectory directory(dir, keep);
  return directory.save(state);
}

Program::LoadedCheckpoint Program::loadCheckpoint(const std::string &dir) {
  Model &m = bound();
  LoadedCheckpoint out;
  out.path = CheckpointDirectory(dir, 1).latest();
  if (out.path.empty())
    throw Error("load_checkpoint: no checkpoint in '" + dir + "'");
  CheckpointState state = readAnyCheckpoint(out.path);
  // This rank's share as snn-run's --resume cuts it: a pipeline's stages, then their tp
  // parts; another model is refused naming the first entry that differs.
  CheckpointState local = state;
  if (place)
    local = pipelineLocalCheckpoint(local, m.params(), m.manifest(), out.path);
  if (artifact.run.partitioned)
    local = localCheckpoint(local, partition, out.path);
  checkSameModel(local, m.params(), out.path);
  TensorMap whole;
  for (const CheckpointTensor &tensor : state.model)
    whole[tensor.name] = tensor.value;
  loadWholeState(whole); // collective under fsdp
  std::map<std::string, ParameterSharding::LocalPiece> pieces;
  if (fsdp)
    for (const ParameterSharding::LocalPiece &piece : fsdp->localPieces())
      pieces.emplace(piece.name, piece);
  for (const CheckpointOptimizerEntry &entry : local.optimizerState) {
    auto piece = pieces.find(entry.param);
    if (!holds(entry.param) || (fsdp && piece == pieces.end()))
      continue;
    OptimizerEntry mine{entry.param, entry.step, {}};
    for (const auto &[name, tensor] : entry.tensors)
      mine.tensors.emplace_back(name, fsdp ? pieceOf(tensor, piece->second) : tensor);
    out.optimizer.push_back(std::move(mine));
  }
  out.optimizerKind = state.optimizer;
  out.position = {state.step, state.epoch, state.batch, state.seed, state.runId,
                  state.settings};
  out.generatorState = state.generatorState;
  return out;
}

} // namespace snn::python
