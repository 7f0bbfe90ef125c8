//===- FsdpSharding.cpp - Fully sharded data parallelism ------------------===//
//
// One FlatParameterGroup ("unit") per executor step that first reads a
// parameter: a layer's weights (and bias) move together. Between uses a
// unit's buffer is released and the rank keeps only its chunk ("shard") and
// the chunk's optimizer state. As the model's ExecutionObserver:
//   - before a step, its units are all-gathered from the shards;
//   - after a step, a hook on the step's output gathers them again when
//     backward reaches it (autograd saved views of the freed storage), and
//     a unit is released after its last use in the forward;
//   - as soon as backward has accumulated a unit's gradients (a post hook
//     on each parameter's AccumulateGrad), they are reduce-scattered into
//     a gradient shard and the unit's full parameters and gradients are
//     freed: backward holds a few units full, not the whole model twice.
//     Units are reduced in reverse forward order, each once every unit
//     before it in that order is, so every rank makes the same calls in the
//     same order; finishBackward reduces those backward did not complete.
// step() then updates the shards in place. While a unit computes, the next
// one's all_gather runs in the background (the following unit in forward,
// the preceding one in backward), so at most two units are full at a time
// besides those autograd still needs.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Sharding/FlatParameterGroup.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"
#include "snn/Runtime/Sharding/ShardPieceState.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"

#include "snn/Runtime/Distributed/GradReadyHooks.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <map>

namespace snn::runtime {

namespace {

struct FsdpUnit {
  std::vector<std::string> names;
  std::unique_ptr<FlatParameterGroup> flat;
  at::Tensor shard;     // this rank's chunk of the parameters
  at::Tensor gradShard; // between finishBackward and step
  std::unique_ptr<PieceOptimizer> pieces;
  dist::PendingCollective prefetch; // an all_gather started ahead of use
  size_t lastForwardStep = 0;
  size_t gradsExpected = 0; // parameters whose AccumulateGrad has a hook
  size_t gradsPending = 0;  // of those, not yet accumulated this backward
  bool reduced = false;     // this backward's gradient shard is taken
};

class FsdpSharding final : public ParameterSharding, public ExecutionObserver {
public:
  FsdpSharding(Model &model, const OptimizerConfig &config,
               const DataParallelContext &dp)
      : model(model), store(model.params()), config(config), group(dp.group) {
    buildUnits(model.executor().parameterUse());
    for (FsdpUnit &unit : units) {
      unit.shard = unit.flat->ownChunk().clone();
      unit.pieces = std::make_unique<PieceOptimizer>(*unit.flat, unit.names);
      unit.flat->release();
    }
    registerGradHooks();
    model.setExecutionObserver(this);
  }

  ~FsdpSharding() override { model.setExecutionObserver(nullptr); }

  ShardingMode mode() const override { return ShardingMode::Fsdp; }

  void beforeStep(size_t step) override {
    for (size_t u : unitsOfStep[step])
      gather(u);
    if (!unitsOfStep[step].empty())
      startPrefetch(unitsOfStep[step].back() + 1);
  }

  void afterStep(size_t step, const at::Tensor &output) override {
    for (size_t u : unitsOfStep[step]) {
      if (at::GradMode::is_enabled() && output.requires_grad())
        output.register_hook([this, u](const at::Tensor &) {
          gather(u);
          if (u > 0)
            startPrefetch(u - 1);
        });
      if (units[u].lastForwardStep == step && !pinned)
        releaseUnit(units[u]);
    }
  }

  void finishBackward() override {
    at::NoGradGuard noGrad;
    for (FsdpUnit &unit : units)
      if (unit.prefetch.valid())
        unit.prefetch.wait();
    // The same order as in backward: first those it left, then the rest.
    for (; nextReduce < reduceOrder.size(); ++nextReduce)
      reduceUnit(units[reduceOrder[nextReduce]]);
    for (FsdpUnit &unit : units) {
      if (!unit.reduced)
        reduceUnit(unit);
      unit.reduced = false;
      unit.gradsPending = unit.gradsExpected;
    }
    nextReduce = 0;
  }

