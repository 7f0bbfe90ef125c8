//===- Calibration.h - The machine the cost model prices with -----*- C++ -*-===//
//
// A machine's measured times (Calibration: curves of a device profile, `snn-run
// calibrate`; DeviceCalibration.h reads one) and the Hardware the estimates use: those
// curves when given, else default constants.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_CALIBRATION_H
#define SNN_PLANNER_CALIBRATION_H

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
  /// Its fused steps each right after other work (no points in profiles without them).
  MeasuredCurve cold;

  /// The curve of a run whose blocks are fused or not (the fused one where only it
  /// was measured); `cold`: of compute that follows other work, as a pipeline stage's
  /// microbatch follows the others' (the steady one where it was not measured).
  const MeasuredCurve &curveFor(bool fused, bool cold = false) const {
    if (cold && fused && !this->cold.points.empty())
      return this->cold;
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

/// One step of an all-reduce of `bytes` over `ranks` that took `seconds` (the algorithm's
/// steps as schema/CollectiveAlgorithms.h counts them).
double allReduceStepSeconds(int64_t ranks, double bytes, double seconds);

/// A machine's measured times (a device profile, `snn-run calibrate`): one training call
/// (forward and backward) of each kind of op by its work, one collective by its tensor's
/// bytes for each measured group size.
struct Calibration {
  std::string source; ///< for the rationale: which profile, measured where
  bool builtin = false; ///< the built-in profile of the reference machine kind
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
    /// pipelineMessages: the CPU one message took from its two ranks beyond their compute,
    /// by the tick's compute; empty where not measured.
    MeasuredCurve cpu;
  };
  std::map<int64_t, WaitCurve> waitsBetweenComputes;
  /// By the job's ranks: what a two-stage pipeline's tick took beyond its compute, by the
  /// tick's compute (schema::DeviceProfile::pipelineMessages; `bytes` its messages').
  std::map<int64_t, WaitCurve> pipelineMessages;
  /// By group size: the least time one step of the measured all-reduces took, over every
  /// size measured (calibrationFromProfile, from the profile's points as measured). A point
  /// of a loaded machine can only be too slow, so the least is the step's floor; the curve's
  /// first point alone (a 4 KiB all-reduce measured at 2.9 ms where 256 KiB took 0.33 ms)
  /// would price every message of a pipeline by one noisy measurement.
  std::map<int64_t, double> allReduceStepFloor;

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
  /// One message between two ranks of a job of `ranks`, all of them running: one step of
  /// the measured all-reduces of the nearest group size (allReduceStepFloor, else its
  /// smallest all-reduce over its steps, as above), each a message that waits for its
  /// receiver to be scheduled. The two-rank ping-pong of the
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
  /// What a message of `bytes` waits beyond sendSeconds(bytes, jobRanks, false) when its
  /// receiver is descheduled, on CPUs a job of `jobRanks` oversubscribes: the job size's
  /// all-pairs send_recv curve above that; 0 without the curve or spare CPUs.
  double descheduledMessageSeconds(int64_t bytes, int64_t jobRanks) const;
  /// Whether a job of `jobRanks` takes every CPU of the calibrated machine without
  /// oversubscribing it, and the profile measured waits between computes for that size:
  /// a collective or message between computes then waits for a peer whose backend thread
  /// needs a CPU a rank's compute holds.
  bool ranksFillCpus(int64_t jobRanks) const;
  /// A pipeline's message of `bytes` in a tick of `tickCompute` seconds (a forward and its
  /// backward): sendSeconds(bytes, jobRanks, false), or where the job's ranks take every
  /// CPU (ranksFillCpus), the longer of that and the profile's pipelineMessages for the job
  /// (beyond its messages' bytes, this one's sendSeconds more), else of a 2-rank
  /// send_recv's Calibration::busyCollectiveSeconds after half the tick (the receiver's
  /// thread waits for a CPU its rank's compute holds).
  /// With `measuredShape` (a job of two-stage pipelines on every pair of its ranks, as
  /// calibrate runs them), the profile's pipelineMessages whether or not the ranks fill the
  /// CPUs.
  double busyMessageSeconds(int64_t bytes, int64_t jobRanks, double tickCompute,
                            bool measuredShape = false) const;
  /// Whether the profile measured the CPU of a job of `jobRanks` ranks' pipelines' messages.
  bool measuredPipelineMessageCpu(int64_t jobRanks) const;
  /// The CPU a message of `bytes` of a job of two-stage pipelines takes from its ranks in a
  /// tick of `tickCompute` seconds: the profile's pipelineMessages CPU for the job where
  /// measured (beyond its messages' bytes, what messageCpuSeconds says this one's take
  /// more), else messageCpuSeconds.
  double pipelineMessageCpuSeconds(int64_t bytes, int64_t jobRanks, bool allPairs,
                                   double tickCompute) const;
};

} // namespace snn::planner

#endif // SNN_PLANNER_CALIBRATION_H
