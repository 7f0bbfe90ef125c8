//===- Infer.cpp - The `snn-run infer` command ----------------------------===//

#include "snn/Runtime/Commands/InferCommand.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

namespace snn::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

} // namespace

void runInfer(const InferOptions &options) {
  Clock::time_point start = Clock::now();
  setIntraOpThreads(options.threads);
  checkParentDirectory(options.outputPath, "--output");

  Artifact artifact =
      loadRunArtifact(options.artifactDir, "infer", options.distributed);
  const Manifest &manifest = artifact.manifest;
  // Every rank holds the same program and weights: rank 0 runs the input.
  if (options.distributed && options.distributed->world &&
      options.distributed->world->rank() != 0)
    return;
  Executor executor(artifact.program, manifest.input.name,
                    manifest.output.name);
  at::Tensor input =
      prepareInput(readTensorNpy(options.inputPath), manifest.input,
                   options.repeatTime, options.inputPath);
  double loadMs = millisecondsSince(start);

  Clock::time_point runStart = Clock::now();
  at::Tensor output;
  {
    c10::InferenceMode guard;
    output = executor.run(input);
  }
  double runMs = millisecondsSince(runStart);
  checkOutput(output, manifest.output);
  writeTensorNpy(options.outputPath, output);

  if (options.verbose)
    std::cerr << "snn-run: " << options.outputPath << " "
              << formatShape(output.sizes()) << " load " << loadMs
              << " ms, run " << runMs << " ms, " << at::get_num_threads()
              << " threads" << std::endl;
}

} // namespace snn::runtime
