//===- CalibrationCollectives.cpp - Timing collectives on real ranks ------===//
//
// Every rank runs the same calls in the same order (collectives must match),
// so the number of calls per sample depends only on the size, never on a
// rank's own clock. A barrier starts each sample together; rank 0's clock
// times it, which is the collective's time since no rank leaves a collective
// before every rank has entered it. The waits between computes are each
// rank's own time inside its pair's all_reduce, averaged over the ranks: a
// pair's ranks wait unequally (the later one hardly at all). The pipelines' messages are
// what a tick of each pair's two-stage pipeline took beyond its own compute, the step
// timed on each rank.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Commands/Calibration.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/PointToPoint.h"
#include "snn/Runtime/Distributed/World.h"

#include <ATen/ops/empty_like.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <memory>

namespace snn::runtime {

namespace {

constexpr int64_t kFloatBytes = 4;

/// Small messages are latency-bound (tens of microseconds on loopback): a
/// sample repeats them up to about 1 MiB of traffic.
int64_t callsPerSampleOf(int64_t bytes) {
  return std::clamp<int64_t>((int64_t(1) << 20) / std::max<int64_t>(bytes, 1), 1, 32);
}

/// This process's CPU seconds so far, every thread's (the backend's included).
double processCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

/// The CPU a call takes from this process over its calls so far.
struct CpuCount {
  double seconds = 0;
  int64_t calls = 0;
  double perCall() const { return seconds / double(std::max<int64_t>(calls, 1)); }
};

/// `call`, counting its CPU in `count`.
std::function<void()> counted(std::function<void()> call, std::shared_ptr<CpuCount> count) {
  return [call = std::move(call), count] {
    double start = processCpuSeconds();
    call();
    count->seconds += processCpuSeconds() - start;
    ++count->calls;
  };
}

/// Calls that count their CPU, each with its fixed calls per sample (ranks of a collective
/// must agree on every count), sampled together in rounds.
struct CountedCalls {
  std::vector<std::function<void()>> calls;
  std::vector<std::shared_ptr<CpuCount>> cpu;
  std::vector<int64_t> callsPerSample;

