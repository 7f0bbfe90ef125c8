//===- CostModel.h - FLOPs, bytes and communication of a model ----*- C++ -*-===//
//
// Counting conventions (hand-checkable; the unit tests count them by hand):
//
//   forward FLOPs per output element (a multiply-add is 2 FLOPs)
//     linear        2 * in            (+1 with bias)
//     conv2d        2 * (C/groups) * kh * kw   (+1 with bias)
//     batch_norm    6   (2 for the batch statistics, 4 to normalise and apply the affine)
//     max_pool2d    kh * kw comparisons;  avg_pool2d  kh * kw
//     adaptive_avg_pool2d   (input elements / output elements)
//     flatten 0; dropout 1; add 1; mul 1
//     mean_time     T  (sum over the time steps and divide)
//     if_node 4 (charge 1, fire 1, reset 2); lif_node 7 and plif_node 7 (charge 4)
//     spiking_attention   4 * D  (D = C / heads: (v k^T) q is 4 D^2 L FLOPs for D L outputs)
//     other ops (reduce_mean, ...) 1
//   backward FLOPs = 2 x forward (gradients of the input and of the weights).
//
//   activation bytes kept for backward = the op's output (all T steps), except
//     flatten 0 (a view of its input) and neurons 2 x output (autograd keeps the spikes and
//     the membrane potential H of every step for the surrogate gradient).
//
// Every tensor is float32 (4 bytes). Parameters count trainable tensors; BatchNorm
// running statistics are buffers: replicated everywhere, no gradient, no optimizer state.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_COSTMODEL_H
#define SNN_PLANNER_COSTMODEL_H

#include "snn/Planner/ModelInfo.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace snn::planner {

constexpr int64_t kBytesPerElement = 4;

/// Seconds of one call at a size, measured at a few sizes: piecewise linear in log-log
/// between the points; above the largest, its rate (seconds per unit); below the smallest,
/// its seconds (a call's fixed cost is what is left at small sizes).
struct MeasuredCurve {
  std::vector<std::pair<double, double>> points; ///< (size, seconds), ascending size
  double secondsAt(double size) const;
};

/// What kind of work an op is, for the measured compute curves.
enum class WorkKind { Gemm, Conv2d, Neuron, BatchNorm, Pool, Elementwise };
inline constexpr int kWorkKinds = 6;

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, SendRecv };
inline constexpr int kCollectiveKinds = 4;

/// One model's whole training step in one process, by samples per step (calibrate
/// --model): what its ops' curves leave out (shapes unlike the measured ones, the autograd
/// engine, the loss and the update) is in it.
struct ModelStepTimes {
  std::string model; ///< where it was measured from
  int64_t parameters = 0;
  std::vector<int64_t> input; ///< batch dimension -1
  MeasuredCurve curve;
  /// Its spiking blocks run node by node; no points when the model has no blocks.
  MeasuredCurve nodeByNode;

  /// Its training steps as data-parallel replicas on as many ranks of the machine, as the
  /// trainer makes them (SyncBatchNorm, step metrics, gradient buckets), by samples per
  /// rank; by ranks.
  std::map<int64_t, MeasuredCurve> replicated;

  /// The curve of a run whose blocks are fused or not (the fused one where only it
  /// was measured).
  const MeasuredCurve &curveFor(bool fused) const {
    return fused || nodeByNode.points.empty() ? curve : nodeByNode;
  }
};

/// The entry of `byRanks` (measurements keyed by a group's or a job's size) whose size is
/// nearest `ranks`, the smaller on a tie; end() when there is none.
template <typename T>
typename std::map<int64_t, T>::const_iterator nearestByRanks(const std::map<int64_t, T> &byRanks,
                                                            int64_t ranks) {
  auto nearest = byRanks.end();
  for (auto it = byRanks.begin(); it != byRanks.end(); ++it)
    if (nearest == byRanks.end() ||
        std::llabs(it->first - ranks) < std::llabs(nearest->first - ranks))
      nearest = it;
  return nearest;
}

