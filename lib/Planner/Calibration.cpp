//===- Calibration.cpp - A machine's measured curves ----------------------===//
//
// Interpolating a measured curve, choosing the curve of the nearest group size and scaling
// it to another, the CPU the calls take, and a message's time (Hardware).
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/Calibration.h"
#include "snn/Schema/CollectiveAlgorithms.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace snn::planner {

double MeasuredCurve::secondsAt(double size) const {
  if (points.empty() || !(size > 0))
    return 0.0;
  const auto &[firstSize, firstSeconds] = points.front();
  const auto &[lastSize, lastSeconds] = points.back();
  // A call never costs less than the smallest one measured: its fixed cost (dispatch,
  // autograd, a collective's latency) is what dominates there.
  if (size <= firstSize)
    return firstSeconds;
  if (size >= lastSize)
    return lastSeconds * size / lastSize;
  auto upper = std::upper_bound(points.begin(), points.end(), size,
                                [](double v, const auto &p) { return v < p.first; });
  auto lower = upper - 1;
  double t = std::log(size / lower->first) / std::log(upper->first / lower->first);
  return std::exp(std::log(lower->second) + t * std::log(upper->second / lower->second));
}

using CurvesByGroup = std::map<std::pair<CollectiveKind, int64_t>, MeasuredCurve>;

/// The curve of `kind` in `curves` whose group size is nearest `ranks` (among those `usable`
/// accepts), and that size; {nullptr, 0} without one.
template <typename Usable>
static std::pair<const MeasuredCurve *, int64_t>
nearestOf(const CurvesByGroup &curves, CollectiveKind kind, int64_t ranks, Usable usable) {
  const MeasuredCurve *nearest = nullptr;
  int64_t nearestRanks = 0;
  for (const auto &[key, curve] : curves)
    if (key.first == kind && !curve.points.empty() && usable(key) &&
        (!nearest || std::llabs(key.second - ranks) < std::llabs(nearestRanks - ranks))) {
      nearest = &curve;
      nearestRanks = key.second;
    }
  return {nearest, nearestRanks};
}

std::pair<const MeasuredCurve *, int64_t> Calibration::nearestCurve(CollectiveKind kind,
                                                                    int64_t ranks) const {
  return nearestOf(collectives, kind, ranks, [](const auto &) { return true; });
}

/// The messages a collective of `bytes` over `ranks` waits for in turn, as the runtime runs
/// it: all_reduce by recursive doubling or a ring (schema/CollectiveAlgorithms.h), the
/// gathers and scatters around a ring, a message alone.
static double collectiveSteps(CollectiveKind kind, int64_t ranks, double bytes) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return double(schema::allReduceSteps(ranks, int64_t(bytes)));
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    return double(ranks - 1);
  case CollectiveKind::SendRecv:
    return 1.0;
  }
  return 1.0;
}

double Calibration::collectiveSeconds(CollectiveKind kind, int64_t ranks, double bytes) const {
  auto [nearest, nearestRanks] = nearestCurve(kind, ranks);
  if (!nearest)
    return 0.0;
  double seconds = nearest->secondsAt(bytes);
  if (kind == CollectiveKind::SendRecv || nearestRanks == ranks)
    return seconds;
  return seconds * collectiveSteps(kind, ranks, bytes) /
         collectiveSteps(kind, nearestRanks, bytes);
}

double Calibration::concurrentCollectiveSeconds(CollectiveKind kind, int64_t ranks,
                                                int64_t jobRanks, double bytes) const {
  double alone = collectiveSeconds(kind, ranks, bytes);
  if (jobRanks <= ranks || ranks < 2 || oversubscription(jobRanks) <= 1.0 ||
      !collectives.count({kind, jobRanks}))
    return alone;
  double contended = collectiveSeconds(kind, jobRanks, bytes) *
                     collectiveSteps(kind, ranks, bytes) /
                     collectiveSteps(kind, jobRanks, bytes);
  return std::max(alone, contended);
}

