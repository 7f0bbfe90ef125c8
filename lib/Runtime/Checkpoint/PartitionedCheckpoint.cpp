//===- PartitionedCheckpoint.cpp - Whole checkpoints of tp runs -----------===//

#include "snn/Runtime/Checkpoint/PartitionedCheckpoint.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <array>
#include <map>

namespace snn::runtime {

namespace {

/// The optimizer state tensors a checkpoint may hold, by torch.optim name.
constexpr std::array<const char *, 3> kStateNames = {"momentum_buffer", "exp_avg",
                                                     "exp_avg_sq"};

/// A part of a flattened tensor: [offset, offset + values.numel()).
using Piece = std::pair<int64_t, at::Tensor>;

int64_t numelOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Collective: the float32 tensor of `shape` whose elements the members'
/// `pieces` cover exactly once. Each member writes its pieces' bits into
/// zeros; the integer sum over the members then holds every element's bits
/// unchanged (a float sum would turn -0.0 into +0.0).
at::Tensor assemble(const dist::Group &group, const std::vector<int64_t> &shape,
                    const std::vector<Piece> &pieces, const std::string &name) {
  at::Tensor bits = at::zeros({numelOf(shape)}, at::kInt);
  for (const auto &[offset, values] : pieces) {
    if (values.scalar_type() != at::kFloat)
      throw Error("checkpoint: '" + name + "' is not float32");
    bits.narrow(0, offset, values.numel())
        .copy_(values.reshape({-1}).contiguous().view(at::kInt));
  }
  dist::allReduce(group, bits, dist::ReduceOp::Sum);
  return bits.view(at::kFloat).view(shape);
}

/// Per parameter: [step, one flag per kStateNames] of this rank's state
/// pieces, or -1s without any; the maximum over the members says what the
/// whole state holds.
at::Tensor stateLayout(const CheckpointState &state,
                       const std::vector<ParameterShape> &parameters,
                       const dist::Group &group) {
  const int64_t width = 1 + int64_t(kStateNames.size());
  at::Tensor layout = at::empty({int64_t(parameters.size()), width}, at::kLong);
  layout.fill_(-1);
  std::map<std::string, int64_t> row;
  for (size_t i = 0; i < parameters.size(); ++i)
    row[parameters[i].first] = int64_t(i);
  int64_t *table = layout.data_ptr<int64_t>();
  for (const CheckpointOptimizerEntry &entry : state.optimizerState) {
    auto it = row.find(entry.param);
    if (it == row.end())
      continue;
    int64_t *cells = table + it->second * width;
    cells[0] = std::max(cells[0], entry.step);
    for (const auto &[name, tensor] : entry.tensors)
      for (size_t k = 0; k < kStateNames.size(); ++k)
        if (name == kStateNames[k])
          cells[1 + k] = 1;
  }
  dist::allReduce(group, layout, dist::ReduceOp::Max);
  return layout;
}

/// The pieces of `param`'s state tensor `name` in this rank's state.
std::vector<Piece> statePieces(const CheckpointState &state,
                               const std::string &param, const std::string &name) {
  std::vector<Piece> pieces;
  for (const CheckpointOptimizerEntry &entry : state.optimizerState)
    if (entry.param == param)
      for (const auto &[stateName, tensor] : entry.tensors)
        if (stateName == name)
          pieces.emplace_back(std::max<int64_t>(entry.offset, 0), tensor);
  return pieces;
}

std::vector<CheckpointOptimizerEntry>
mergeOptimizerPieces(const CheckpointState &state,
                     const std::vector<ParameterShape> &parameters,
                     const dist::Group &group) {
  at::Tensor layout = stateLayout(state, parameters, group);
  const int64_t width = layout.size(1);
  const int64_t *table = layout.data_ptr<int64_t>();
  std::vector<CheckpointOptimizerEntry> merged;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto &[param, shape] = parameters[i];
    const int64_t *cells = table + int64_t(i) * width;
    CheckpointOptimizerEntry entry{param, std::max<int64_t>(cells[0], 0), {}};
    for (size_t k = 0; k < kStateNames.size(); ++k)
      if (cells[1 + k] > 0)
        entry.tensors.emplace_back(
            kStateNames[k],
            assemble(group, shape, statePieces(state, param, kStateNames[k]),
                     param + "/" + kStateNames[k]));
    merged.push_back(std::move(entry));
  }
  return merged;
}

} // namespace

void mergePiecesOverGroup(CheckpointState &state,
                          const std::vector<ParameterShape> &parameters,
                          const dist::Group &group) {
  std::vector<CheckpointTensor> model;
  for (const auto &[name, shape] : parameters) {
    std::vector<Piece> pieces;
    for (const CheckpointTensor &entry : state.model)
      if (entry.name == name && entry.isPiece())
        pieces.emplace_back(entry.offset, entry.value);
    model.push_back({name, "parameter", assemble(group, shape, pieces, name)});
  }
  for (const CheckpointTensor &entry : state.model)
    if (!entry.isPiece())
      model.push_back(entry);
  state.optimizerState = mergeOptimizerPieces(state, parameters, group);
  state.model = std::move(model);
  state.shard = CheckpointShard();
}

void gatherWholeCheckpoint(CheckpointState &state,
                           const ParameterPartition &partition) {
  for (CheckpointTensor &entry : state.model)
    entry.value = partition.gatherWhole(entry.name, entry.value);
  for (CheckpointOptimizerEntry &entry : state.optimizerState)
    for (auto &[name, tensor] : entry.tensors)
      tensor = partition.gatherWhole(entry.param, tensor);
}

CheckpointState localCheckpoint(const CheckpointState &whole,
                                const ParameterPartition &partition,
                                const std::string &where) {
  const std::string what = "checkpoint '" + where + "'";
  CheckpointState local = whole;
  for (CheckpointTensor &entry : local.model)
    entry.value = partition.localPart(entry.name, entry.value, what);
  for (CheckpointOptimizerEntry &entry : local.optimizerState)
    for (auto &[name, tensor] : entry.tensors)
      tensor = partition.localPart(entry.param, tensor,
                                   what + " (" + name + " of '" + entry.param + "')");
  return local;
}

} // namespace snn::runtime
