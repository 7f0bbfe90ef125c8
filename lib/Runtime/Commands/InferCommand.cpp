//===- Infer.cpp - The `snn-run infer` command ----------------------------===//

#include "snn/Runtime/Commands/InferCommand.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Execution/ConvolutionLayout.h"
#include "snn/Runtime/Execution/EventKernelChoice.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"
#include "snn/Runtime/Pipeline/PipelineSync.h"
#include "snn/Runtime/Support/NpyStream.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <filesystem>
#include <iostream>
#include <thread>

namespace snn::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Runs one chunk of the input ([T, n, ...] as the program takes it) and returns its output.
using ChunkRunner = std::function<at::Tensor(const at::Tensor &)>;

/// What streaming measured.
struct StreamStats {
  int64_t samples = 0, chunks = 0;
  std::vector<int64_t> outputShape;
};

/// The input file's batch dimension: 0 of a static [N, ...] input repeated over time or of a
/// program whose input is not time-major, else 1 ([T, N, ...]).
size_t inputBatchDim(at::IntArrayRef shape, const TensorSpec &spec, int64_t repeatTime) {
  return takesStaticInput(shape, spec, repeatTime) || !spec.timeMajor ? 0 : 1;
}

/// Reads the input `batchSize` samples at a time (all at once for 0), runs each chunk and,
/// if `writes`, puts its output where it belongs in the output file: only one chunk of
/// each is held at a time.
StreamStats streamChunks(const InferOptions &options, const Manifest &manifest, bool writes,
                         const ChunkRunner &run) {
  NpyChunkReader reader(options.inputPath);
  std::vector<int64_t> shape = reader.shape();
  size_t inDim = inputBatchDim(shape, manifest.input, options.repeatTime);
  if (shape.size() <= inDim)
    throw Error(options.inputPath + ": input has shape " + formatShape(shape) +
                ", the artifact expects " + formatShape(manifest.input.shape) +
                (options.repeatTime > 0 ? " per time step (with --repeat-time)" : ""));
  int64_t total = shape[inDim];
  if (total == 0)
    throw Error(options.inputPath + ": input has no samples (dimension " +
                std::to_string(inDim) + " of " + formatShape(shape) + " is 0)");
  int64_t chunk = options.batchSize > 0 ? std::min(options.batchSize, total) : total;
  size_t outDim = manifest.output.timeMajor ? 1 : 0;
  std::unique_ptr<NpyChunkWriter> writer;
  StreamStats stats;
  for (int64_t first = 0; first < total; first += chunk, ++stats.chunks) {
    int64_t count = std::min(chunk, total - first);
    shape[inDim] = count;
    std::vector<float> data = reader.read(inDim, first, count);
    at::Tensor x = at::from_blob(data.data(), shape, at::kFloat);
    at::Tensor y = run(prepareInput(x, manifest.input, options.repeatTime, options.inputPath));
    if (!writes)
      continue;
    checkOutput(y, manifest.output);
    if (y.dim() <= int64_t(outDim) || y.size(int64_t(outDim)) != count)
      throw Error("program output has shape " + formatShape(y.sizes()) + " for " +
                  std::to_string(count) + " samples (dimension " + std::to_string(outDim) +
                  " should be the batch)");
    y = y.contiguous();
    if (!writer) {
      stats.outputShape = y.sizes().vec();
      stats.outputShape[outDim] = total;
      writer = std::make_unique<NpyChunkWriter>(options.outputPath, stats.outputShape);
    }
    writer->write(outDim, first, count, y.data_ptr<float>());
  }
  if (writer)
    writer->finish();
  stats.samples = total;
  return stats;
}

void report(const InferOptions &options, const StreamStats &stats, double loadSeconds,
            double runSeconds, const std::string &what) {
  if (!options.verbose && options.batchSize == 0)
    return;
  char timing[96];
  std::snprintf(timing, sizeof(timing), "run %.3f ms (%.1f samples/s", runSeconds * 1000.0,
                double(stats.samples) / runSeconds);
  std::cerr << "snn-run: " << options.outputPath << " " << formatShape(stats.outputShape)
            << ": " << stats.samples << " samples in " << runSeconds << " s, " << timing;
  if (options.batchSize > 0)
    std::cerr << ", " << stats.chunks << " batches of up to " << options.batchSize;
  std::cerr << "), load " << loadSeconds * 1000.0 << " ms" << what << ", "
            << at::get_num_threads() << " threads";
  SpikeLinearCounts spikes = spikeLinearCounts();
  if (spikes.any())
    std::cerr << ", " << spikes.calls << " Linear calls on spike kernels (mean density "
              << spikes.meanDensity << "), " << spikes.denser + spikes.notSpikes << " dense";
  if (SpikeConvCounts conv = spikeConvCounts(); conv.calls + conv.dense > 0)
    std::cerr << ", " << conv.calls << " conv2d calls on the spike kernel, " << conv.dense
              << " dense";
  if (SpikingBlockCounts blocks = spikingBlockCounts(); blocks.any())
    std::cerr << ", spiking blocks " << blocks.fused << " fused, " << blocks.unfused
              << " node by node, " << blocks.oneStepLayers << " one-step layers";
  if (int64_t convs = channelsLastConvolutions(); convs > 0)
    std::cerr << ", " << convs << " conv2d calls channels-last";
  std::cerr << std::endl;
  for (const EventKernelLayer &layer : eventKernelLayers()) {
    const KernelCrossover &c = layer.crossover;
    std::cerr << "snn-run: " << layer.key << ": " << layer.eventCalls << " calls event-driven, "
              << layer.denseCalls << " dense, mean density " << layer.meanDensity()
              << "; event-driven up to density " << c.threshold
              << (layer.fromFile ? " (kept for this machine: dense " : " (measured: dense ")
              << c.denseSeconds * 1e3 << " ms, event-driven " << c.eventSeconds * 1e3
              << " ms at density " << c.density << ", " << c.fixedSeconds * 1e3
              << " ms without spikes)" << std::endl;
  }
}

