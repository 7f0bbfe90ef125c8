//===- Mode.h - Objectives, parallel modes and forcing one --------*- C++ -*-===//
//
// The planner's names for the schema's enums (snn/Schema/Enums.h, shared with the runtime),
// their spellings, and a mode the user forces instead of letting the planner choose.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_MODE_H
#define SNN_PLANNER_MODE_H

#include "snn/Planner/Result.h"
#include "snn/Schema/Enums.h"

#include <optional>
#include <string>

namespace snn::planner {

// The enums and their spellings are the schema's (snn/Schema/Enums.h), shared with the
// runtime; these names keep the planner's code short.
using Objective = schema::Objective;
using Mode = schema::ParallelMode;
using OptimizerStrategy = schema::OptimizerStrategy;

Result<Objective> parseObjective(const std::string &text);
inline const char *objectiveName(Objective objective) { return schema::nameOf(objective); }
inline const char *modeName(Mode mode) { return schema::nameOf(mode); }
inline const char *optimizerName(OptimizerStrategy strategy) { return schema::nameOf(strategy); }

/// A mode the user forces: none, dp, zero (= dp with ZeRO-1), fsdp, tp, fsdp_tp, pp. The
/// reference's spellings dp+zero, fsdp2 and fsdp2_tp are accepted too.
struct ModeRequest {
  Mode mode = Mode::None;
  OptimizerStrategy optimizer = OptimizerStrategy::None;
};
Result<ModeRequest> parseMode(const std::string &text);
/// A forced mode from its schema value; nullopt for RequestedMode::Auto.
std::optional<ModeRequest> modeRequest(schema::RequestedMode requested);

} // namespace snn::planner

#endif // SNN_PLANNER_MODE_H