/// A machine's measured times (a device profile, `snn-run calibrate`): one training call
/// (forward and backward) of each kind of op by its work, one collective by its tensor's
/// bytes for each measured group size.
struct Calibration {
  std::string source; ///< for the rationale: which profile, measured where
  int64_t logicalCpus = 0;    ///< of the machine measured; 0: unknown
  int64_t threadsPerRank = 1; ///< during the measurement
  std::array<MeasuredCurve, kWorkKinds> compute;
  std::map<std::pair<CollectiveKind, int64_t>, MeasuredCurve> collectives;
  /// The CPU seconds one call costs all its ranks together (a message: both of its ends),
  /// where the profile measured it.
  std::map<std::pair<CollectiveKind, int64_t>, MeasuredCurve> cpu;
  std::vector<ModelStepTimes> modelSteps;
  /// By the job's ranks: the wait in a pair's all_reduce of `bytes` by the seconds each of
  /// its ranks computed before it (alone), every pair of the job at once
  /// (schema::WaitBetweenComputesCurve).
  struct WaitCurve {
    double bytes = 0;
    MeasuredCurve waits;
  };
  std::map<int64_t, WaitCurve> waitsBetweenComputes;

  /// The measured training step of `model` (same trainable parameter count and input
  /// shape), or null.
  const ModelStepTimes *modelStepOf(const ModelInfo &model) const;

  /// The collective's time over `ranks`: the curve of that group size, else of the
  /// nearest measured one scaled by the messages each waits for in turn (all_reduce:
  /// log2 ranks by recursive doubling or 2 (ranks - 1) around the ring, as
  /// schema/CollectiveAlgorithms.h says; gathers and scatters ranks - 1); 0 without a
  /// curve of the kind.
  double collectiveSeconds(CollectiveKind kind, int64_t ranks, double bytes) const;
  /// A collective of `ranks` while the job's other groups run theirs (`jobRanks` in all):
  /// on CPUs the job oversubscribes, a step waits as long as one of the job-size curve's
  /// steps (a peer may be descheduled), so the job's curve scaled to this group's steps
  /// (as above), when that is the slower; else collectiveSeconds.
  double concurrentCollectiveSeconds(CollectiveKind kind, int64_t ranks, int64_t jobRanks,
                                     double bytes) const;
  /// A collective of `ranks` that follows `computeSeconds` of its ranks' compute (alone)
  /// while every rank of a job of `jobRanks` computes: its own time alone
  /// (collectiveSeconds) and the wait for its peers, who get their share of the CPUs later,
  /// beyond a 2-rank all_reduce's time alone: the waits-between-computes curve of the job
  /// size nearest, the compute held to its measured range. nullopt without one.
  std::optional<double> busyCollectiveSeconds(CollectiveKind kind, int64_t ranks,
                                              int64_t jobRanks, double bytes,
                                              double computeSeconds) const;
  /// How much slower each rank computes when `ranks` share the machine: ranks x threads
  /// over the logical CPUs, at least 1 (the curves were measured with the CPUs to spare).
  double oversubscription(int64_t ranks) const;
  /// One message between two ranks of a job of `ranks`, all of them running: the smallest
  /// measured all-reduce of that group size over its steps (as above), each a message
  /// that waits for its receiver to be scheduled. The two-rank ping-pong of the
  /// send_recv curve runs with the CPUs to spare and misses that wait. 0 without a curve.
  double messageLatency(int64_t ranks) const;
  /// The CPU a call of `bytes` costs all its ranks while `ranks` share the machine: the
  /// cpu curve of the nearest group size; nullopt without one.
  std::optional<double> cpuSeconds(CollectiveKind kind, int64_t ranks, double bytes) const;
  /// The share of its ranks' time a call of `bytes` keeps their CPUs busy while `ranks`
  /// share the machine: cpu / (time x group size) of the nearest measured group, at most
  /// 1; nullopt without a cpu curve.
  std::optional<double> cpuShare(CollectiveKind kind, int64_t ranks, double bytes) const;
  /// The measured curve of `kind` whose group size is nearest `ranks`, and that size;
  /// {nullptr, 0} without one.
  std::pair<const MeasuredCurve *, int64_t> nearestCurve(CollectiveKind kind,
                                                         int64_t ranks) const;
};

