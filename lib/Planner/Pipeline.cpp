//===- Pipeline.cpp - Pipeline stages, microbatches and schedules ---------===//
//
// The reference package's rules (microbatches, the stages that recompute), stage layouts
// and schedules. The stage units are in PipelineUnits.cpp; which pipeline a request gets,
// in PipelineChoice.cpp.
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/Pipeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

namespace snn::planner {

Result<int64_t> recommendedPipelineMicrobatches(int64_t batch, int64_t stages) {
  if (stages <= 0)
    return makeError("pipeline stages must be positive, got " + std::to_string(stages));
  if (batch < stages)
    return makeError("batch size " + std::to_string(batch) + " is smaller than the " +
                     std::to_string(stages) + " pipeline stages (every stage needs a "
                     "microbatch)");
  // Largest first: more microbatches shrink the pipeline bubble.
  for (int64_t m = std::min(batch, 4 * stages); m >= stages; --m)
    if (batch % m == 0)
      return m;
  return makeError("no microbatch count in [" + std::to_string(stages) + ", " +
                   std::to_string(std::min(batch, 4 * stages)) + "] divides batch size " +
                   std::to_string(batch) + " for " + std::to_string(stages) +
                   " pipeline stages");
}

Result<std::vector<int64_t>> recommendPipelineMemoptStages(const std::vector<double> &costs,
                                                           double ratio) {
  if (!std::isfinite(ratio) || ratio <= 0.0 || ratio > 1.0) {
    std::ostringstream os;
    os << "memopt ratio must be finite and in (0, 1], got " << ratio;
    return makeError(os.str());
  }
  if (costs.empty())
    return makeError("no pipeline stages to choose from");
  int64_t n = int64_t(costs.size());
  // std::nearbyint rounds half to even under the default rounding mode, as Python does.
  int64_t k = std::max<int64_t>(1, std::min<int64_t>(n, int64_t(std::nearbyint(n * ratio))));
  std::vector<int64_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return costs[a] > costs[b]; });
  std::vector<int64_t> chosen(order.begin(), order.begin() + k);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

namespace {

/// Smallest achievable maximum stage cost (dynamic programming over prefixes).
double optimalMaxStageCost(const std::vector<double> &costs, int64_t stages) {
  size_t n = costs.size();
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][i]: first i units in s non-empty stages.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  best[0][0] = 0.0;
  for (int64_t s = 1; s <= stages; ++s)
    for (size_t i = size_t(s); i <= n; ++i)
      for (size_t j = size_t(s - 1); j < i; ++j)
        best[s][i] = std::min(best[s][i], std::max(best[s - 1][j], prefix[i] - prefix[j]));
  return best[stages][n];
}

} // namespace

std::vector<int64_t> balancedStageLayout(const std::vector<double> &unitCosts,
                                         int64_t stages) {
  int64_t n = int64_t(unitCosts.size());
  if (stages <= 0 || n < stages)
    return {};
  double limit = optimalMaxStageCost(unitCosts, stages);
  double slack = 1e-9 * std::max(1.0, limit);
  // Greedy fill up to the optimum, leaving one unit for every later stage: deterministic,
  // and front stages take the extra units (they also hold the most in-flight microbatches
  // under 1F1B, which is why ties go forward only up to the optimum).
  std::vector<int64_t> counts;
  int64_t next = 0;
  for (int64_t s = 0; s < stages; ++s) {
    int64_t later = stages - s - 1;
    if (later == 0) {
      counts.push_back(n - next);
      break;
    }
    double sum = unitCosts[next];
    int64_t take = 1;
    while (next + take < n - later && sum + unitCosts[next + take] <= limit + slack) {
      sum += unitCosts[next + take];
      ++take;
    }
    counts.push_back(take);
    next += take;
  }
  return counts;
}

Result<std::vector<int64_t>> parseStageLayout(const std::string &text, int64_t stages,
                                              int64_t units) {
  std::vector<int64_t> counts;
  std::stringstream parts(text);
  std::string part;
  int64_t total = 0;
  while (std::getline(parts, part, '|')) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 9)
      return makeError("pipeline layout '" + text + "': '" + part +
                       "' is not a unit count (expected counts like 2|3|3)");
    counts.push_back(std::stoll(part));
    total += counts.back();
  }
  if (!text.empty() && text.back() == '|')
    return makeError("pipeline layout '" + text + "' ends with '|'");
  if (int64_t(counts.size()) != stages)
    return makeError("pipeline layout '" + text + "' lists " + std::to_string(counts.size()) +
                     " stage(s), the plan has " + std::to_string(stages) + " logical stages");
  if (total != units)
    return makeError("pipeline layout '" + text + "' places " + std::to_string(total) +
                     " units, the model has " + std::to_string(units));
  return counts;
}

std::string formatStageLayout(const std::vector<int64_t> &counts) {
  std::string text;
  for (size_t i = 0; i < counts.size(); ++i)
    text += (i ? "|" : "") + std::to_string(counts[i]);
  return text;
}

Result<Schedule> parseSchedule(const std::string &name) {
  if (std::optional<Schedule> schedule = schema::parseEnum<Schedule>(name))
    return *schedule;
  return makeError(schema::unknownSpellingMessage<Schedule>(name));
}

Status validateSchedule(Schedule schedule, int64_t stages, int64_t virtualStages,
                        int64_t microbatches) {
  bool multi = schedule == Schedule::Interleaved1F1B || schedule == Schedule::ZeroBubble;
  if (!multi && virtualStages != 1)
    return makeError(std::string("pipeline schedule ") + scheduleName(schedule) +
                     " needs 1 virtual stage per rank, got " + std::to_string(virtualStages));
  if (multi && virtualStages < 2)
    return makeError(std::string("pipeline schedule ") + scheduleName(schedule) +
                     " needs at least 2 virtual stages per rank, got " +
                     std::to_string(virtualStages));
  if (microbatches < stages * virtualStages)
    return makeError("pipeline needs at least stages x virtual stages = " +
                     std::to_string(stages * virtualStages) + " microbatches, got " +
                     std::to_string(microbatches));
  return Ok{};
}

} // namespace snn::planner
