//===- ScheduleSimulation.h - A schedule run on an ideal machine -*- C++ -*-===//
//
// A discrete-event simulation of a schedule (Schedule.h): every rank runs
// its actions in order, each as soon as the rank is free and what it needs
// is done (F(s, m) after F(s-1, m); B(s, m) after F(s, m) and B(s+1, m);
// W(s, m) after B(s, m)), with fixed costs and free transfers. It proves a
// schedule complete and deadlock-free, and gives its theoretical bubble:
// the share of time ranks wait, idle / (idle + busy). snn-run reports it
// beside the bubble it measures (the rank logs' "bubble").
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_PIPELINE_SCHEDULESIMULATION_H
#define SNN_RUNTIME_PIPELINE_SCHEDULESIMULATION_H

#include "snn/Runtime/Pipeline/Schedule.h"

#include <vector>

namespace snn::runtime {

/// Unit costs by default: a forward 1, an unsplit backward 2, a split
/// backward's input part (B) 1 and its weight part (W) 1.
struct ActionCosts {
  double forward = 1.0;
  double backward = 2.0;
  double inputGrad = 1.0;
  double weightGrad = 1.0;
};

struct ScheduleSimulation {
  double makespan = 0.0;
  /// Per rank: time computing, and when its last action ends.
  std::vector<double> busy, end;
  /// Per rank, per action (the schedule's order): when it starts and ends.
  std::vector<std::vector<double>> start, finish;

  /// Idle / (idle + busy) of all ranks over the whole makespan (the classic
  /// bubble: (S - 1) / (M + S - 1) for GPipe and 1F1B).
  double bubbleFraction() const;
  /// One rank's share of [0, its last action's end] spent waiting: what
  /// that rank measures from the step's start to its pipeline's end.
  double rankBubble(size_t rank) const;
};

/// Runs the schedule. Throws Error if an action is missing, repeated, or
/// on the wrong rank (a W without a split backward, too), or if the ranks
/// deadlock (naming the action each waits at and what it waits for).
ScheduleSimulation simulateSchedule(const ScheduleConfig &config,
                                    const std::vector<std::vector<Action>> &ranks,
                                    const ActionCosts &costs = {});

} // namespace snn::runtime

#endif // SNN_RUNTIME_PIPELINE_SCHEDULESIMULATION_H