/// Machine constants the time estimates use, or the measured calibration when one is
/// given. Without it only ratios matter for the decision: compute time against
/// communication time. Defaults describe one accelerator-class rank on a 10 GB/s link.
struct Hardware {
  double flopsPerSecond = 1.0e12;
  double linkBytesPerSecond = 1.0e10;
  double latencySeconds = 2.0e-5;  ///< per ring step of a collective, per send/recv
  int optimizerStatesPerParam = 2; ///< Adam: exp_avg and exp_avg_sq; SGD momentum 1
  std::shared_ptr<const Calibration> calibration;

  /// A point-to-point message of `bytes` between two ranks of a job of `jobRanks`: with a
  /// calibration and `allPairs` (every pair of the job exchanging at once, as data-parallel
  /// replicas of a pipeline do), its send_recv curve of that group size, else the two-rank
  /// curve's time, at least messageLatency(jobRanks); on CPUs the job oversubscribes, at
  /// least that in either case.
  double sendSeconds(int64_t bytes, int64_t jobRanks = 2, bool allPairs = true) const;
  /// The CPU time that message takes from the ranks at its two ends together: measured
  /// (Calibration::cpuSeconds of send_recv, of the job's size with `allPairs`, else of two
  /// ranks) where the profile has it, else both ends busy for the whole of sendSeconds.
  double messageCpuSeconds(int64_t bytes, int64_t jobRanks = 2, bool allPairs = true) const;
};

/// Cost of one op at a given batch size (global: the whole batch on one device).
struct OpCost {
  double forwardFlops = 0;
  double backwardFlops = 0;
  int64_t paramBytes = 0;
  int64_t bufferBytes = 0;
  int64_t outputBytes = 0;
  int64_t inputBytes = 0; ///< its activation operands, as the gradient it returns
  /// Kept from the forward for the backward, as the runtime keeps it (docs/planner.md):
  /// when the op runs node by node, and when it runs inside a fused spiking block.
  int64_t activationBytes = 0;
  int64_t fusedActivationBytes = 0;
};

OpCost opCost(const ModelInfo &model, int opIndex, int64_t batch);

/// The runtime's spiking blocks (its planSpikingBlocks): a 5-D batch_norm whose output only
/// a neuron reads, that neuron, and a max_pool2d that alone reads the neuron's spikes (two of
/// the three suffice when the neuron is one of them) run as one kernel. The index of the
/// first op of the block `opIndex` belongs to, or -1.
int spikingBlockStart(const ModelInfo &model, int opIndex);
/// Whether op `opIndex`'s output is spikes: a neuron's, or a max pool or flatten of them.
bool producesSpikes(const ModelInfo &model, int opIndex);

/// Sums over the model at one batch size.
struct ModelCost {
  double forwardFlops = 0;
  double backwardFlops = 0;
  int64_t paramBytes = 0;
  int64_t bufferBytes = 0;
  int64_t activationBytes = 0;
  int64_t largestOpParamBytes = 0;
  int64_t paramOps = 0; ///< ops holding trainable parameters (FSDP gathers each)
};

ModelCost modelCost(const ModelInfo &model, int64_t batch);

/// Bytes one rank sends in a ring collective of a `bytes`-sized tensor over `ranks`.
int64_t allReduceBytes(int64_t bytes, int64_t ranks);     ///< 2 (r-1)/r * bytes
int64_t allGatherBytes(int64_t bytes, int64_t ranks);     ///< (r-1)/r * bytes (full size)
int64_t reduceScatterBytes(int64_t bytes, int64_t ranks); ///< (r-1)/r * bytes (full size)