std::optional<double> Calibration::busyCollectiveSeconds(CollectiveKind kind, int64_t ranks,
                                                        int64_t jobRanks, double bytes,
                                                        double computeSeconds) const {
  auto nearest = nearestByRanks(waitsBetweenComputes, jobRanks);
  if (nearest == waitsBetweenComputes.end() || nearest->second.waits.points.empty())
    return std::nullopt;
  // The wait stops growing once a peer's lag is a whole share of the CPUs (7-9 ms after 8
  // ms of compute on 4 ranks of 2 CPUs, 7.3 after 35 ms): beyond the curve, its last wait.
  const WaitCurve &curve = nearest->second;
  const auto &points = curve.waits.points;
  double compute = std::clamp(computeSeconds, points.front().first, points.back().first);
  double wait = curve.waits.secondsAt(compute) -
                collectiveSeconds(CollectiveKind::AllReduce, 2, curve.bytes);
  return collectiveSeconds(kind, ranks, bytes) + std::max(0.0, wait);
}

const ModelStepTimes *Calibration::modelStepOf(const ModelInfo &model) const {
  int64_t parameters = 0;
  for (const OpInfo &op : model.ops)
    parameters += op.paramElements;
  for (const ModelStepTimes &step : modelSteps)
    if (step.parameters == parameters && step.input == model.inputShape &&
        !step.curve.points.empty())
      return &step;
  return nullptr;
}

double Calibration::oversubscription(int64_t ranks) const {
  if (logicalCpus <= 0)
    return 1.0;
  return std::max(1.0, double(ranks * threadsPerRank) / double(logicalCpus));
}

double allReduceStepSeconds(int64_t ranks, double bytes, double seconds) {
  return seconds / collectiveSteps(CollectiveKind::AllReduce, ranks, bytes);
}

double Calibration::messageLatency(int64_t ranks) const {
  if (ranks < 2)
    return 0.0;
  auto [nearest, nearestRanks] = nearestCurve(CollectiveKind::AllReduce, ranks);
  if (!nearest || nearestRanks < 2)
    return 0.0;
  auto floor = allReduceStepFloor.find(nearestRanks);
  if (floor != allReduceStepFloor.end())
    return floor->second;
  const auto &[bytes, seconds] = nearest->points.front();
  return seconds / collectiveSteps(CollectiveKind::AllReduce, nearestRanks, bytes);
}

std::optional<double> Calibration::cpuSeconds(CollectiveKind kind, int64_t ranks,
                                              double bytes) const {
  auto [nearest, nearestRanks] = nearestOf(cpu, kind, ranks, [](const auto &) { return true; });
  if (!nearest)
    return std::nullopt;
  return nearest->secondsAt(bytes);
}

std::optional<double> Calibration::cpuShare(CollectiveKind kind, int64_t ranks,
                                            double bytes) const {
  auto [nearest, nearestRanks] =
      nearestOf(cpu, kind, ranks, [&](const auto &key) { return collectives.count(key) > 0; });
  if (!nearest)
    return std::nullopt;
  double time = collectives.at({kind, nearestRanks}).secondsAt(bytes) * double(nearestRanks);
  return time > 0 ? std::min(1.0, nearest->secondsAt(bytes) / time) : 1.0;
}

double Hardware::messageCpuSeconds(int64_t bytes, int64_t jobRanks, bool allPairs) const {
  // As sendSeconds: the job's pairs all exchanging at once, else one pair at a time. The
  // CPU differs as much as the time (a 128 KiB message of the VGG's dp=2 x pp=2 took 1.15
  // ms of its ranks' CPU, of its pp=4 0.22 ms; the 4-rank and 2-rank curves 0.9 and 0.25).
  if (calibration)
    if (std::optional<double> measured = calibration->cpuSeconds(
            CollectiveKind::SendRecv, allPairs ? jobRanks : 2, double(bytes)))
      return *measured;
  return 2.0 * sendSeconds(bytes, jobRanks, allPairs);
}

/// The profile's pipelines of a job of `jobRanks`, where it measured both their waits and
/// their messages' CPU; else null.
static const Calibration::WaitCurve *pipelinesWithCpu(const Calibration *calibration,
                                                      int64_t jobRanks) {
  if (!calibration)
    return nullptr;
  auto measured = calibration->pipelineMessages.find(jobRanks);
  if (measured == calibration->pipelineMessages.end() || measured->second.cpu.points.empty() ||
      measured->second.waits.points.empty())
    return nullptr;
  return &measured->second;
}

bool Hardware::measuredPipelineMessageCpu(int64_t jobRanks) const {
  return pipelinesWithCpu(calibration.get(), jobRanks) != nullptr;
}

