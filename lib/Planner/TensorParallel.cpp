//===- TensorParallel.cpp - Megatron pairing of split layers --------------===//
//
// Why pairs: a colwise layer leaves every TP rank with a slice of the features; a rowwise
// layer consumes exactly that slice and produces partial sums, so the only communication
// is one all-reduce after the pair (and its mirror in backward). Splitting three linears
// in a row naively hands a slice to a layer that expects the whole tensor (defect 3 of the
// reference); walking the dataflow and closing each pair avoids it.
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/TensorParallel.h"

#include <algorithm>

namespace snn::planner {

const char *tpRoleName(TPRole role) {
  switch (role) {
  case TPRole::Replicated: return "replicated";
  case TPRole::Colwise: return "colwise";
  case TPRole::Rowwise: return "rowwise";
  case TPRole::Sharded: return "sharded";
  }
  return "replicated";
}

namespace {

/// Per-feature ops that may sit between a colwise layer of `layer` kind and its partner. A
/// conv's channels also pass a channel-keeping reshape and a spiking attention (split by
/// whole heads: its q, k and v channels are relaid out per rank before the split).
bool allowedBetween(OpKind layer, const OpInfo &op) {
  if (op.kind == OpKind::RecurrentNeuron) // its weight mixes every feature
    return false;
  if (isNeuron(op.kind) || op.kind == OpKind::Dropout)
    return true;
  if (layer != OpKind::Conv2d)
    return false;
  return op.kind == OpKind::BatchNorm || op.kind == OpKind::MaxPool2d ||
         op.kind == OpKind::AvgPool2d || op.kind == OpKind::SpikingAttention ||
         op.keepsChannels;
}

bool isModelOutput(const ModelInfo &model, int opIndex) {
  return std::find(model.outputs.begin(), model.outputs.end(), opIndex) != model.outputs.end();
}

/// Dimension of the features a layer of `kind` splits in its output.
int featureDim(const OpInfo &op) {
  if (op.kind == OpKind::Conv2d)
    return op.batchDim + 1; // [T, N, C, H, W]: channels follow the batch
  return int(op.outputShape.size()) - 1;
}

/// Walks from colwise op `col` along single-user per-feature ops; returns the pair.
TPPair followRegion(const ModelInfo &model, int col, TPLayout &layout) {
  OpKind kind = model.ops[col].kind;
  int last = col;
  while (!isModelOutput(model, last)) {
    std::vector<int> users = usersOf(model, last);
    if (users.size() != 1)
      break;
    int user = users.front();
    const OpInfo &op = model.ops[user];
    if (op.inputs.size() != 1)
      break; // a binary op mixing the slice with a whole tensor
    if (op.tpCandidate && op.kind == kind && layout.roles[user] == TPRole::Replicated) {
      layout.roles[user] = TPRole::Rowwise;
      return {col, user, -1};
    }
    if (!allowedBetween(kind, op))
      break;
    layout.roles[user] = TPRole::Sharded;
    layout.splitDims[user] = layout.splitDims[last];
    last = user;
  }
  return {col, -1, last};
}

std::string displayName(const OpInfo &op) {
  return op.name.empty() ? std::string("<unnamed snn.") + opKindName(op.kind) + ">" : op.name;
}

} // namespace

TPLayout planTensorParallel(const ModelInfo &model) {
  TPLayout layout;
  layout.roles.assign(model.ops.size(), TPRole::Replicated);
  layout.splitDims.assign(model.ops.size(), -1);
  for (size_t i = 0; i < model.ops.size(); ++i) {
    const OpInfo &op = model.ops[i];
    if (!op.tpCandidate || layout.roles[i] != TPRole::Replicated)
      continue;
    if (op.kind != OpKind::Linear && op.kind != OpKind::Conv2d)
      continue;
    if (isModelOutput(model, int(i))) {
      // Every rank returns the whole output: a split would only be gathered right away.
      layout.notes.push_back("'" + displayName(op) + "' computes the model's output: it stays "
                             "whole");
      continue;
    }
    layout.roles[i] = TPRole::Colwise;
    layout.splitDims[i] = featureDim(op);
    TPPair pair = followRegion(model, int(i), layout);
    if (pair.rowwise < 0)
      layout.notes.push_back("'" + displayName(op) +
                             "' has no rowwise partner: its output stays split up to '" +
                             displayName(model.ops[pair.gatherAfter]) +
                             "' and is all-gathered there");
    layout.pairs.push_back(pair);
  }
  return layout;
}

Status checkTensorParallelDivisible(const ModelInfo &model, const TPLayout &layout,
                                    int64_t tpSize) {
  for (size_t i = 0; i < model.ops.size() && i < layout.roles.size(); ++i) {
    const OpInfo &op = model.ops[i];
    if (op.kind == OpKind::SpikingAttention && layout.roles[i] == TPRole::Sharded &&
        tpSize > 0 && op.groups % tpSize != 0)
      return makeError("cannot split '" + displayName(op) + "' (spiking_attention) over tp=" +
                           std::to_string(tpSize) + ": its " + std::to_string(op.groups) +
                           " heads are not divisible by " + std::to_string(tpSize) +
                           " (each rank computes whole heads)",
                       int(i));
  }
  for (const TPPair &pair : layout.pairs) {
    const OpInfo &op = model.ops[pair.colwise];
    int64_t features = op.weightShape.empty() ? 0 : op.weightShape.front();
    if (tpSize > 0 && features % tpSize != 0) {
      const char *what = op.kind == OpKind::Conv2d ? "output channels" : "output features";
      return makeError("cannot split '" + displayName(op) + "' (" + opKindName(op.kind) +
                           ") over tp=" + std::to_string(tpSize) + ": its " +
                           std::to_string(features) + " " + what + " are not divisible by " +
                           std::to_string(tpSize),
                       pair.colwise);
    }
  }
  return Ok{};
}

TPShare tensorParallelShare(const ModelInfo &model, const TPLayout &layout, int64_t tpSize) {
  size_t n = model.ops.size();
  TPShare share{std::vector<double>(n, 1.0), std::vector<double>(n, 1.0),
                std::vector<double>(n, 1.0)};
  double slice = 1.0 / double(std::max<int64_t>(tpSize, 1));
  for (size_t i = 0; i < n; ++i) {
    const OpInfo &op = model.ops[i];
    TPRole role = layout.roles[i];
    if (role == TPRole::Replicated)
      continue;
    share.computeScale[i] = slice;
    if (role != TPRole::Rowwise)
      share.activationScale[i] = slice; // a rowwise output is whole after its all-reduce
    if (op.paramElements == 0 || isNeuron(op.kind))
      continue; // a neuron's parameters (PLIF's w, a PSN's weight) stay whole on every rank
    // A rowwise bias is added after the all-reduce, so it stays whole.
    int64_t bias = (role == TPRole::Rowwise && op.hasBias && !op.weightShape.empty())
                       ? op.weightShape.front()
                       : 0;
    double split = double(op.paramElements - bias) * slice + double(bias);
    share.paramScale[i] = split / double(op.paramElements);
  }
  return share;
}

Communication tensorParallelCommunication(const ModelInfo &model, const TPLayout &layout,
                                          int64_t tpSize, int64_t batch,
                                          const std::vector<int> *onlyOps) {
  Communication total;
  auto counted = [&](int op) {
    return !onlyOps || std::find(onlyOps->begin(), onlyOps->end(), op) != onlyOps->end();
  };
  auto bytesOf = [&](int op) {
    return elementsAt(model.ops[op].outputShape, model.ops[op].batchDim, batch) *
           kBytesPerElement;
  };
  for (const TPPair &pair : layout.pairs) {
    if (!counted(pair.colwise))
      continue;
    const OpInfo &col = model.ops[pair.colwise];
    // Backward: each rank holds a partial input gradient of the colwise layer. The model
    // input needs no gradient.
    if (!col.inputs.empty() && col.inputs.front() >= 0)
      total += allReduce(bytesOf(col.inputs.front()), tpSize);
    // Forward: the rowwise partner's partial sums, else the split output gathered (whose
    // gradient each rank slices, replicated as it is: no collective, as the all_gather op
    // runs it and the compiler's estimate counts it).
    if (pair.rowwise >= 0)
      total += allReduce(bytesOf(pair.rowwise), tpSize);
    else
      total += allGather(bytesOf(pair.gatherAfter), tpSize);
  }
  // A PLIF's w (a PSN's weight and bias) inside a split region sees only its slice: its
  // gradient must be summed over the TP ranks or they drift apart (defect 4 of the reference).
  for (size_t i = 0; i < model.ops.size(); ++i)
    if (layout.roles[i] == TPRole::Sharded && counted(int(i)) &&
        (model.ops[i].kind == OpKind::PLIFNode ||
         ((model.ops[i].kind == OpKind::Neuron || model.ops[i].kind == OpKind::ParallelNeuron ||
          model.ops[i].kind == OpKind::RecurrentNeuron) &&
          model.ops[i].paramElements > 0)))
      total += allReduce(model.ops[i].paramElements * kBytesPerElement, tpSize);
  return total;
}

} // namespace snn::planner