/// -v: each neuron layer's firing rate over the whole input and the kernel
/// that ran it, one line each.
void reportFiring(const FiringCounts &firing) {
  if (firing.empty())
    return;
  size_t width = 5;
  for (const LayerFiring &layer : firing.layers())
    width = std::max(width, layer.layer.size());
  std::cerr << "snn-run: firing rates\n";
  char line[64];
  std::snprintf(line, sizeof(line), "  %-*s  %8s  ", int(width), "layer", "rate");
  std::cerr << line << "kernel\n";
  for (const LayerFiring &layer : firing.layers()) {
    std::snprintf(line, sizeof(line), "%8.6f", layer.rate());
    std::cerr << "  " << layer.layer << std::string(width - layer.layer.size(), ' ') << "  "
              << line << "  " << layer.kernel << "\n";
  }
  std::cerr << std::flush;
}

/// -v on a pipeline: collective over the world (null: one process). Replica 0's ranks
/// counted their stages' layers (a tp rank its slice); the other replicas ran nothing and
/// add zeros. Rank 0 prints every stage's layers in model order.
void reportPipelineFiring(const MeshContext &mesh, const Model *model,
                          const FiringCounts &mine, int rank) {
  const dist::Group *world = mesh.world().valid() ? &mesh.world() : nullptr;
  FiringCounts firing = mine;
  sumPipelineFiring(world, pipelineFiringLayers(world, model, mine), firing);
  if (rank == 0)
    reportFiring(firing);
}

/// A pipeline: every rank of dp replica 0 runs its stages on each chunk; the last stage's
/// output goes to the others over the pp group, and rank 0 writes it.
void inferPipeline(const InferOptions &options, const Artifact &artifact,
                   const DistributedRun *run, int rank, Clock::time_point start) {
  MeshContext mesh = createRunMesh(run, artifact.manifest);
  PipelinePlace where = pipelinePlaceOf(artifact, mesh);
  if (where.replica != 0) {
    if (options.verbose) // the firing counts' collectives span the world
      reportPipelineFiring(mesh, nullptr, FiringCounts(), rank);
    return;
  }
  Model model(artifact);
  model.setMesh(&mesh);
  FiringCounts firing;
  model.setFiringCounts(options.verbose ? &firing : nullptr);
  PipelineEngine engine(model, where, LossKind::Mse);
  double loadSeconds = secondsSince(start);
  Clock::time_point runStart = Clock::now();
  StreamStats stats = streamChunks(options, artifact.manifest, rank == 0,
                                   [&](const at::Tensor &input) {
                                     at::Tensor output;
                                     {
                                       c10::InferenceMode guard;
                                       output = engine.forward(input);
                                     }
                                     return broadcastFromLastStage(output, where);
                                   });
  model.setFiringCounts(nullptr);
  if (rank == 0)
    report(options, stats, loadSeconds, secondsSince(runStart),
           " (pipeline of " + std::to_string(artifact.manifest.stageCount()) + " stages)");
  if (options.verbose)
    reportPipelineFiring(mesh, &model, firing, rank);
}

} // namespace

void runInfer(const InferOptions &options) {
  Clock::time_point start = Clock::now();
  setIntraOpThreads(options.threads);
  applyKernelChoice(options.kernels);
  checkParentDirectory(options.outputPath, "--output");

  const DistributedRun *run = options.distributed;
  Artifact artifact = loadRunArtifact(options.artifactDir, "infer", run);
  const Manifest &manifest = artifact.manifest;
  const bool partitioned = artifact.run.partitioned;
  const bool manyRanks = run && run->world;
  const int rank = manyRanks ? run->world->rank() : 0;
  if (artifact.run.pipeline)
    return inferPipeline(options, artifact, run, rank, start);
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
  double loadSeconds = secondsSince(start);
  Clock::time_point runStart = Clock::now();
  FiringCounts firing;
  RunContext context;
  context.mesh = &mesh;
  context.firing = options.verbose ? &firing : nullptr;
  StreamStats stats =
      streamChunks(options, manifest, rank == 0, [&](const at::Tensor &input) {
        c10::InferenceMode guard;
        return executor.run(input, context);
      });
  double runSeconds = secondsSince(runStart);
  // A partitioned program's ranks each count their slice of a split layer.
  if (options.verbose && partitioned && manyRanks && !firing.empty()) {
    at::Tensor counts = at::empty({2 * int64_t(firing.layers().size())}, at::kDouble);
    firing.pack(counts.data_ptr<double>());
    dist::allReduce(mesh.world(), counts, dist::ReduceOp::Sum);
    firing.unpack(counts.data_ptr<double>());
  }
  if (rank == 0) {
    report(options, stats, loadSeconds, runSeconds, "");
    if (options.verbose)
      reportFiring(firing);
  }
}

} // namespace snn::runtime
