//===- Enums.cpp - The spelling tables ------------------------------------===//
//
// The first non-alias spelling of a value is its printed name. Aliases are the
// reference package's spellings (fsdp2, dp+zero, ...) kept so its users' flags
// keep working.
//
//===----------------------------------------------------------------------===//
#include "snn/Schema/Enums.h"

#include <iterator>

namespace snn::schema {

namespace {

template <typename E, size_t N>
SpellingTable<E> table(const Spelling<E> (&entries)[N], const char *what) {
  return {entries, entries + N, what};
}

const Spelling<ParallelMode> kModes[] = {
    {ParallelMode::None, "none"}, {ParallelMode::DP, "dp"},
    {ParallelMode::FSDP, "fsdp"}, {ParallelMode::TP, "tp"},
    {ParallelMode::FSDP_TP, "fsdp_tp"}, {ParallelMode::PP, "pp"},
    {ParallelMode::FSDP, "fsdp2", true}, {ParallelMode::FSDP_TP, "fsdp2_tp", true},
};

const Spelling<Objective> kObjectives[] = {
    {Objective::Speed, "speed"},
    {Objective::Memory, "memory"},
    {Objective::Capacity, "capacity"},
};

const Spelling<OptimizerStrategy> kOptimizers[] = {
    {OptimizerStrategy::None, "none"},
    {OptimizerStrategy::Zero, "zero"},
};

const Spelling<PipelineSchedule> kSchedules[] = {
    {PipelineSchedule::GPipe, "gpipe"},
    {PipelineSchedule::OneFOneB, "1f1b"},
    {PipelineSchedule::Interleaved1F1B, "interleaved_1f1b"},
    {PipelineSchedule::ZeroBubble, "zero_bubble"},
    {PipelineSchedule::Interleaved1F1B, "interleaved", true},
    {PipelineSchedule::ZeroBubble, "zbv", true},
};

const Spelling<RequestedMode> kRequestedModes[] = {
    {RequestedMode::Auto, "auto"},     {RequestedMode::None, "none"},
    {RequestedMode::DP, "dp"},         {RequestedMode::Zero, "zero"},
    {RequestedMode::FSDP, "fsdp"},     {RequestedMode::TP, "tp"},
    {RequestedMode::FSDP_TP, "fsdp_tp"}, {RequestedMode::PP, "pp"},
    {RequestedMode::Zero, "dp+zero", true}, {RequestedMode::FSDP, "fsdp2", true},
    {RequestedMode::FSDP_TP, "fsdp2_tp", true},
};

} // namespace

template <> SpellingTable<ParallelMode> spellings<ParallelMode>() {
  return table(kModes, "mode");
}
template <> SpellingTable<Objective> spellings<Objective>() {
  return table(kObjectives, "objective");
}
template <> SpellingTable<OptimizerStrategy> spellings<OptimizerStrategy>() {
  return table(kOptimizers, "optimizer strategy");
}
template <> SpellingTable<PipelineSchedule> spellings<PipelineSchedule>() {
  return table(kSchedules, "pipeline schedule");
}
template <> SpellingTable<RequestedMode> spellings<RequestedMode>() {
  return table(kRequestedModes, "mode");
}

std::string joinAlternatives(const std::vector<std::string_view> &names) {
  std::string joined;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      joined += i + 1 == names.size() ? " or " : ", ";
    joined += names[i];
  }
  return joined;
}

bool runsReplicatedProgram(ParallelMode mode) {
  return mode == ParallelMode::DP || mode == ParallelMode::FSDP;
}

bool partitionsOverTp(ParallelMode mode, bool meshHasTpAxis) {
  if (mode == ParallelMode::TP || mode == ParallelMode::FSDP_TP)
    return true;
  return mode == ParallelMode::PP && meshHasTpAxis;
}

bool canExportMode(ParallelMode mode, bool partitioned) {
  if (mode == ParallelMode::TP || mode == ParallelMode::FSDP_TP)
    return partitioned;
  if (mode == ParallelMode::PP)
    return true; // partitioned exactly when its mesh has a tp axis
  return !partitioned && (mode == ParallelMode::None || runsReplicatedProgram(mode));
}

std::optional<ResolvedMode> resolveRequestedMode(RequestedMode requested) {
  using M = ParallelMode;
  using O = OptimizerStrategy;
  switch (requested) {
  case RequestedMode::Auto: return std::nullopt;
  case RequestedMode::None: return ResolvedMode{M::None, O::None};
  case RequestedMode::DP: return ResolvedMode{M::DP, O::None};
  case RequestedMode::Zero: return ResolvedMode{M::DP, O::Zero};
  case RequestedMode::FSDP: return ResolvedMode{M::FSDP, O::None};
  case RequestedMode::TP: return ResolvedMode{M::TP, O::None};
  case RequestedMode::FSDP_TP: return ResolvedMode{M::FSDP_TP, O::None};
  case RequestedMode::PP: return ResolvedMode{M::PP, O::None};
  }
  return std::nullopt;
}

} // namespace snn::schema
