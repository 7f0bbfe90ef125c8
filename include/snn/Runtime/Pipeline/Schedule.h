//===- Schedule.h - The order of a pipeline's forwards and backwards -*- C++ -*-===//
//
// A pure function of the plan: for S ranks holding V logical stages each
// (stage v*S + c on rank c), M microbatches and a schedule, every rank's
// ordered list of actions:
//   F(stage, mb)  forward of one microbatch through one stage
//   B(stage, mb)  its backward (only the input gradients when the backward
//                 is split: zero_bubble, or pp_delay_wgrad)
//   W(stage, mb)  the weight gradients of a split backward
// Schedules:
//   gpipe             every forward, then every backward (V >= 1: chunk by
//                     chunk, microbatches in order).
//   1f1b              S - c - 1 warm-up forwards, then one forward and one
//                     backward alternately, then the remaining backwards.
//   interleaved_1f1b  Megatron-LM's order over the rank's V chunks (groups of
//                     S microbatches per chunk; warm-up 2(S - c - 1) +
//                     (V - 1) S; all forwards first when M = S); V = 1 is
//                     1f1b. V > 1 needs M divisible by S.
//   zero_bubble       the interleaved order with split backwards and the
//                     W's placed statically (ZB-H1 style): the order of F's
//                     and B's is kept, and the W's go where a simulation
//                     with unit costs (F = B = W = 1, free transfers) finds
//                     the rank idle, waiting for another rank's F or B (in
//                     the cool-down above all); a rank holds at most one W
//                     back (at most one microbatch's activations more than
//                     1F1B), so a W runs at once when another waits.
// pp_delay_wgrad splits the backward of any schedule the same way (gpipe
// holds every W back until it would wait). The W's of one stage always run
// in microbatch order, so gradients accumulate in the order of an unsplit
// run.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_PIPELINE_SCHEDULE_H
#define SNN_RUNTIME_PIPELINE_SCHEDULE_H

#include "snn/Schema/Enums.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

enum class ActionKind { Forward, Backward, WeightGrad };

struct Action {
  ActionKind kind = ActionKind::Forward;
  int64_t stage = 0;
  int64_t microbatch = 0;

  bool operator==(const Action &other) const {
    return kind == other.kind && stage == other.stage &&
           microbatch == other.microbatch;
  }
};

/// "F s1 m3", "B s0 m0", "W s2 m1".
std::string describeAction(const Action &action);

/// What must be done before `action` may start, of a pipeline of `stages`:
/// F(s, m) needs F(s-1, m); B(s, m) needs F(s, m) and B(s+1, m); W(s, m)
/// needs B(s, m).
std::vector<Action> actionDependencies(const Action &action, int64_t stages);

struct ScheduleConfig {
  schema::PipelineSchedule schedule = schema::PipelineSchedule::GPipe;
  int64_t ranks = 1;         ///< S
  int64_t virtualStages = 1; ///< V
  int64_t microbatches = 1;  ///< M
  /// pp_delay_wgrad (zero_bubble always splits).
  bool delayWeightGrad = false;

  int64_t stageCount() const { return ranks * virtualStages; }
  bool splitsBackward() const {
    return delayWeightGrad ||
           schedule == schema::PipelineSchedule::ZeroBubble;
  }
};

/// Every rank's actions, in the order it runs them (index = pp
/// coordinate). Throws Error naming the plan values a schedule cannot run
/// (1f1b with virtual stages, interleaving with M not divisible by S, sizes
/// below 1).
std::vector<std::vector<Action>> buildSchedule(const ScheduleConfig &config);

} // namespace snn::runtime

#endif // SNN_RUNTIME_PIPELINE_SCHEDULE_H
