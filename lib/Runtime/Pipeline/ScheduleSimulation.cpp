//===- ScheduleSimulation.cpp - A schedule run on an ideal machine --------===//

#include "snn/Runtime/Pipeline/ScheduleSimulation.h"
#include "snn/Runtime/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace snn::runtime {

namespace {

/// Finish times of every (kind, stage, microbatch); NaN until it ran.
class FinishTable {
public:
  FinishTable(int64_t stages, int64_t microbatches)
      : stages(stages), microbatches(microbatches),
        table(size_t(3 * stages * microbatches),
              std::numeric_limits<double>::quiet_NaN()) {}

  double &at(const Action &a) {
    return table[size_t((int64_t(a.kind) * stages + a.stage) * microbatches +
                        a.microbatch)];
  }
  bool done(const Action &a) { return !std::isnan(at(a)); }

private:
  int64_t stages, microbatches;
  std::vector<double> table;
};

double costOf(const Action &a, const ScheduleConfig &config, const ActionCosts &costs) {
  switch (a.kind) {
  case ActionKind::Forward: return costs.forward;
  case ActionKind::Backward:
    return config.splitsBackward() ? costs.inputGrad : costs.backward;
  case ActionKind::WeightGrad: return costs.weightGrad;
  }
  return 0.0;
}

/// Every action of the rank's stages once (W exactly when split), and no
/// other; Error naming the first offender.
void checkComplete(const ScheduleConfig &config,
                   const std::vector<std::vector<Action>> &ranks) {
  int64_t stages = config.stageCount(), mbs = config.microbatches;
  FinishTable seen(stages, mbs);
  size_t count = 0;
  for (size_t rank = 0; rank < ranks.size(); ++rank)
    for (const Action &a : ranks[rank]) {
      bool valid = a.stage >= 0 && a.stage < stages && a.microbatch >= 0 &&
                   a.microbatch < mbs && a.stage % config.ranks == int64_t(rank) &&
                   (a.kind != ActionKind::WeightGrad || config.splitsBackward());
      if (!valid || seen.done(a))
        throw Error("pipeline schedule: rank " + std::to_string(rank) + " runs " +
                    describeAction(a) + (valid ? " twice" : ", which is not its to run"));
      seen.at(a) = 0.0;
      ++count;
    }
  size_t kinds = config.splitsBackward() ? 3 : 2;
  if (ranks.size() != size_t(config.ranks) || count != kinds * size_t(stages * mbs))
    throw Error("pipeline schedule: " + std::to_string(count) + " actions, expected " +
                std::to_string(kinds * size_t(stages * mbs)));
}

[[noreturn]] void deadlock(const std::vector<std::vector<Action>> &ranks,
                           const std::vector<size_t> &next, FinishTable &finished,
                           int64_t stages) {
  std::string waits;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    if (next[rank] == ranks[rank].size())
      continue;
    const Action &a = ranks[rank][next[rank]];
    for (const Action &d : actionDependencies(a, stages))
      if (!finished.done(d)) {
        waits += (waits.empty() ? "" : ", ") + ("rank " + std::to_string(rank) +
                 " waits at " + describeAction(a) + " for " + describeAction(d));
        break;
      }
  }
  throw Error("pipeline schedule deadlocks: " + waits);
}

} // namespace

double ScheduleSimulation::bubbleFraction() const {
  double work = 0.0;
  for (double b : busy)
    work += b;
  double total = makespan * double(busy.size());
  return total > 0.0 ? (total - work) / total : 0.0;
}

double ScheduleSimulation::rankBubble(size_t rank) const {
  return end[rank] > 0.0 ? (end[rank] - busy[rank]) / end[rank] : 0.0;
}

ScheduleSimulation simulateSchedule(const ScheduleConfig &config,
                                    const std::vector<std::vector<Action>> &ranks,
                                    const ActionCosts &costs) {
  checkComplete(config, ranks);
  int64_t stages = config.stageCount();
  FinishTable finished(stages, config.microbatches);
  ScheduleSimulation sim;
  size_t n = ranks.size(), left = 0;
  std::vector<size_t> next(n, 0);
  std::vector<double> free(n, 0.0);
  sim.busy.assign(n, 0.0);
  sim.end.assign(n, 0.0);
  for (size_t r = 0; r < n; ++r) {
    sim.start.emplace_back(ranks[r].size(), 0.0);
    sim.finish.emplace_back(ranks[r].size(), 0.0);
    left += ranks[r].size();
  }
  while (left > 0) {
    bool progressed = false;
    for (size_t r = 0; r < n; ++r)
      for (; next[r] < ranks[r].size(); ++next[r], --left, progressed = true) {
        const Action &a = ranks[r][next[r]];
        double start = free[r];
        std::vector<Action> needs = actionDependencies(a, stages);
        if (std::any_of(needs.begin(), needs.end(),
                        [&](const Action &d) { return !finished.done(d); }))
          break;
        for (const Action &d : needs)
          start = std::max(start, finished.at(d));
        double cost = costOf(a, config, costs);
        sim.start[r][next[r]] = start;
        sim.finish[r][next[r]] = finished.at(a) = free[r] = start + cost;
        sim.busy[r] += cost;
        sim.end[r] = free[r];
      }
    if (!progressed)
      deadlock(ranks, next, finished, stages);
  }
  sim.makespan = *std::max_element(sim.end.begin(), sim.end.end());
  return sim;
}

} // namespace snn::runtime
