//===- ZeroSharding.cpp - dp + ZeRO stage 1 -------------------------------===//
//
// Parameters live in one FlatParameterGroup, replicated; gradients are
// averaged by the bucketed all-reduce as in dp. Rank r keeps the optimizer
// state of chunk r only and updates that chunk in place; an all_gather of
// the chunks then brings every rank's parameters up to date. The update is
// elementwise, so each element gets exactly dp's arithmetic.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/DataParallel.h"
#include "snn/Runtime/Distributed/GradReducer.h"
#include "snn/Runtime/FlatParameterGroup.h"
#include "snn/Runtime/Model.h"
#include "snn/Runtime/ParameterSharding.h"
#include "snn/Runtime/ShardPieceState.h"
#include "snn/Runtime/TrainCheckpoint.h"

namespace snn::runtime {

namespace {

class ZeroSharding final : public ParameterSharding {
public:
  ZeroSharding(Model &model, const OptimizerConfig &config,
               const DataParallelContext &dp)
      : store(model.params()), config(config), group(dp.group),
        names(store.parameterNames()),
        flat(store.parameters(), dp.size(), dp.rank()),
        states(flat.ownPieces().size()) {
    // After the flat group: the reducer's hooks see the re-pointed leaves.
    reducer = std::make_unique<dist::GradBucketReducer>(group, flat.params());
  }

  ShardingMode mode() const override { return ShardingMode::Zero; }

  void finishBackward() override { reducer->finish(); }

  void step(double lr) override {
    std::vector<UpdateSlice> slices;
    const std::vector<ShardPiece> &pieces = flat.ownPieces();
    for (size_t k = 0; k < pieces.size(); ++k) {
      const ShardPiece &piece = pieces[k];
      const at::Tensor &grad = flat.params()[piece.tensor].grad();
      slices.push_back(
          {flat.flat().narrow(0, piece.flatOffset, piece.length),
           grad.defined()
               ? grad.reshape({-1}).narrow(0, piece.offset, piece.length)
               : at::Tensor(),
           &states[k]});
    }
    applyUpdate(config, lr, slices);
    flat.gather(group, flat.ownChunk().clone());
  }

  void capture(CheckpointState &state) const override {
    state.model.clear();
    state.optimizerState.clear();
    state.optimizer = optimizerKindName(config.kind);
    const std::vector<ShardPiece> &pieces = flat.ownPieces();
    for (size_t k = 0; k < pieces.size(); ++k) {
      const ShardPiece &piece = pieces[k];
      const std::string &name = names[piece.tensor];
      state.model.push_back(parameterPiece(
          name, flat.flat().narrow(0, piece.flatOffset, piece.length), piece,
          flat.params()[piece.tensor].sizes().vec()));
      state.optimizerState.push_back(statePiece(name, states[k], piece));
    }
    captureBuffers(store, state);
    state.shard = {group.rank(), group.size(), "zero"};
  }

  void restore(const CheckpointState &state,
               const std::string &where) override {
    checkOptimizerKind(state, config.kind, where);
    std::vector<const CheckpointOptimizerEntry *> entries =
        optimizerEntriesFor(state, names, where);
    std::vector<ParamState> restored;
    for (const ShardPiece &piece : flat.ownPieces())
      restored.push_back(
          sliceParamState(paramStateOf(*entries[piece.tensor]), piece));
    restoreModel(state, store, where);
    states = std::move(restored);
  }

  MemoryFootprint footprint() const override {
    MemoryFootprint bytes;
    bytes.paramBytes = flat.residentBytes();
    for (const at::Tensor &param : flat.params())
      if (param.grad().defined())
        bytes.gradBytes += int64_t(param.grad().nbytes());
    bytes.gradBytes += int64_t(reducer->bucketBytes());
    bytes.optimizerStateBytes = stateBytes(states);
    return bytes;
  }

private:
  ParameterStore &store;
  OptimizerConfig config;
  dist::Group group;
  std::vector<std::string> names;
  FlatParameterGroup flat;
  std::vector<ParamState> states;
  std::unique_ptr<dist::GradBucketReducer> reducer;
};

} // namespace

std::unique_ptr<ParameterSharding>
makeZeroSharding(Model &model, const OptimizerConfig &config,
                 const DataParallelContext &dp) {
  return std::make_unique<ZeroSharding>(model, config, dp);
}

} // namespace snn::runtime
