//===- TrainCommand.h - The `snn-run train` command --------------------*- C++ -*-===//
#ifndef SNN_RUNTIME_COMMANDS_TRAINCOMMAND_H
#define SNN_RUNTIME_COMMANDS_TRAINCOMMAND_H

#include "snn/Runtime/Training/TrainOptions.h"

namespace snn::runtime {

/// Loads the artifact and the data, trains (or resumes training) and writes
/// the requested outputs. Throws Error on bad input or a non-finite loss.
void runTrain(const TrainOptions &options);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_TRAINCOMMAND_H
