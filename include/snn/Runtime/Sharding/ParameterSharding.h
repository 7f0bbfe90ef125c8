//===- ParameterSharding.h - Where parameters and state live ----*- C++ -*-===//
//
// The data-parallel family differs only in what each rank keeps
// (docs/distributed.md, "Sharded training"):
//   - replicated (one process, dp): every rank holds every parameter,
//     gradient and optimizer state; gradients are all-reduced in buckets
//     that overlap with backward.
//   - zero (dp + ZeRO stage 1): parameters and gradients as dp, the optimizer
//     state of 1/N of the elements per rank; each rank updates its chunk,
//     then the parameters are all-gathered.
//   - fsdp: each rank keeps 1/N of the parameters, gradients and state;
//     a layer's parameters are all-gathered before it runs, freed after the
//     forward's last use, gathered again for backward, and their gradients
//     reduce-scattered.
// The Trainer runs the same step for all three through this interface.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SHARDING_PARAMETERSHARDING_H
#define SNN_RUNTIME_SHARDING_PARAMETERSHARDING_H

#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Execution/ParameterStore.h"
#include "snn/Runtime/Optim/Metrics.h"
#include "snn/Runtime/Optim/Optimizer.h"

#include <memory>
#include <string>
#include <vector>

namespace snn::runtime {

class Model;
struct DataParallelContext;

enum class ShardingMode { Replicated, Zero, Fsdp };

/// The artifact plan's choice, over the dp axis: mode fsdp or fsdp_tp ->
/// Fsdp; mode dp or tp with optimizer_strategy zero -> Zero; anything else ->
/// Replicated.
ShardingMode shardingModeOf(const Manifest &manifest);
/// "replicated", "zero", "fsdp".
const char *shardingModeName(ShardingMode mode);

class ParameterSharding {
public:
  virtual ~ParameterSharding() = default;

  virtual ShardingMode mode() const = 0;
  /// After loss.backward(): completes the gradients the update needs
  /// (averaged over the ranks).
  virtual void finishBackward() = 0;
  /// The optimizer step with learning rate `lr`; afterwards the next forward
  /// sees the updated parameters on every rank.
  virtual void step(double lr) = 0;
  /// Instead of step(): this step's gradients are dropped and nothing changes
  /// (a step skipped for its non-finite loss).
  virtual void dropGradients() = 0;
  /// Collective: every parameter holds its full values until release()
  /// (for --save-params and --export-onnx).
  virtual void materialize() {}
  virtual void release() {}
  /// Between materialize() and release(), after the full parameters were overwritten (a
  /// whole state loaded): each rank keeps its chunk of the new values (fsdp).
  virtual void reshard() {}
  /// This rank's part of a checkpoint: the whole model and optimizer
  /// (replicated), or its pieces plus `shard` (zero, fsdp).
  virtual void capture(CheckpointState &state) const = 0;
  /// Loads a whole checkpoint (readAnyCheckpoint merges sharded ones); the
  /// caller has checked it is of this model.
  virtual void restore(const CheckpointState &state,
                       const std::string &where) = 0;
  virtual MemoryFootprint footprint() const = 0;

  /// What an optimizer outside the runtime (the Python API's torch.optim) steps in place of
  /// step(): this rank's piece of each parameter, a view of what the next forward reads, and
  /// after finishBackward its averaged gradient (undefined: none). Replicated and zero: every
  /// parameter whole, its .grad; fsdp: the part of each parameter in this rank's chunk,
  /// flattened (possibly empty).
  struct LocalPiece {
    std::string name;
    at::Tensor values;
    at::Tensor grad;
    /// The piece's first element in the flattened parameter (0: the whole parameter).
    int64_t offset = 0;
  };
  virtual std::vector<LocalPiece> localPieces() const = 0;
};

/// Every parameter of `store` whole, with its .grad (replicated and zero's localPieces).
std::vector<ParameterSharding::LocalPiece> wholeParameterPieces(const ParameterStore &store);

/// Replicated: with `dp` (may be null or of size 1) gradients are averaged
/// over its group.
std::unique_ptr<ParameterSharding>
makeReplicatedSharding(Model &model, const OptimizerConfig &config,
                       const DataParallelContext *dp);
/// Collective over `dp`'s group.
std::unique_ptr<ParameterSharding>
makeZeroSharding(Model &model, const OptimizerConfig &config,
                 const DataParallelContext &dp);
/// Collective over `dp`'s group; installs itself as the model's execution
/// observer (it must outlive the model's forwards).
std::unique_ptr<ParameterSharding>
makeFsdpSharding(Model &model, const OptimizerConfig &config,
                 const DataParallelContext &dp);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SHARDING_PARAMETERSHARDING_H
