//===- MetricsLog.h - The JSON-lines training log ---------------*- C++ -*-===//
//
// `--log FILE`: one JSON object per line (docs/training.md, "Outputs"), keys
// in a fixed order, doubles with round-trip precision. Each line is flushed
// when written, so the log can be followed while training runs and a crash
// loses no finished step. A follower (--tensorboard) sees every line too.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_TRAINING_METRICSLOG_H
#define SNN_RUNTIME_TRAINING_METRICSLOG_H

#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Execution/EventKernelChoice.h"
#include "snn/Runtime/Execution/SegmentRecomputation.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"
#include "snn/Runtime/Optim/Metrics.h"
#include "snn/Runtime/Support/StepArena.h"
#include "snn/Schema/Manifest.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace snn::runtime {

/// CPU tensor bytes (TensorMemory.h) alive when the training steps began
/// (parameters, data, ...) and at most during them.
struct TensorBytes {
  int64_t beforeSteps = 0;
  int64_t peak = 0;
};

/// The plan's prediction next to what this rank measured, per training step
/// (docs/training.md, "Outputs").
struct PlanCheck {
  schema::PlanPrediction predicted;
  double stepSeconds = 0; ///< mean over the invocation's steps
  double commSeconds = 0; ///< waiting for collectives and transfers, per step
  int64_t memoryBytes = 0; ///< the steps' peak tensor bytes less what they found
  /// Optimizer state tensors per parameter of the run (predicted.optimizerStates is the
  /// plan's assumption).
  int64_t optimizerStates = 0;
};

/// What a rank's "end" event reports; the optional parts when measured.
struct RankEnd {
  int64_t steps = 0;
  MemoryFootprint footprint;
  int64_t peakResidentBytes = 0;
  std::optional<TensorBytes> tensors;
  std::optional<BubbleReport> bubble;
  std::optional<PlanCheck> planCheck;
  /// Linear calls on the spike kernels (--spike-linear-density), and those that were not.
  SpikeLinearCounts spikeLinear;
  /// Spiking blocks run fused and node by node, one-step layers.
  SpikingBlockCounts spikingBlocks;
  /// conv2d inputs kept as bits for the backward.
  SpikeBitsCounts spikeBits;
  RecomputationCounts recomputation;
  /// The step arena's layouts and what it served (StepArena.h), when installed.
  std::optional<StepArena::Stats> stepArena;
  /// conv2d calls on the event-driven kernels (--spike-conv-density), and dense ones.
  SpikeConvCounts spikeConv;
  /// Each layer shape under the automatic kernel choice (--spike-*-density auto):
  /// its crossover and the calls it decided.
  std::vector<EventKernelLayer> eventKernels;
};

/// The "eval" event as one line of JSON (also what `snn-run eval` prints).
std::string evalJson(const EvalMetrics &metrics);

class MetricsLog {
public:
  /// A log that writes nothing.
  MetricsLog() = default;
  /// Opens `path`: truncated for a new run, appended to when resuming.
  MetricsLog(const std::string &path, bool append);

  bool enabled() const { return file != nullptr; }

  /// Hands every line this log writes to `follower` as well, also when it
  /// has no file (--tensorboard without --log).
  void follow(std::function<void(const std::string &line)> follower) {
    this->follower = std::move(follower);
  }

  /// `comm` (partitioned runs): the step's collectives, written as
  /// "comm": [{"kind", "mesh_axis", "calls", "bytes"}, ...].
  void step(const StepMetrics &metrics,
            const std::vector<CommCount> *comm = nullptr);
  void epoch(const EpochMetrics &metrics);
  void eval(const EvalMetrics &metrics);
  /// A rank's own log (multi-rank runs): who wrote it, then at the end what
  /// the rank held and its peak resident memory.
  /// `mesh` (partitioned runs): adds "mesh": {"axes", "shape",
  /// "coordinates"}, this rank's place in it.
  void rankStart(int rank, int worldSize, const std::string &mode,
                 const MeshContext *mesh = nullptr);
  /// "end": steps, peak RSS and what the rank holds; "tensor_bytes":
  /// {"before_steps", "peak"}, "bubble" (pipelines): {"measured",
  /// "theoretical", "pipeline", "schedule"} and "plan_check": {"predicted",
  /// "measured", "ratio"} when present.
  void rankEnd(const RankEnd &end);

private:
  void writeLine(const std::string &line);

  struct Closer {
    void operator()(std::FILE *f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file;
  std::string path;
  std::function<void(const std::string &)> follower;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_TRAINING_METRICSLOG_H