  void step(double lr) override {
    for (FsdpUnit &unit : units) {
      unit.pieces->step(config, lr, unit.shard, [&](const ShardPiece &piece) {
        return unit.gradShard.defined()
                   ? unit.flat->pieceOfChunk(unit.gradShard, piece)
                   : at::Tensor();
      });
      unit.gradShard.reset();
    }
  }

  void dropGradients() override {
    for (FsdpUnit &unit : units)
      unit.gradShard.reset();
    store.zeroGrad();
  }

  void materialize() override {
    pinned = true;
    for (size_t u = 0; u < units.size(); ++u)
      gather(u);
  }

  void reshard() override {
    at::NoGradGuard noGrad;
    for (FsdpUnit &unit : units)
      unit.shard.copy_(unit.flat->ownChunk());
  }

  void release() override {
    pinned = false;
    for (FsdpUnit &unit : units)
      releaseUnit(unit);
  }

  void capture(CheckpointState &state) const override {
    beginShardCapture(state, config.kind, store,
                      {group.rank(), group.size(), "fsdp"});
    for (const FsdpUnit &unit : units)
      unit.pieces->capture(unit.shard, state);
  }

  void restore(const CheckpointState &state,
               const std::string &where) override {
    auto entries = wholeOptimizerEntries(state, config.kind,
                                         store.parameterNames(), where);
    checkSameModel(state, store, where);
    // Collective, like every restore: the full parameters take the
    // checkpoint's values, then each rank keeps its chunk of them.
    materialize();
    restoreModel(state, store, where);
    reshard();
    for (FsdpUnit &unit : units)
      unit.pieces->restore(entries);
    release();
  }

  std::vector<LocalPiece> localPieces() const override {
    std::vector<LocalPiece> out;
    for (const FsdpUnit &unit : units)
      for (const ShardPiece &piece : unit.flat->ownPieces())
        out.push_back({unit.names[piece.tensor], unit.flat->pieceOfChunk(unit.shard, piece),
                       unit.gradShard.defined()
                           ? unit.flat->pieceOfChunk(unit.gradShard, piece)
                           : at::Tensor(),
                       piece.offset});
    return out;
  }

  MemoryFootprint footprint() const override {
    MemoryFootprint bytes;
    for (const FsdpUnit &unit : units) {
      bytes.paramBytes += int64_t(unit.shard.nbytes()) + unit.flat->residentBytes();
      if (unit.gradShard.defined())
        bytes.gradBytes += int64_t(unit.gradShard.nbytes());
      for (const at::Tensor &param : unit.flat->params())
        if (param.grad().defined())
          bytes.gradBytes += int64_t(param.grad().nbytes());
      bytes.optimizerStateBytes += unit.pieces->stateBytes();
    }
    return bytes;
  }

private:
  void buildUnits(const std::vector<std::vector<std::string>> &use);
  void registerGradHooks();

  /// The unit's gradient shard from every rank's full gradients; its full
  /// parameters and gradients are then freed.
  void reduceUnit(FsdpUnit &unit) {
    at::NoGradGuard noGrad;
    at::Tensor grads = unit.flat->flatGradients();
    for (const at::Tensor &param : unit.flat->params())
      param.mutable_grad().reset();
    unit.gradShard = dist::reduceScatter(group, grads, dist::ReduceOp::Sum);
    unit.gradShard.div_(group.size());
    unit.reduced = true;
    if (!pinned)
      releaseUnit(unit);
  }

  /// A parameter of unit `u` has its gradient for this backward.
  void onGradAccumulated(size_t u) {
    if (units[u].gradsPending > 0)
      --units[u].gradsPending;
    while (nextReduce < reduceOrder.size() &&
           units[reduceOrder[nextReduce]].gradsPending == 0)
      reduceUnit(units[reduceOrder[nextReduce++]]);
  }

  void gather(size_t u) {
    FsdpUnit &unit = units[u];
    if (unit.prefetch.valid())
      unit.prefetch.wait();
    else if (!unit.flat->materialized())
      unit.flat->gather(group, unit.shard);
  }

