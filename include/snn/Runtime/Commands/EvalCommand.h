//===- EvalCommand.h - The `snn-run eval` command ----------------------*- C++ -*-===//
#ifndef SNN_RUNTIME_COMMANDS_EVALCOMMAND_H
#define SNN_RUNTIME_COMMANDS_EVALCOMMAND_H

#include "snn/Runtime/Execution/KernelChoice.h"
#include "snn/Runtime/Data/DataSource.h"
#include "snn/Runtime/Optim/Loss.h"

#include <cstdint>
#include <string>

namespace snn::runtime {

struct DistributedRun;

/// The flags of `snn-run eval`, parsed and range-checked by snn-run's command
/// line; 0 / empty = not given.
struct EvalOptions {
  std::string artifactDir;
  DataOptions data;
  int64_t repeatTime = 0;
  int64_t batchSize = 256;
  /// Weights: a --save-params directory, or the latest checkpoint of a
  /// --checkpoint directory; neither = the artifact's initializers.
  std::string paramsDir;
  std::string checkpointDir;
  LossKind loss = LossKind::Mse;
  std::string logPath;
  int threads = 0;
  /// --spike-linear-density and --no-fusion (KernelChoice.h).
  KernelChoice kernels;
  /// Multi-rank run: rank 0 evaluates, the other ranks check and exit.
  const DistributedRun *distributed = nullptr;
};

/// Evaluates and prints the result on stdout as one JSON line,
/// {"event": "eval", "loss", "accuracy", "samples", "seconds"}.
void runEval(const EvalOptions &options);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_EVALCOMMAND_H
