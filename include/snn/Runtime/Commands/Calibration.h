//===- Calibration.h - Measuring kernels and collectives -------*- C++ -*-===//
//
// The measurements behind `snn-run calibrate` (CalibrateCommand.h): each
// compute kind runs the kernel the executor runs for it (LayerOps.cpp,
// NeuronOps.cpp: threadedLinear, at::conv2d, the fused LIF kernel, the
// runtime's BatchNorm and max-pool kernels, at::add) forward and backward
// through autograd, as one training call does; each collective runs through
// SNNDistributed on a real process group. A point's time is the median over
// repeated samples after a warm-up, and its size is in the unit the planner
// counts (DeviceProfile.h, include/snn/Planner/CostModel.h).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_COMMANDS_CALIBRATION_H
#define SNN_RUNTIME_COMMANDS_CALIBRATION_H

#include "snn/Schema/DeviceProfile.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace snn::dist {
class World;
}

namespace snn::runtime {

/// How a point is timed.
struct CalibrationTiming {
  int warmups = 1; ///< untimed calls first (allocator, BLAS packing, Gloo pairs)
  int repeats = 5; ///< timed samples; the point is their median
  /// A sample repeats the call until it lasts about this long, so that the
  /// clock's resolution and one-off jitter do not dominate small calls.
  double minSampleSeconds = 0.002;
  /// Interleaved samples: each sample starts with one call timed by itself (the call
  /// cold: after the other calls of the round, its data out of the caches and its freed
  /// buffers reused by them), the sample being the calls after it (warm, as a loop of
  /// the same call runs).
  bool firstCallApart = false;
};

/// How far a compute point may stray from its neighbours before calibrate
/// measures it again (suspectComputePoints).
inline constexpr double kSuspectFactor = 2.0;

/// The points of `curve` (ascending sizes) that break the shape every kind's
/// curve has: a point more than kSuspectFactor times slower than the next,
/// larger one, or a last point whose time per unit is more than that factor
/// above the point before it (the time per unit of a kind's calls falls or
/// grows slowly with their size). The first point's time per unit is the
/// call's fixed cost and may be far above the rest.
std::vector<size_t> suspectComputePoints(const schema::ComputeCurve &curve);

/// Rounds of remeasureSuspectPoints.
inline constexpr int kSuspectRemeasures = 2;

/// Measures the suspect points of `curve` again (`measure(point)`: seconds), in up to
/// kSuspectRemeasures rounds while any is left, each keeping the faster time: a host's slow
/// spell during one point's samples only ever adds time, and a point that is truly that slow
/// measures the same again.
void remeasureSuspectPoints(schema::ComputeCurve &curve,
                            const std::function<double(size_t)> &measure);

/// The median of `values` (the mean of the middle two of an even count); not empty.
double median(std::vector<double> values);
/// Median seconds of one call of `call` (see CalibrationTiming).
double medianSeconds(const std::function<void()> &call, const CalibrationTiming &timing);
/// The median seconds of each of `calls`, their samples taken in rounds over all of them
/// (sample r of every call before sample r + 1 of any), so that a slow spell of a shared
/// host spreads over every call instead of landing on a few. Each call runs
/// `timing.warmups` times first; a sample repeats it `callsPerSample[i]` times (fixed:
/// ranks of a collective must agree on every count), or, when that is empty, as often as
/// `timing.minSampleSeconds` needs by one timed call (after the first call timed apart,
/// with `timing.firstCallApart`). `onRound` (may be empty) is told each round's index
/// before it runs; `beforeSample` (may be empty) runs untimed before each sample.
std::vector<double> interleavedMedianSeconds(const std::vector<std::function<void()>> &calls,
                                             const CalibrationTiming &timing,
                                             const std::function<void(int)> &onRound,
                                             std::vector<int64_t> callsPerSample = {},
                                             const std::function<void()> &beforeSample = {});

/// interleavedMedianSeconds' rounds, which may be taken at several times of a calibration
/// (a shared host's slow spells last tens of seconds): each call runs `timing.warmups`
/// times and its samples are sized on construction, a round() takes one sample of every
/// call in turn, medians() is each call's median over all its samples so far (and
/// firstCallMedians() that of the samples' first calls, with `timing.firstCallApart`).
class InterleavedSampler {
public:
  InterleavedSampler(std::vector<std::function<void()>> calls, const CalibrationTiming &timing,
                     std::vector<int64_t> callsPerSample = {},
                     std::function<void()> beforeSample = {});
  void round();
  std::vector<double> medians() const;
  /// Empty without `timing.firstCallApart`.
  std::vector<double> firstCallMedians() const;

private:
  std::vector<std::function<void()>> calls;
  std::vector<int64_t> callsPerSample;
  bool firstCallApart = false;
  std::function<void()> beforeSample;
  std::vector<std::vector<double>> samples, firstCalls;
};

/// x [rows, in] through a Linear layer with bias to [rows, out].
struct LinearShape {
  int64_t rows = 0, in = 0, out = 0;
};
/// x [batch, in, height, width] through a 3x3 convolution with padding 1
/// and bias to [batch, out, height, width].
struct ConvShape {
  int64_t batch = 0, in = 0, out = 0, height = 0, width = 0;
};

/// The planner's forward FLOPs: 2 * in + 1 per output element.
double linearWork(const LinearShape &shape);
/// 2 * in * 3 * 3 + 1 per output element.
double convWork(const ConvShape &shape);

/// The configurations measured per kind. Element kinds take tensor shapes:
/// neuron [T, N, ...]; batch_norm and max_pool [B, C, H, W] (H, W even);
/// elementwise any.
struct CalibrationSizes {
  std::vector<LinearShape> gemm;
  std::vector<ConvShape> conv2d;
  std::vector<std::vector<int64_t>> neuron, batchNorm, maxPool, elementwise;
};

/// The sizes of the reference models (Linear 64..2048 features, T*N 32..512;
/// convolutions of 8..128 channels on 8x8..64x64 images), or a few small
/// ones for `quick` (tests).
CalibrationSizes defaultCalibrationSizes(bool quick);

/// Called before each point: what is measured ("gemm", "all_reduce on 2
/// ranks"), the point's index and the curve's point count.
using CalibrationProgressFn =
    std::function<void(const std::string &what, size_t index, size_t count)>;
/// interleavedMedianSeconds' onRound reporting `what` to `progress` (may be empty) as
/// round r of timing.repeats.
std::function<void(int)> roundProgress(const CalibrationProgressFn &progress, std::string what,
                                       const CalibrationTiming &timing);

/// One curve per kind of schema::kComputeKinds, in that order, each point's
/// size in the planner's unit, sorted ascending (configurations of equal
/// size keep the faster). Runs on the calling thread with the intra-op
/// threads already set.
std::vector<schema::ComputeCurve> measureCompute(const CalibrationSizes &sizes,
                                                 const CalibrationTiming &timing,
                                                 const CalibrationProgressFn &progress);

/// Tensor sizes (bytes) of the communication curves: 4 KiB .. 16 MiB, or up
/// to 1 MiB for `quick`.
std::vector<int64_t> defaultMessageBytes(bool quick);

/// all_reduce, all_gather and reduce_scatter over every rank of `world` at
/// each of `bytes` (the whole tensor, rounded to whole float32 elements per
/// rank), and with `sendRecv` a ping-pong of ranks 2i and 2i + 1, all pairs
/// at once (its curve has the group's size as ranks: one transfer while the
/// group's other pairs exchange theirs). Every rank must call it with the same
/// arguments; the times are rank 0's.
std::vector<schema::CommunicationCurve>
measureCollectives(dist::World &world, const std::vector<int64_t> &bytes, bool sendRecv,
                   const CalibrationTiming &timing, const CalibrationProgressFn &progress);

/// The tensor of measureWaitsBetweenComputes' all_reduces: a layer's activations of a small
/// microbatch, as a pipeline stage's tensor-parallel collectives move them.
inline constexpr int64_t kWaitBetweenComputesBytes = 16 << 10;

/// The job's ranks in pairs ({0, 1}, {2, 3}, ...), all pairs at once, each alternating a
/// compute with an all_reduce of kWaitBetweenComputesBytes between its two ranks, at computes
/// of about 0.125, 0.5, 2 and 8 ms (GEMMs, their time measured on rank 0 alone):
/// schema::WaitBetweenComputesCurve. Every rank must call it; a job of fewer than 2 ranks or
/// an odd one gets a curve without points.
schema::WaitBetweenComputesCurve
measureWaitsBetweenComputes(dist::World &world, const CalibrationTiming &timing,
                            const CalibrationProgressFn &progress);

/// The job's ranks in pairs, all pairs at once, each a two-stage pipeline (the lower rank
/// the first stage) running 1F1B steps of 8 microbatches whose forwards and backwards are
/// GEMMs (a backward twice its forward) and whose messages are kWaitBetweenComputesBytes,
/// sent and received as PipelineEngine does, at ticks (a forward and its backward) of
/// about 0.125, 0.5, 2 and 8 ms: what a tick took beyond its compute, the curve's points
/// (schema::DeviceProfile::pipelineMessages). Every rank must call it; a job of fewer than
/// 2 ranks or an odd one gets a curve without points.
schema::WaitBetweenComputesCurve measurePipelineMessages(dist::World &world,
                                                         const CalibrationTiming &timing,
                                                         const CalibrationProgressFn &progress);

/// The ranks' results as the calibrate parent reads them back: one line
/// "KIND RANKS SIZE SECONDS" per point, "... CPU_SECONDS" for a curve with CPU
/// times (cpuPoints).
std::string formatCommunicationResults(const std::vector<schema::CommunicationCurve> &curves);
/// Reads formatCommunicationResults' text back; throws Error naming `name`
/// and the line for anything else.
std::vector<schema::CommunicationCurve> parseCommunicationResults(const std::string &text,
                                                                  const std::string &name);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_CALIBRATION_H