double Hardware::pipelineMessageCpuSeconds(int64_t bytes, int64_t jobRanks, bool allPairs,
                                           double tickCompute) const {
  double curve = messageCpuSeconds(bytes, jobRanks, allPairs);
  const Calibration::WaitCurve *measured = pipelinesWithCpu(calibration.get(), jobRanks);
  if (!measured)
    return curve;
  const auto &points = measured->cpu.points;
  double tick = std::clamp(tickCompute, points.front().first, points.back().first);
  double larger = std::max(
      0.0, curve - messageCpuSeconds(int64_t(measured->bytes), jobRanks, allPairs));
  return measured->cpu.secondsAt(tick) + larger;
}

// A pipeline's messages wait this as often as the CPUs are taken (Estimator::estimate): one
// pipeline's measured nearer the two-rank ping-pong (the MLP's pp=4: 0.44 ms a message where
// its 4-rank all-pairs curve said 1.2-1.5 ms), dp=2 x pp=2's nearer the all-pairs curve. On
// 20 held-out random models, the two-rank price alone had pp=4 under gpipe and interleaving
// at 1.29-1.33x their measured steps; charged this way, 1.15-1.17x.
double Hardware::descheduledMessageSeconds(int64_t bytes, int64_t jobRanks) const {
  if (!calibration || calibration->oversubscription(jobRanks) <= 1.0 ||
      !calibration->collectives.count({CollectiveKind::SendRecv, jobRanks}))
    return 0.0;
  double allPairs =
      calibration->collectiveSeconds(CollectiveKind::SendRecv, jobRanks, double(bytes));
  return std::max(0.0, allPairs - sendSeconds(bytes, jobRanks, false));
}

bool Hardware::ranksFillCpus(int64_t jobRanks) const {
  return calibration && calibration->logicalCpus > 0 &&
         jobRanks * calibration->threadsPerRank == calibration->logicalCpus &&
         calibration->waitsBetweenComputes.count(jobRanks) > 0;
}

double Hardware::busyMessageSeconds(int64_t bytes, int64_t jobRanks, double tickCompute,
                                    bool measuredShape) const {
  double seconds = sendSeconds(bytes, jobRanks, false);
  if (!calibration || (!ranksFillCpus(jobRanks) && !measuredShape))
    return seconds;
  // On 2 ranks of 2 CPUs a pipeline's tick took 0.5-1 ms beyond its compute where the
  // ping-pong of its message took 0.07 ms (20 random models' pp=2, 2 to 4.7 times their
  // predicted step): the ranks post and wait on transfers while the other computes, and
  // the backend's threads wait for a CPU. calibrate measures it as such a pipeline.
  auto measured = calibration->pipelineMessages.find(jobRanks);
  if (measured != calibration->pipelineMessages.end() &&
      !measured->second.waits.points.empty()) {
    const auto &points = measured->second.waits.points;
    double tick = std::clamp(tickCompute, points.front().first, points.back().first);
    double larger = std::max(
        0.0, seconds - sendSeconds(int64_t(measured->second.bytes), jobRanks, false));
    return std::max(seconds, measured->second.waits.secondsAt(tick) + larger);
  }
  std::optional<double> busy = calibration->busyCollectiveSeconds(
      CollectiveKind::SendRecv, 2, jobRanks, double(bytes), tickCompute / 2.0);
  return busy ? std::max(seconds, *busy) : seconds;
}

double Hardware::sendSeconds(int64_t bytes, int64_t jobRanks, bool allPairs) const {
  if (!calibration)
    return double(bytes) / linkBytesPerSecond + latencySeconds;
  // The job size's pairs exchanging at once if they do and were measured, else the two-rank
  // ping-pong, which misses the wait for a descheduled receiver: then, and whenever the job
  // oversubscribes the CPUs, at least one ring step of the job's all-reduce. (On 4 ranks of 2 CPUs the
  // all-pairs ping-pong is bimodal: 0.14 and 1.25 ms for 4 KiB in two calibrations minutes
  // apart, where the ring steps took 0.90 and 0.97 ms.)
  bool measured =
      allPairs && calibration->collectives.count({CollectiveKind::SendRecv, jobRanks}) > 0;
  double seconds = calibration->collectiveSeconds(CollectiveKind::SendRecv,
                                                  measured ? jobRanks : 2, double(bytes));
  if (!measured || calibration->oversubscription(jobRanks) > 1.0)
    seconds = std::max(seconds, calibration->messageLatency(jobRanks));
  return seconds;
}

} // namespace snn::planner
