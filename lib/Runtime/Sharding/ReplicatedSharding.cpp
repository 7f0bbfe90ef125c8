//===- ReplicatedSharding.cpp - Every rank holds everything ---------------===//
//
// One process, and dp: the whole optimizer on every rank; with more than one
// rank the gradients are averaged by the bucketed all-reduce that overlaps
// with backward (GradBucketReducer).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Distributed/GradReducer.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"
#include "snn/Runtime/Sharding/ShardPieceState.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"

namespace snn::runtime {

namespace {

class ReplicatedSharding final : public ParameterSharding {
public:
  ReplicatedSharding(Model &model, const OptimizerConfig &config,
                     const DataParallelContext *dp)
      : store(model.params()),
        opt(config, store.parameterNames(), store.parameters()) {
    if (dp && dp->group.valid() && dp->size() > 1)
      reducer = std::make_unique<dist::GradBucketReducer>(dp->group,
                                                          store.parameters());
  }

  ShardingMode mode() const override { return ShardingMode::Replicated; }

  void finishBackward() override {
    if (reducer)
      reducer->finish();
  }

  void step(double lr) override { opt.step(lr); }

  void dropGradients() override { store.zeroGrad(); }

  void capture(CheckpointState &state) const override {
    captureModel(store, state);
    captureOptimizer(opt, state);
  }

  void restore(const CheckpointState &state,
               const std::string &where) override {
    // Both are checked before either changes.
    Optimizer restored = opt;
    restoreOptimizer(state, restored, where);
    restoreModel(state, store, where);
    opt = std::move(restored);
  }

  std::vector<LocalPiece> localPieces() const override {
    return wholeParameterPieces(store);
  }

  MemoryFootprint footprint() const override {
    MemoryFootprint bytes;
    for (const at::Tensor &param : store.parameters()) {
      bytes.paramBytes += int64_t(param.nbytes());
      if (param.grad().defined())
        bytes.gradBytes += int64_t(param.grad().nbytes());
    }
    if (reducer)
      bytes.bucketBytes = int64_t(reducer->bucketBytes());
    bytes.gradBytes += bytes.bucketBytes;
    bytes.optimizerStateBytes = stateBytes(opt.states());
    return bytes;
  }

private:
  ParameterStore &store;
  Optimizer opt;
  std::unique_ptr<dist::GradBucketReducer> reducer;
};

} // namespace

std::unique_ptr<ParameterSharding>
makeReplicatedSharding(Model &model, const OptimizerConfig &config,
                       const DataParallelContext *dp) {
  return std::make_unique<ReplicatedSharding>(model, config, dp);
}

} // namespace snn::runtime
