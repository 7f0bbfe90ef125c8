//===- Infer.cpp - The `snn-run infer` command ----------------------------===//

#include "snn/Runtime/Commands/InferCommand.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Pipeline/PipelineSync.h"
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

/// A pipeline: every rank (of dp replica 0) runs its stages on the whole
/// input; the last stage's output goes to the others over the pp group.
/// Returns it (on every rank of the replica; undefined on the others).
at::Tensor inferPipeline(const Artifact &artifact, const DistributedRun *run,
                         const at::Tensor &input) {
  MeshContext mesh = createRunMesh(run, artifact.manifest);
  PipelinePlace where = pipelinePlaceOf(artifact.dir, artifact.manifest, mesh);
  if (where.replica != 0)
    return at::Tensor();
  Model model(artifact);
  model.setMesh(&mesh);
  PipelineEngine engine(model, where, LossKind::Mse);
  at::Tensor output;
  {
    c10::InferenceMode guard;
    output = engine.forward(input);
  }
  return broadcastFromLastStage(output, where);
}

} // namespace

void runInfer(const InferOptions &options) {
  Clock::time_point start = Clock::now();
  setIntraOpThreads(options.threads);
  checkParentDirectory(options.outputPath, "--output");

  const DistributedRun *run = options.distributed;
  Artifact artifact = loadRunArtifact(options.artifactDir, "infer", run);
  const Manifest &manifest = artifact.manifest;
  const bool partitioned = isPartitioned(manifest);
  const bool manyRanks = run && run->world;
  const int rank = manyRanks ? run->world->rank() : 0;
  if (isPipeline(manifest)) {
    at::Tensor input = prepareInput(readTensorNpy(options.inputPath), manifest.input,
                                    options.repeatTime, options.inputPath);
    double loadMs = millisecondsSince(start);
    Clock::time_point runStart = Clock::now();
    at::Tensor output = inferPipeline(artifact, run, input);
    if (rank != 0)
      return;
    checkOutput(output, manifest.output);
    writeTensorNpy(options.outputPath, output);
    if (options.verbose)
      std::cerr << "snn-run: " << options.outputPath << " " << formatShape(output.sizes())
                << " load " << loadMs << " ms, run " << millisecondsSince(runStart)
                << " ms (pipeline of " << manifest.stageCount() << " stages), "
                << at::get_num_threads() << " threads" << std::endl;
    return;
  }
  // The data-parallel family's ranks hold the same program and weights:
  // rank 0 runs the input. A partitioned program needs every rank (each runs
  // its part on the whole input); it ends replicated, so rank 0's output is
  // the whole output and rank 0 alone writes it.
  if (!partitioned && rank != 0)
    return;
  MeshContext mesh = partitioned || !manyRanks ? createRunMesh(run, manifest)
                                               : MeshContext();
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
    output = executor.run(input, false, nullptr, nullptr, &mesh);
  }
  double runMs = millisecondsSince(runStart);
  if (rank != 0)
    return;
  checkOutput(output, manifest.output);
  writeTensorNpy(options.outputPath, output);

  if (options.verbose)
    std::cerr << "snn-run: " << options.outputPath << " "
              << formatShape(output.sizes()) << " load " << loadMs
              << " ms, run " << runMs << " ms, " << at::get_num_threads()
              << " threads" << std::endl;
}

} // namespace snn::runtime
