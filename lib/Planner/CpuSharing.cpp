//===- CpuSharing.cpp - Ranks sharing a machine's CPUs --------------------===//
//
// How a job whose ranks outnumber the CPUs slows: docs/planner.md ("ranks that share the
// machine's CPUs").
//
//===----------------------------------------------------------------------===//
#include "CpuSharing.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace snn::planner {

int64_t jobRanksOf(const Estimate &e) {
  return std::max<int64_t>(e.dp, 1) * std::max<int64_t>(e.tp, 1) * std::max<int64_t>(e.pp, 1);
}

namespace {

/// P(K = k), k = 0 .. shares.size(), for K the number of ranks busy at once when each is
/// busy its share of the time independently (a Poisson binomial).
std::vector<double> busyCountChances(const std::vector<double> &shares) {
  std::vector<double> chance{1.0};
  for (double u : shares) {
    std::vector<double> next(chance.size() + 1, 0.0);
    for (size_t k = 0; k < chance.size(); ++k) {
      next[k] += chance[k] * (1.0 - u);
      next[k + 1] += chance[k] * u;
    }
    chance = std::move(next);
  }
  return chance;
}

} // namespace

/// How much slower compute runs on CPUs shared by more threads than they have (`full`:
/// ranks x threads / CPUs, the slowdown when every rank computes at once). Flat modes
/// compute in lockstep: `full`. A pipeline's step is its busiest stage's: that stage's
/// ranks (its dp replicas and tp members) compute together, and each other rank is busy
/// its own stage's share u of the step, independently; a rank computing beside K others
/// runs max(1, (1 + K) x full / ranks) times slower, and compute slows by that
/// expectation c. u is the rank's busy time (stageBusySeconds, c times longer) over
/// T = c x compute + comm: the smallest fixed point, from c = 1. The average load alone
/// (c = B full / (ranks T)) left the VGG's pp=4 at 1.46 CPUs busy of 2, no slowdown,
/// where its trace showed every rank's spans stretched (measured 1.09-1.39x its
/// prediction). One share for every rank (the job's mean) had pp=4 layouts with a heavy
/// stage among light ones predicted too slow and dp=2 x pp=2, whose replicas compute at
/// once, too fast (seeds 10000-12019).
double cpuContention(const Estimate &e, double full) {
  if (e.mode != Mode::PP || full <= 1.0 || !(e.busySeconds > 0) || !(e.computeSeconds > 0) ||
      e.stageBusySeconds.empty())
    return full;
  int64_t ranks = jobRanksOf(e), together = ranks / std::max<int64_t>(e.pp, 1);
  const std::vector<double> &stageBusy = e.stageBusySeconds;
  size_t busiest =
      size_t(std::max_element(stageBusy.begin(), stageBusy.end()) - stageBusy.begin());
  double perRank = full / double(ranks), c = 1.0;
  for (int iteration = 0; iteration < 64; ++iteration) {
    double step = c * e.computeSeconds + e.commSeconds;
    std::vector<double> shares;
    for (size_t j = 0; j < stageBusy.size(); ++j)
      if (j != busiest)
        shares.insert(shares.end(), size_t(together), std::min(1.0, c * stageBusy[j] / step));
    std::vector<double> chance = busyCountChances(shares);
    double slowdown = 0;
    for (size_t k = 0; k < chance.size(); ++k)
      slowdown += chance[k] * std::max(1.0, double(together + int64_t(k)) * perRank);
    if (std::abs(slowdown - c) < 1e-9 * c)
      break;
    c = slowdown;
  }
  return std::clamp(c, 1.0, full);
}

/// The machine cannot do more work in a step than its CPUs can in that time: ranks whose
/// compute, messages and collectives need B CPU seconds (busySeconds, each rank's intra-op
/// threads using as many CPUs) take at least B / CPUs, a pipeline's before the step's
/// synchronisation after the drain. A pipeline's contention above, from independent busy
/// shares, can let a step fall below that (with the average load alone, the CSNN's dp=2 x
/// pp=2 was predicted 42.8 ms for 92 ms of work on 2 CPUs, measured 59.4 ms). Flat modes'
/// lockstep compute plus their collectives' wall time falls below it where the backend's
/// CPU is most of the step (on 4 ranks of 2 CPUs a 4-rank all-reduce of 1 MiB took 6-7 ms
/// of CPU in 2.6-3.3 ms).
double cpuThroughputWait(const Estimate &e, const Calibration &calibration) {
  if (calibration.logicalCpus <= 0 || !(e.busySeconds > 0))
    return 0.0;
  double floor = e.busySeconds * double(calibration.threadsPerRank) /
                     double(calibration.logicalCpus) +
                 e.drainSyncSeconds;
  return std::max(0.0, floor - e.computeSeconds - e.commSeconds);
}

/// How often a rank that becomes ready finds its CPUs taken: each of the job's other ranks
/// busy for its share of the step (busySeconds over ranks x the step so far), independently,
/// the chance that they fill every CPU (logical CPUs over each rank's threads). A pipeline
/// stage's tp collectives wait for their peers that often as calibrate measured with every
/// rank computing (Estimate::stageCollectiveLagSeconds). On run 13's pipelines (4 ranks, 2
/// CPUs) the MLP's, CSNN's and VGG's tp calls waited 0.85, 2.28 and 2.22 ms; with chances of
/// 0.30, 0.53 and 0.44 they are charged 1.05, 1.86 and 1.6 ms (the job's curve scaled to the
/// group said 1.39 for each).
double peerDelayChance(const Estimate &e, const Calibration &calibration) {
  int64_t ranks = jobRanksOf(e);
  double step = e.computeSeconds + e.commSeconds;
  if (calibration.logicalCpus <= 0 || !(e.busySeconds > 0) || !(step > 0))
    return 1.0;
  int64_t slots = std::max<int64_t>(1, calibration.logicalCpus /
                                           std::max<int64_t>(calibration.threadsPerRank, 1));
  double busy = std::min(1.0, e.busySeconds / (double(ranks) * step));
  // P(at least `slots` of the ranks - 1 others are busy).
  std::vector<double> chance = busyCountChances(std::vector<double>(size_t(ranks - 1), busy));
  double taken = 0;
  for (size_t k = size_t(slots); k < chance.size(); ++k)
    taken += chance[k];
  return std::min(1.0, taken);
}

} // namespace snn::planner
