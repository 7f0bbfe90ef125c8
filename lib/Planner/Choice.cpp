//===- Choice.cpp - Comparing candidates under an objective ---------------===//
//
// speed: the shortest step (within 1%, the smaller memory); memory: the smallest peak per
// rank (within 5%, the faster); capacity: the most room for samples under the budget, or
// without one the least activation memory per rank (within 5%, then memory, then time).
// The tolerances keep estimates that are equal in all but noise from deciding by noise.
//
//===----------------------------------------------------------------------===//
#include "Decision.h"

#include <algorithm>

namespace snn::planner {

double batchCapacity(const Context &ctx, const Estimate &e) {
  double perSample = double(e.activationBytes) / double(ctx.batch);
  double room = double(ctx.request.memoryBudget - e.stateBytes - e.transientBytes);
  return perSample > 0 ? room / perSample : 1e30;
}

namespace {

/// Within `tolerance`, two numbers count as equal and the next criterion decides.
int compare(double a, double b, double tolerance) {
  if (a < b * (1.0 - tolerance))
    return -1;
  if (b < a * (1.0 - tolerance))
    return 1;
  return 0;
}

} // namespace

bool better(const Context &ctx, const Estimate &a, const Estimate &b) {
  int c = 0;
  switch (ctx.request.objective) {
  case Objective::Speed:
    c = compare(a.stepSeconds, b.stepSeconds, 0.01);
    if (c == 0)
      c = compare(double(a.memoryBytes), double(b.memoryBytes), 0.0);
    break;
  case Objective::Memory:
    c = compare(double(a.memoryBytes), double(b.memoryBytes), 0.05);
    if (c == 0)
      c = compare(a.stepSeconds, b.stepSeconds, 0.0);
    break;
  case Objective::Capacity:
    if (ctx.request.memoryBudget > 0)
      c = -compare(batchCapacity(ctx, a), batchCapacity(ctx, b), 0.05);
    else
      c = compare(double(a.activationBytes), double(b.activationBytes), 0.05);
    if (c == 0)
      c = compare(double(a.memoryBytes), double(b.memoryBytes), 0.0);
    if (c == 0)
      c = compare(a.stepSeconds, b.stepSeconds, 0.0);
    break;
  }
  return c < 0;
}

int choose(const Context &ctx, const std::vector<Estimate> &candidates, bool &fits) {
  int best = -1;
  fits = std::any_of(candidates.begin(), candidates.end(),
                     [](const Estimate &e) { return e.feasible && e.fitsBudget; });
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Estimate &e = candidates[i];
    if (!e.feasible || (fits && !e.fitsBudget))
      continue;
    if (best < 0)
      best = int(i);
    else if (fits ? better(ctx, e, candidates[best])
                  : e.memoryBytes < candidates[best].memoryBytes)
      best = int(i);
  }
  return best;
}

int runnerUp(const Context &ctx, const std::vector<Estimate> &candidates, int chosen) {
  bool fits = candidates[chosen].fitsBudget;
  int best = -1;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (int(i) != chosen && candidates[i].feasible && (!fits || candidates[i].fitsBudget) &&
        (best < 0 || better(ctx, candidates[i], candidates[best])))
      best = int(i);
  return best;
}

} // namespace snn::planner
