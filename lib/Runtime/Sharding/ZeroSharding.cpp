//===- ZeroSharding.cpp - dp + ZeRO stage 1 -------------------------------===//
//
// Parameters live in one FlatParameterGroup, replicated; gradients are
// averaged by the bucketed all-reduce as in dp. Rank r keeps the optimizer
// state of chunk r only and updates that chunk in place; an all_gather of
// the chunks then brings every rank's parameters up to date. The update is
// elementwise, so each element gets exactly dp's arithmetic.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Distributed/GradReducer.h"
#include "snn/Runtime/Sharding/FlatParameterGroup.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"
#include "snn/Runtime/Sharding/ShardPieceState.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"

namespace snn::runtime {

namespace {

class ZeroSharding final : public ParameterSharding {
public:
  ZeroSharding(Model &model, const OptimizerConfig &config,
               const DataParallelContext &dp)
      : store(model.params()), config(config), group(dp.group),
        flat(store.parameters(), dp.size(), dp.rank()),
        pieces(flat, store.parameterNames()) {
    // After the flat group: the reducer's hooks see the re-pointed leaves.
    reducer = std::make_unique<dist::GradBucketReducer>(group, flat.params());
  }

  ShardingMode mode() const override { return ShardingMode::Zero; }

  void finishBackward() override { reducer->finish(); }

  void dropGradients() override { store.zeroGrad(); }

  void step(double lr) override {
    pieces.step(config, lr, flat.ownChunk(), [&](const ShardPiece &piece) {
      const at::Tensor &grad = flat.params()[piece.tensor].grad();
      return grad.defined()
                 ? grad.reshape({-1}).narrow(0, piece.offset, piece.length)
                 : at::Tensor();
    });
    flat.gather(group, flat.ownChunk().clone());
  }

  void capture(CheckpointState &state) const override {
    beginShardCapture(state, config.kind, store,
                      {group.rank(), group.size(), "zero"});
    pieces.capture(flat.ownChunk(), state);
  }

  void restore(const CheckpointState &state,
               const std::string &where) override {
    auto entries = wholeOptimizerEntries(state, config.kind,
                                         store.parameterNames(), where);
    restoreModel(state, store, where);
    pieces.restore(entries);
  }

  std::vector<LocalPiece> localPieces() const override {
    return wholeParameterPieces(store);
  }

  MemoryFootprint footprint() const override {
    MemoryFootprint bytes;
    bytes.paramBytes = flat.residentBytes();
    for (const at::Tensor &param : flat.params())
      if (param.grad().defined())
        bytes.gradBytes += int64_t(param.grad().nbytes());
    bytes.bucketBytes = int64_t(reducer->bucketBytes());
    bytes.gradBytes += bytes.bucketBytes;
    bytes.optimizerStateBytes = pieces.stateBytes();
    return bytes;
  }

private:
  ParameterStore &store;
  OptimizerConfig config;
  dist::Group group;
  FlatParameterGroup flat;
  PieceOptimizer pieces;
  std::unique_ptr<dist::GradBucketReducer> reducer;
};

} // namespace

std::unique_ptr<ParameterSharding>
makeZeroSharding(Model &model, const OptimizerConfig &config,
                 const DataParallelContext &dp) {
  return std::make_unique<ZeroSharding>(model, config, dp);
}

} // namespace snn::runtime
