//===- TrainCheckpoint.h - Model and optimizer in a checkpoint --*- C++ -*-===//
//
// Moves the training state between the live objects (ParameterStore,
// Optimizer, the CPU generator) and a CheckpointState, and refuses a
// checkpoint of another model by naming the first parameter that differs.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_TRAINCHECKPOINT_H
#define SNN_RUNTIME_CHECKPOINT_TRAINCHECKPOINT_H

#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Execution/ParameterStore.h"

#include <string>

namespace snn::runtime {

/// Copies (not aliases) every parameter and buffer into `state.model`.
void captureModel(const ParameterStore &store, CheckpointState &state);

/// Copies the optimizer's kind and per-parameter state into `state`.
void captureOptimizer(const Optimizer &optimizer, CheckpointState &state);

/// Throws Error unless `state.model` has exactly the store's entries (names,
/// kinds, shapes); the message names `where` and the first difference.
void checkSameModel(const CheckpointState &state, const ParameterStore &store,
                    const std::string &where);

/// checkSameModel, then copies the saved values into the store in place.
void restoreModel(const CheckpointState &state, ParameterStore &store,
                  const std::string &where);

/// Throws Error naming `where` unless the checkpoint holds `kind`'s state.
void checkOptimizerKind(const CheckpointState &state, OptimizerKind kind,
                        const std::string &where);

/// The whole-parameter optimizer entries of `names`, in that order; throws
/// Error naming `where` for a missing, extra, duplicate or piecewise entry.
std::vector<const CheckpointOptimizerEntry *>
optimizerEntriesFor(const CheckpointState &state,
                    const std::vector<std::string> &names,
                    const std::string &where);

/// The ParamState an entry describes.
ParamState paramStateOf(const CheckpointOptimizerEntry &entry);

/// Restores the optimizer's state; throws Error naming `where` if it was
/// saved by another optimizer or for other parameters.
void restoreOptimizer(const CheckpointState &state, Optimizer &optimizer,
                      const std::string &where);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_TRAINCHECKPOINT_H
