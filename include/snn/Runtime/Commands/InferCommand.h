//===- InferCommand.h - The `snn-run infer` command ---------------------*- C++ -*-===//
#ifndef SNN_RUNTIME_COMMANDS_INFERCOMMAND_H
#define SNN_RUNTIME_COMMANDS_INFERCOMMAND_H

#include "snn/Runtime/Execution/KernelChoice.h"
#include <cstdint>
#include <string>

namespace snn::runtime {

struct DistributedRun;

struct InferOptions {
  std::string artifactDir;
  std::string inputPath;
  std::string outputPath;
  /// > 0: the input is [N, ...] and is repeated this many times.
  int64_t repeatTime = 0;
  /// Intra-op threads; 0 means the machine's hardware concurrency.
  int threads = 0;
  /// --spike-linear-density and --no-fusion (KernelChoice.h).
  KernelChoice kernels;
  /// Print a one-line timing summary to stderr.
  bool verbose = false;
  /// > 0: stream the input this many samples at a time (bounded memory) and report
  /// samples/s; 0: the whole input at once.
  int64_t batchSize = 0;
  /// Multi-rank run: rank 0 runs the input, the other ranks check and exit.
  const DistributedRun *distributed = nullptr;
};

/// Loads the artifact, runs it on the input in inference mode and writes the
/// output. Throws Error on bad input.
void runInfer(const InferOptions &options);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_INFERCOMMAND_H