  /// Starts unit u's all_gather unless it is out of range, full or on its
  /// way. Every rank reaches the same calls in the same order.
  void startPrefetch(size_t u) {
    // (the unit of parameters no step reads is gathered only on request)
    if (u >= units.size() || units[u].lastForwardStep >= unitsOfStep.size())
      return;
    FsdpUnit &unit = units[u];
    if (unit.prefetch.valid() || unit.flat->materialized())
      return;
    unit.prefetch = unit.flat->gatherAsync(group, unit.shard);
  }

  void releaseUnit(FsdpUnit &unit) {
    if (unit.prefetch.valid())
      unit.prefetch.wait();
    unit.flat->release();
  }

  Model &model;
  ParameterStore &store;
  OptimizerConfig config;
  dist::Group group;
  std::vector<FsdpUnit> units;
  std::vector<std::vector<size_t>> unitsOfStep;
  /// The units backward reduces, in the order it reaches them.
  std::vector<size_t> reduceOrder;
  size_t nextReduce = 0;
  bool pinned = false;
  dist::GradReadyHooks gradHooks; // last: removed before the units go
};

// A unit no step reads, or without a trainable parameter, is left to
// finishBackward.
void FsdpSharding::registerGradHooks() {
  for (size_t u = units.size(); u-- > 0;) {
    FsdpUnit &unit = units[u];
    if (unit.lastForwardStep >= unitsOfStep.size())
      continue;
    for (const at::Tensor &param : unit.flat->params())
      if (gradHooks.add(param, [this, u] { onGradAccumulated(u); }))
        ++unit.gradsExpected;
    unit.gradsPending = unit.gradsExpected;
    if (unit.gradsExpected > 0)
      reduceOrder.push_back(u);
  }
}

void FsdpSharding::buildUnits(
    const std::vector<std::vector<std::string>> &use) {
  std::map<std::string, size_t> unitOf;
  unitsOfStep.resize(use.size());
  std::vector<std::vector<at::Tensor>> params;
  auto addUnit = [&](std::vector<std::string> names, size_t step) {
    std::vector<at::Tensor> tensors;
    for (const std::string &name : names) {
      unitOf[name] = units.size();
      tensors.push_back(store.get(name));
    }
    FsdpUnit unit;
    unit.names = std::move(names);
    unit.lastForwardStep = step;
    units.push_back(std::move(unit));
    params.push_back(std::move(tensors));
  };
  for (size_t step = 0; step < use.size(); ++step) {
    std::vector<std::string> fresh;
    for (const std::string &name : use[step])
      if (store.entry(name).kind == ParameterKind::Parameter &&
          !unitOf.count(name) &&
          std::find(fresh.begin(), fresh.end(), name) == fresh.end())
        fresh.push_back(name);
    if (!fresh.empty())
      addUnit(std::move(fresh), step);
    for (const std::string &name : use[step]) {
      auto it = unitOf.find(name);
      if (it == unitOf.end())
        continue;
      std::vector<size_t> &list = unitsOfStep[step];
      if (std::find(list.begin(), list.end(), it->second) == list.end())
        list.push_back(it->second);
      units[it->second].lastForwardStep = step;
    }
  }
  // Parameters no step reads still train (with no gradient) and checkpoint.
  std::vector<std::string> unused;
  for (const std::string &name : store.parameterNames())
    if (!unitOf.count(name))
      unused.push_back(name);
  if (!unused.empty())
    addUnit(std::move(unused), use.size());
  for (size_t u = 0; u < units.size(); ++u)
    units[u].flat = std::make_unique<FlatParameterGroup>(
        std::move(params[u]), group.size(), group.rank());
}

} // namespace

std::unique_ptr<ParameterSharding>
makeFsdpSharding(Model &model, const OptimizerConfig &config,
                 const DataParallelContext &dp) {
  return std::make_unique<FsdpSharding>(model, config, dp);
}

} // namespace snn::runtime
