//===- TrainSettings.h - From `snn-run train` flags to a run ----*- C++ -*-===//
//
// The checks of how the flags combine (each error names its flags; each value
// on its own was checked when the command line was read), the derived numbers
// of a run (total steps, optimizer, schedule), and the settings a resumed run
// must share with the run that wrote the checkpoint.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_TRAINING_TRAINSETTINGS_H
#define SNN_RUNTIME_TRAINING_TRAINSETTINGS_H

#include "snn/Runtime/Data/BatchLayout.h"
#include "snn/Runtime/Training/TrainOptions.h"
#include "snn/Runtime/Training/Trainer.h"

#include <string>
#include <utility>
#include <vector>

namespace snn::runtime {

using Settings = std::vector<std::pair<std::string, std::string>>;

/// Throws Error naming the flags for a missing or conflicting combination:
/// --epochs and --steps, --momentum without sgd, --schedule step without
/// --step-size, checkpointing flags without --checkpoint.
void validateTrainOptions(const TrainOptions &options);

/// A pipeline's batch: --batch-size over `replicas` dp replicas must cut into the plan's
/// `microbatches`, and so must the short last batch of `samples` that --keep-last trains
/// (`samples` 0: none known yet, as in the launcher before any rank starts). Throws Error.
void checkPipelineBatches(const TrainOptions &options, int64_t microbatches,
                          int64_t replicas, int64_t samples);

/// The run's numbers: total steps from --steps or --epochs x
/// `batchesPerEpoch`, optimizer and schedule. `settings` is left empty.
TrainConfig makeTrainConfig(const TrainOptions &options,
                            int64_t batchesPerEpoch);

/// Everything that shapes the trajectory, which a resumed run must repeat,
/// as text (names from the kinds' tables; checkpoints store these strings).
/// The run's length (--steps/--epochs) is not among them: a resumed run may
/// extend a finished one.
Settings trainSettings(const TrainOptions &options, const TrainConfig &config,
                       const Dataset &train, const BatchLayout &layout);

/// Throws Error naming the first setting that differs between the
/// checkpoint at `where` and this run.
void checkResumeSettings(const Settings &saved, const Settings &current,
                         const std::string &where);

} // namespace snn::runtime

#endif // SNN_RUNTIME_TRAINING_TRAINSETTINGS_H
