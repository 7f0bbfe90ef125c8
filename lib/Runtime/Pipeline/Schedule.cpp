//===- Schedule.cpp - The order of a pipeline's forwards and backwards ----===//

#include "snn/Runtime/Pipeline/Schedule.h"
#include "snn/Runtime/Support/Error.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <tuple>

namespace snn::runtime {

namespace {

using schema::PipelineSchedule;

void checkConfig(const ScheduleConfig &c) {
  std::string name = schema::nameOf(c.schedule);
  if (c.ranks < 1 || c.virtualStages < 1 || c.microbatches < 1)
    throw Error("pipeline schedule " + name + ": the pp size (" +
                std::to_string(c.ranks) + "), virtual stages (" +
                std::to_string(c.virtualStages) + ") and microbatches (" +
                std::to_string(c.microbatches) + ") must all be at least 1");
  if (c.schedule == PipelineSchedule::OneFOneB && c.virtualStages > 1)
    throw Error("pipeline schedule 1f1b runs one stage per rank, but the plan has " +
                std::to_string(c.virtualStages) +
                " virtual stages per rank (use interleaved_1f1b or zero_bubble)");
  bool interleaved = c.schedule == PipelineSchedule::Interleaved1F1B ||
                     c.schedule == PipelineSchedule::ZeroBubble;
  if (interleaved && c.virtualStages > 1 && c.microbatches % c.ranks != 0)
    throw Error("pipeline schedule " + name + " with " +
                std::to_string(c.virtualStages) +
                " virtual stages needs pp_microbatches divisible by the pp size " +
                std::to_string(c.ranks) + ", got " + std::to_string(c.microbatches));
}

/// GPipe: all forwards chunk by chunk, then all backwards in reverse.
std::vector<Action> gpipeOrder(const ScheduleConfig &c, int64_t rank) {
  std::vector<Action> order;
  for (int64_t v = 0; v < c.virtualStages; ++v)
    for (int64_t m = 0; m < c.microbatches; ++m)
      order.push_back({ActionKind::Forward, v * c.ranks + rank, m});
  for (int64_t v = c.virtualStages - 1; v >= 0; --v)
    for (int64_t m = 0; m < c.microbatches; ++m)
      order.push_back({ActionKind::Backward, v * c.ranks + rank, m});
  return order;
}

/// Megatron-LM's k-th forward (or backward) unit of a rank: its chunk and
/// microbatch.
Action unitOf(const ScheduleConfig &c, int64_t rank, int64_t k, bool forward) {
  int64_t group = c.ranks * c.virtualStages;
  int64_t chunk = (k % group) / c.ranks;
  if (!forward)
    chunk = c.virtualStages - 1 - chunk;
  int64_t microbatch = (k / group) * c.ranks + k % c.ranks;
  return {forward ? ActionKind::Forward : ActionKind::Backward,
          chunk * c.ranks + rank, microbatch};
}

/// How many forwards a rank runs before its first backward.
int64_t warmupOf(const ScheduleConfig &c, int64_t rank) {
  int64_t total = c.microbatches * c.virtualStages;
  if (c.schedule == PipelineSchedule::GPipe)
    return total;
  if (c.virtualStages == 1)
    return std::min(c.ranks - rank - 1, total);
  if (c.microbatches == c.ranks) // Megatron: all forwards first
    return total;
  return std::min((c.ranks - rank - 1) * 2 + (c.virtualStages - 1) * c.ranks,
                  total);
}

/// 1F1B and its interleaved form: warm-up forwards, then one forward and
/// one backward alternately, then the remaining backwards.
std::vector<Action> oneForwardOneBackward(const ScheduleConfig &c, int64_t rank) {
  int64_t total = c.microbatches * c.virtualStages;
  int64_t warmup = warmupOf(c, rank);
  std::vector<Action> order;
  for (int64_t k = 0; k < warmup; ++k)
    order.push_back(unitOf(c, rank, k, true));
  for (int64_t k = 0; k < total - warmup; ++k) {
    order.push_back(unitOf(c, rank, warmup + k, true));
    order.push_back(unitOf(c, rank, k, false));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    order.push_back(unitOf(c, rank, k, false));
  return order;
}

/// Split backwards: the W's placed by a unit-cost list schedule of all
/// ranks at once (see the file comment of Schedule.h).
class WeightGradPlacer {
public:
  WeightGradPlacer(const ScheduleConfig &c, std::vector<std::vector<Action>> orders)
      : config(c), orders(std::move(orders)), next(this->orders.size(), 0),
        free(this->orders.size(), 0.0), waiting(this->orders.size()),
        placed(this->orders.size()) {}

  std::vector<std::vector<Action>> run() {
    for (size_t rank = pickRank(); rank < orders.size(); rank = pickRank())
      step(rank);
    return std::move(placed);
  }

private:
  /// When the rank's next F or B could start (infinity: not known yet).
  double readyAt(size_t rank) {
    if (next[rank] == orders[rank].size())
      return kNever;
    double at = free[rank];
    for (const Action &d : actionDependencies(orders[rank][next[rank]], config.stageCount())) {
      auto it = finished.find(key(d));
      if (it == finished.end())
        return kNever;
      at = std::max(at, it->second);
    }
    return at;
  }

  /// The rank that acts first: the earliest of a W (now) or its next F/B.
  size_t pickRank() {
    size_t best = orders.size();
    double bestAt = kNever;
    for (size_t r = 0; r < orders.size(); ++r) {
      double at = waiting[r].empty() ? readyAt(r) : free[r];
      if (at < bestAt)
        best = r, bestAt = at;
    }
    if (best == orders.size())
      for (size_t r = 0; r < orders.size(); ++r)
        if (next[r] < orders[r].size())
          throw Error("pipeline schedule " + std::string(schema::nameOf(config.schedule)) +
                      " deadlocks at rank " + std::to_string(r) + "'s " +
                      describeAction(orders[r][next[r]]));
    return best;
  }

  /// A W runs when too many wait, or when the next F/B is not ready now.
  void step(size_t r) {
    double ready = readyAt(r);
    bool weight = !waiting[r].empty() &&
                  (int64_t(waiting[r].size()) > limitOf(r) || ready > free[r]);
    if (weight) {
      emit(r, waiting[r].front(), free[r]);
      waiting[r].pop_front();
      return;
    }
    const Action &a = orders[r][next[r]++];
    emit(r, a, ready);
    if (a.kind == ActionKind::Backward)
      waiting[r].push_back({ActionKind::WeightGrad, a.stage, a.microbatch});
    if (next[r] == orders[r].size()) // flush: nothing else to wait for
      while (!waiting[r].empty()) {
        emit(r, waiting[r].front(), free[r]);
        waiting[r].pop_front();
      }
  }

  void emit(size_t r, const Action &a, double start) {
    free[r] = start + 1.0;
    finished[key(a)] = free[r];
    placed[r].push_back(a);
  }

  /// GPipe keeps every microbatch's activations anyway; the 1F1B family
  /// holds at most one W back, so a rank keeps at most one microbatch more
  /// than 1F1B does (larger limits gained little in simulation).
  int64_t limitOf(size_t) const {
    if (config.schedule == PipelineSchedule::GPipe)
      return std::numeric_limits<int64_t>::max();
    return 1;
  }

  static std::tuple<int, int64_t, int64_t> key(const Action &a) {
    return {int(a.kind), a.stage, a.microbatch};
  }

  static constexpr double kNever = std::numeric_limits<double>::infinity();
  const ScheduleConfig &config;
  std::vector<std::vector<Action>> orders;
  std::vector<size_t> next;
  std::vector<double> free;
  std::vector<std::deque<Action>> waiting;
  std::vector<std::vector<Action>> placed;
  std::map<std::tuple<int, int64_t, int64_t>, double> finished;
};

} // namespace

std::string describeAction(const Action &action) {
  const char *kind = action.kind == ActionKind::Forward    ? "F"
                     : action.kind == ActionKind::Backward ? "B"
                                                           : "W";
  return std::string(kind) + " s" + std::to_string(action.stage) + " m" +
         std::to_string(action.microbatch);
}

std::vector<Action> actionDependencies(const Action &a, int64_t stages) {
  switch (a.kind) {
  case ActionKind::Forward:
    if (a.stage == 0)
      return {};
    return {{ActionKind::Forward, a.stage - 1, a.microbatch}};
  case ActionKind::Backward:
    if (a.stage == stages - 1)
      return {{ActionKind::Forward, a.stage, a.microbatch}};
    return {{ActionKind::Forward, a.stage, a.microbatch},
            {ActionKind::Backward, a.stage + 1, a.microbatch}};
  case ActionKind::WeightGrad:
    return {{ActionKind::Backward, a.stage, a.microbatch}};
  }
  return {};
}

std::vector<std::vector<Action>> buildSchedule(const ScheduleConfig &config) {
  checkConfig(config);
  std::vector<std::vector<Action>> ranks;
  for (int64_t rank = 0; rank < config.ranks; ++rank)
    ranks.push_back(config.schedule == PipelineSchedule::GPipe
                        ? gpipeOrder(config, rank)
                        : oneForwardOneBackward(config, rank));
  if (config.splitsBackward())
    ranks = WeightGradPlacer(config, std::move(ranks)).run();
  return ranks;
}

} // namespace snn::runtime