/// `count` collectives of one kind, each on a tensor of `tensorBytes` over `ranks`.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  int64_t ranks = 1;
  int64_t tensorBytes = 0;
  int64_t count = 1;
};

/// What a mode communicates per training step and rank.
struct Communication {
  int64_t bytes = 0;
  int64_t collectives = 0;
  int64_t latencySteps = 0; ///< ring steps + point-to-point messages (each pays latency)
  std::vector<CollectiveCall> calls;

  Communication &operator+=(const Communication &other) {
    bytes += other.bytes;
    collectives += other.collectives;
    latencySteps += other.latencySteps;
    calls.insert(calls.end(), other.calls.begin(), other.calls.end());
    return *this;
  }
  /// Ring bytes over the link plus latency per step; with a calibration, the measured
  /// time of each call instead. `jobRanks`: the ranks of the whole job, when its groups
  /// run their collectives at the same time (Calibration::concurrentCollectiveSeconds).
  double seconds(const Hardware &hw, int64_t jobRanks = 0) const;
  /// The CPU seconds the calls take from each of their ranks: their time x
  /// Calibration::cpuShare of the job's size where measured, else a call's time over its
  /// ranks twice (both ends of a two-rank call busy for its whole time).
  double rankCpuSeconds(const Hardware &hw, int64_t jobRanks) const;
};

/// The work of op `opIndex` at `batch` in its kind's unit (docs/planner.md): forward FLOPs
/// for linear and conv2d, input elements for neurons, BatchNorm and pooling, output elements
/// for the rest. `scale` is the rank's share (tensor parallelism).
std::pair<WorkKind, double> opWork(const ModelInfo &model, int opIndex, int64_t batch);
/// Seconds of one training call (forward and backward) of the op: the calibration's curve,
/// else its FLOPs over hw.flopsPerSecond.
double opTrainingSeconds(const ModelInfo &model, int opIndex, int64_t batch, double scale,
                         const Hardware &hw);

Communication allReduce(int64_t bytes, int64_t ranks);
Communication allGather(int64_t bytes, int64_t ranks);
Communication reduceScatter(int64_t bytes, int64_t ranks);

/// Data parallel (also ZeRO-1: its reduce-scatter of gradients plus all-gather of
/// updated parameters moves what one all-reduce moves): all-reduce of the gradients, one
/// call per gradient bucket of schema::kGradientBucketBytes.
Communication dataParallelCommunication(const ModelCost &cost, int64_t dp);
/// Data-parallel training's synchronised BatchNorm: per BatchNorm op, one all-reduce of its
/// channels' statistics in forward and one of their gradient sums in backward, over the dp
/// group. `channelShare[i]` is the rank's share of op i's channels (tensor parallelism;
/// 1 where absent).
Communication syncBatchNormCommunication(const ModelInfo &model, int64_t dp,
                                         const std::vector<double> &channelShare);
/// The step's loss and correct count, all-reduced over the dp group once per step.
Communication stepMetricsCommunication(int64_t dp);
/// What one pipeline rank synchronises after its step's last microbatch
/// (schema/TrainingCommunication.h): the step metrics broadcast over the pp group and, with
/// dp replicas, all-reduced over dp; its stages' gradients all-reduced over dp in one flat
/// tensor; its BatchNorms' running statistics (`batchNormChannels` in all) all-gathered and
/// its buffers (`bufferBytes`) broadcast over dp. A broadcast is priced as the all-gather of
/// the same bytes: both take r - 1 ring steps of a latency-bound tensor.
Communication pipelineStepCommunication(int64_t pp, int64_t dp, int64_t gradientBytes,
                                        int64_t batchNormChannels, int64_t bufferBytes);
/// FSDP: all-gather of every layer's parameters in forward and again in backward, and a
/// reduce-scatter of its gradients; one collective per parameter-holding op each.
Communication fsdpCommunication(const ModelCost &cost, int64_t dp);

} // namespace snn::planner

#endif