  /// `call` of `bytes` on the wire.
  void add(std::function<void()> call, int64_t bytes) {
    cpu.push_back(std::make_shared<CpuCount>());
    calls.push_back(counted(std::move(call), cpu.back()));
    callsPerSample.push_back(callsPerSampleOf(bytes));
  }
  /// Each call's median seconds, every sample after a barrier of `group`.
  std::vector<double> medians(const dist::Group &group, const CalibrationTiming &timing,
                              const std::function<void(int)> &onRound) const {
    return interleavedMedianSeconds(calls, timing, onRound, callsPerSample,
                                    [&group] { dist::barrier(group); });
  }
  /// This process's CPU per call of each.
  std::vector<double> cpuPerCall() const {
    std::vector<double> seconds;
    for (const std::shared_ptr<CpuCount> &count : cpu)
      seconds.push_back(count->perCall());
    return seconds;
  }
};

/// `perCall` (this process's CPU per call of each point) summed over the group's ranks:
/// what one call costs all of them together.
std::vector<double> summedOverRanks(const dist::Group &group,
                                    const std::vector<double> &perCall) {
  at::Tensor total = at::zeros({int64_t(perCall.size())}, at::kDouble);
  for (size_t i = 0; i < perCall.size(); ++i)
    total[int64_t(i)] = perCall[i];
  dist::allReduce(group, total);
  std::vector<double> sums;
  for (size_t i = 0; i < perCall.size(); ++i)
    sums.push_back(total[int64_t(i)].item<double>());
  return sums;
}

/// One collective of `kind` at `bytes` as a call on tensors allocated once, and the
/// whole tensor's bytes after rounding to the ranks.
std::pair<std::function<void()>, int64_t> collectiveCall(const dist::Group &group,
                                                         const std::string &kind,
                                                         int64_t bytes) {
  int64_t ranks = group.size();
  int64_t perRank = std::max<int64_t>(1, bytes / (kFloatBytes * ranks));
  if (kind == "all_reduce") {
    at::Tensor t = at::randn({std::max<int64_t>(1, bytes / kFloatBytes)});
    return {[group, t]() mutable { dist::allReduce(group, t); }, t.numel() * kFloatBytes};
  }
  if (kind == "all_gather") {
    at::Tensor part = at::randn({perRank}), whole = at::randn({perRank * ranks});
    return {[group, part, whole]() mutable { dist::allGatherInto(group, part, whole); },
            whole.numel() * kFloatBytes};
  }
  at::Tensor whole = at::randn({perRank * ranks});
  return {[group, whole] { dist::reduceScatter(group, whole); }, whole.numel() * kFloatBytes};
}

/// One message of `bytes` from rank 0 to rank 1 of `pair` and back (a call's time is half
/// the round trip), and the message's bytes. In a round trip each end sends one message
/// and receives one, so the CPU this process spends per round trip is what one message
/// costs both ends.
std::pair<std::function<void()>, int64_t> roundTripCall(const dist::Group &pair,
                                                        int64_t bytes) {
  at::Tensor message = at::randn({std::max<int64_t>(1, bytes / kFloatBytes)});
  at::Tensor buffer = message.clone();
  int peer = 1 - pair.rank();
  auto roundTrip = [pair, message, buffer, peer]() mutable {
    if (pair.rank() == 0) {
      dist::isend(pair, message, peer, 0).wait();
      dist::irecv(pair, buffer, peer, 0).wait();
    } else {
      dist::irecv(pair, buffer, peer, 0).wait();
      dist::isend(pair, buffer, peer, 0).wait();
    }
  };
  return {roundTrip, message.numel() * kFloatBytes};
}

/// The pairs {0, 1}, {2, 3}, ... of `world`'s ranks as groups (every rank calls newGroup for
/// each, members or not); this rank's, invalid for an odd last rank.
dist::Group pairOfThisRank(dist::World &world, const std::string &what) {
  dist::Group mine;
  for (int first = 0; first + 1 < world.size(); first += 2) {
    dist::Group pair = world.newGroup({first, first + 1}, "calibrate " + what + " {" +
                                                              std::to_string(first) + ", " +
                                                              std::to_string(first + 1) + "}");
    if (pair)
      mine = pair;
  }
  return mine;
}

/// The send_recv curve of `group`'s pairs exchanging at once (an odd last rank waits), its
/// CPU the mean over every rank that exchanged. Every pair runs its round trips at once,
/// as a pipeline's stages exchange their tensors: each sample starts at a barrier of the
/// group, in rounds over the sizes (a slow spell of the host measured as one size's
/// samples in a row had put a 64 KiB message of two ranks at 3.2 ms, 25x its time).
schema::CommunicationCurve measureSendRecv(dist::World &world,
                                           const std::vector<int64_t> &bytes,
                                           const CalibrationTiming &timing,
                                           const std::function<void(int)> &onRound) {
  const dist::Group &group = world.group();
  dist::Group mine = pairOfThisRank(world, "send_recv");
  schema::CommunicationCurve curve{"send_recv", group.size(), {}};
  std::vector<double> perMessage(bytes.size(), 0.0);
  if (mine) {
    CountedCalls roundTrips;
    for (int64_t size : bytes) {
      auto [call, messageBytes] = roundTripCall(mine, size);
      roundTrips.add(std::move(call), size);
      curve.points.push_back({double(messageBytes), 0.0});
    }
    std::vector<double> medians = roundTrips.medians(group, timing, onRound);
    for (size_t i = 0; i < bytes.size(); ++i)
      curve.points[i].seconds = medians[i] / 2.0;
    perMessage = roundTrips.cpuPerCall();
  } else { // the odd rank keeps the barriers' count
    for (size_t i = 0; i < bytes.size() * size_t(std::max(1, timing.repeats)); ++i)
      dist::barrier(group);
  }
  // The mean over the ranks that exchanged (the odd rank's 0 is not one of them).
  std::vector<double> summed = summedOverRanks(group, perMessage);
  double exchanging = double(group.size() / 2 * 2);
  for (size_t i = 0; i < curve.points.size(); ++i)
    curve.cpuPoints.push_back({curve.points[i].size, summed[i] / exchanging});
  return curve;
}

/// GEMMs of 64 x 64 matrices, `count` of them a call: a compute whose length calibrate
/// chooses in steps of one GEMM. Small steps: on a busy host one 128 x 128 GEMM once timed
/// 0.7 ms alone, above the shortest compute wanted (0.125 ms).
struct GemmCompute {
  at::Tensor a = at::randn({64, 64}), b = at::randn({64, 64});
  void operator()(int64_t count) const {
    for (int64_t i = 0; i < count; ++i)
      (void)at::mm(a, b);
  }
};

/// One GEMM's seconds on rank 0 while the other ranks wait for it, every rank's answer.
double gemmSecondsAlone(const dist::Group &group, const GemmCompute &gemm) {
  at::Tensor seconds = at::zeros({1}, at::kDouble);
  if (group.rank() == 0)
    seconds[0] = medianSeconds([&gemm] { gemm(1); }, CalibrationTiming{2, 5, 0.002});
  dist::allReduce(group, seconds);
  return seconds.item<double>();
}

/// GEMM counts whose `multiple` takes about 0.125, 0.5, 2 and 8 ms (fewer where one GEMM
/// is longer than a step between them).
std::vector<int64_t> gemmCounts(double gemmSeconds, int64_t multiple) {
  std::vector<int64_t> counts;
  for (double target : {0.125e-3, 0.5e-3, 2e-3, 8e-3}) {
    int64_t count =
        std::max<int64_t>(1, std::llround(target / (gemmSeconds * double(multiple))));
    if (counts.empty() || count > counts.back())
      counts.push_back(count);
  }
  return counts;
}

/// Rounds (warmups first, not kept) of `sample` at each of `points` indices, each round's
/// progress reported by rank 0 as `what`: each index's median over its samples, averaged
/// over the group's ranks (a pair's ranks differ: the later one hardly waits). `sample` is
/// told whether its round is kept.
using SampleFn = std::function<void(size_t, std::vector<double> &, bool)>;
std::vector<double> meanOfMediansInRounds(dist::World &world, const CalibrationTiming &timing,
                                          const CalibrationProgressFn &progress,
                                          const std::string &what, size_t points,
                                          const SampleFn &sample) {
  std::vector<std::vector<double>> samples(points);
  std::vector<double> discarded;
  auto onRound = roundProgress(world.rank() == 0 ? progress : CalibrationProgressFn{},
                               what + " on " + std::to_string(world.group().size()) +
                                   " ranks, in rounds",
                               timing);
  for (int round = -timing.warmups; round < std::max(1, timing.repeats); ++round) {
    if (round >= 0 && onRound)
      onRound(round);
    for (size_t i = 0; i < points; ++i) {
      discarded.clear();
      sample(i, round >= 0 ? samples[i] : discarded, round >= 0);
    }
  }
  std::vector<double> medians;
  for (const std::vector<double> &sampled : samples)
    medians.push_back(median(sampled));
  std::vector<double> summed = summedOverRanks(world.group(), medians);
  for (double &sum : summed)
    sum /= double(world.group().size());
  return summed;
}

/// The mean seconds this rank waited in each all_reduce of `pair` that followed `count` GEMMs,
/// over `calls` of them, every pair of `group` at once from a barrier.
double waitAfterComputes(const dist::Group &group, const dist::Group &pair,
                         const GemmCompute &gemm, int64_t count, at::Tensor &tensor,
                         int64_t calls) {
  using Clock = std::chrono::steady_clock;
  dist::barrier(group);
  double waited = 0;
  for (int64_t call = 0; call < calls; ++call) {
    gemm(count);
    Clock::time_point start = Clock::now();
    dist::allReduce(pair, tensor);
    waited += std::chrono::duration<double>(Clock::now() - start).count();
  }
  return waited / double(calls);
}

} // namespace

schema::WaitBetweenComputesCurve
measureWaitsBetweenComputes(dist::World &world, const CalibrationTiming &timing,
                            const CalibrationProgressFn &progress) {
  const dist::Group &group = world.group();
  schema::WaitBetweenComputesCurve curve{group.size(), kWaitBetweenComputesBytes, {}};
  if (group.size() < 2 || group.size() % 2 != 0)
    return curve;
  constexpr int64_t kCallsPerSample = 8;
  dist::Group pair = pairOfThisRank(world, "waits between computes");
  GemmCompute gemm;
  double gemmSeconds = std::max(gemmSecondsAlone(group, gemm), 1e-7);
  std::vector<int64_t> counts = gemmCounts(gemmSeconds, 1);
  at::Tensor tensor = at::randn({kWaitBetweenComputesBytes / int64_t(sizeof(float))});
  // A pair's slower rank hardly waits and its peer waits for it: their mean is what the
  // pair loses a call.
  std::vector<double> waits = meanOfMediansInRounds(
      world, timing, progress, "waits in pairs' all_reduce between computes", counts.size(),
      [&](size_t i, std::vector<double> &samples, bool) {
        samples.push_back(
            waitAfterComputes(group, pair, gemm, counts[i], tensor, kCallsPerSample));
      });
  for (size_t i = 0; i < counts.size(); ++i)
    curve.points.push_back({double(counts[i]) * gemmSeconds, waits[i]});
  return curve;
}

namespace {

constexpr int64_t kPipelineMicrobatches = 8;
constexpr int kStepsPerRound = 3;

/// A two-stage pipeline's actions on one rank of a pair: 1F1B over kPipelineMicrobatches
/// (stage 0 runs one forward ahead), true for a forward.
std::vector<std::pair<bool, int64_t>> oneForwardOneBackward(int stage) {
  std::vector<std::pair<bool, int64_t>> actions;
  int64_t ahead = stage == 0 ? 1 : 0, m = kPipelineMicrobatches;
  for (int64_t i = 0; i < ahead; ++i)
    actions.push_back({true, i});
  for (int64_t i = 0; i < m; ++i) {
    if (i + ahead < m)
      actions.push_back({true, i + ahead});
    actions.push_back({false, i});
  }
  return actions;
}

/// One pipeline step on a rank: its seconds, the seconds of its compute, and this process's
/// CPU seconds beyond that compute's (its transfers', the backend's threads' included).
struct PipelineStepTimes {
  double seconds = 0, computed = 0, cpuBeyondCompute = 0;
};

/// One pipeline step of `pair` (rank 0 the first stage), a forward being `count` GEMMs and
/// a backward twice that; the transfers as PipelineEngine makes them (each receive posted
/// two actions ahead, the sends waited for after the drain).
PipelineStepTimes pipelineStep(const dist::Group &pair, const GemmCompute &gemm, int64_t count,
                               const at::Tensor &message) {
  using Clock = std::chrono::steady_clock;
  int stage = pair.rank(), peer = 1 - stage;
  auto actions = oneForwardOneBackward(stage);
  // Stage 1 receives activations (tags 0..m-1), stage 0 gradients (tags m..2m-1).
  auto receives = [&](const std::pair<bool, int64_t> &a) { return a.first == (stage == 1); };
  auto tagOf = [](const std::pair<bool, int64_t> &a) {
    return a.second + (a.first ? 0 : kPipelineMicrobatches);
  };
  std::map<size_t, dist::PendingTransfer> posted;
  std::vector<dist::PendingTransfer> sends;
  size_t postedUpTo = 0;
  PipelineStepTimes times;
  double cpuStart = processCpuSeconds(), computeCpu = 0;
  Clock::time_point start = Clock::now();
  for (size_t i = 0; i < actions.size(); ++i) {
    for (; postedUpTo < std::min(i + 3, actions.size()); ++postedUpTo)
      if (receives(actions[postedUpTo]))
        posted[postedUpTo] =
            dist::irecv(pair, at::empty_like(message), peer, tagOf(actions[postedUpTo]));
    if (auto it = posted.find(i); it != posted.end()) {
      it->second.wait();
      posted.erase(it);
    }
    Clock::time_point computing = Clock::now();
    double cpuComputing = processCpuSeconds();
    gemm(actions[i].first ? count : 2 * count);
    computeCpu += processCpuSeconds() - cpuComputing;
    times.computed += std::chrono::duration<double>(Clock::now() - computing).count();
    if (!receives(actions[i])) // stage 0's forwards, stage 1's backwards
      sends.push_back(dist::isend(pair, message, peer, tagOf(actions[i])));
  }
  for (dist::PendingTransfer &send : sends)
    send.wait();
  times.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  times.cpuBeyondCompute = processCpuSeconds() - cpuStart - computeCpu;
  return times;
}

} // namespace

schema::WaitBetweenComputesCurve measurePipelineMessages(dist::World &world,
                                                         const CalibrationTiming &timing,
                                                         const CalibrationProgressFn &progress) {
  const dist::Group &group = world.group();
  schema::WaitBetweenComputesCurve curve{group.size(), kWaitBetweenComputesBytes, {}};
  if (group.size() < 2 || group.size() % 2 != 0)
    return curve;
  dist::Group pair = pairOfThisRank(world, "pipeline messages");
  GemmCompute gemm;
  double gemmSeconds = std::max(gemmSecondsAlone(group, gemm), 1e-7);
  std::vector<int64_t> counts = gemmCounts(gemmSeconds, 3); // a tick: forward + backward
  at::Tensor message = at::randn({kWaitBetweenComputesBytes / int64_t(sizeof(float))});
  double ticks = double(kPipelineMicrobatches + 1); // m of each rank's, one to fill
  std::vector<CpuCount> cpu(counts.size());
  std::vector<double> beyond = meanOfMediansInRounds(
      world, timing, progress, "two-stage pipelines' messages between computes", counts.size(),
      [&](size_t i, std::vector<double> &samples, bool kept) {
        dist::barrier(group);
        // Its stalls come a few a step, steps apart: a sample is one step, several a round.
        for (int repeat = 0; repeat < kStepsPerRound; ++repeat) {
          PipelineStepTimes step = pipelineStep(pair, gemm, counts[i], message);
          // What each tick took beyond this rank's own compute of one.
          samples.push_back(step.seconds / ticks -
                            step.computed / double(kPipelineMicrobatches));
          if (!kept)
            continue;
          cpu[i].seconds += step.cpuBeyondCompute;
          cpu[i].calls += kPipelineMicrobatches; // a rank sends a message a microbatch
        }
      });
  // A message costs both its ranks: every rank's CPU beyond its compute per message it
  // sent, summed over the ranks, over the ranks (each pair sends two a microbatch).
  std::vector<double> perMessage;
  for (const CpuCount &count : cpu)
    perMessage.push_back(count.perCall());
  std::vector<double> cpuSummed = summedOverRanks(group, perMessage);
  // A tick measured to take no longer than its compute (the noise of a long one) waits
  // a microsecond: a profile's points are positive.
  for (size_t i = 0; i < counts.size(); ++i) {
    double tick = 3.0 * double(counts[i]) * gemmSeconds;
    curve.points.push_back({tick, std::max(1e-6, beyond[i])});
    curve.cpuPoints.push_back({tick, std::max(0.0, cpuSummed[i]) / double(group.size())});
  }
  return curve;
}

std::vector<schema::CommunicationCurve>
measureCollectives(dist::World &world, const std::vector<int64_t> &bytes, bool sendRecv,
                   const CalibrationTiming &timing, const CalibrationProgressFn &progress) {
  std::vector<schema::CommunicationCurve> curves;
  const dist::Group &group = world.group();
  std::string onRanks = " on " + std::to_string(group.size()) + " ranks";
  // Rank 0 reports each measurement's rounds.
  auto rounds = [&](const std::string &what) {
    return roundProgress(world.rank() == 0 ? progress : CalibrationProgressFn{},
                         what + onRanks + ", in rounds", timing);
  };
  CountedCalls collectives;
  for (const char *kind : {"all_reduce", "all_gather", "reduce_scatter"}) {
    curves.push_back({kind, group.size(), {}});
    for (int64_t size : bytes) {
      auto [call, wholeBytes] = collectiveCall(group, kind, size);
      collectives.add(std::move(call), size);
      curves.back().points.push_back({double(wholeBytes), 0.0});
    }
  }
  // A barrier starts each sample; rounds over every kind and size.
  std::vector<double> medians =
      collectives.medians(group, timing, rounds("all_reduce, all_gather and reduce_scatter"));
  std::vector<double> cpuSeconds = summedOverRanks(group, collectives.cpuPerCall());
  size_t next = 0;
  for (schema::CommunicationCurve &curve : curves)
    for (schema::ProfilePoint &point : curve.points) {
      point.seconds = medians[next];
      curve.cpuPoints.push_back({point.size, cpuSeconds[next++]});
    }
  if (!sendRecv)
    return curves;
  curves.push_back(
      measureSendRecv(world, bytes, timing, rounds("send_recv between pairs of ranks")));
  dist::barrier(group);
  return curves;
}

} // namespace snn::runtime
