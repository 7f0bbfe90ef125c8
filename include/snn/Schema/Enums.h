//===- Enums.h - Named choices shared by compiler and runtime ---*- C++ -*-===//
//
// Every enumerated value that crosses from the compiler to the runtime (or from
// a user's flag into either) is spelled here, once: the planner, the `#snn.plan`
// attribute, snn-compile's flags, the manifest writer and the runtime's reader
// all print and parse through these tables.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_ENUMS_H
#define SNN_SCHEMA_ENUMS_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace snn::schema {

/// How the model is spread over ranks (the plan's `mode`). ZeRO is dp with the
/// optimizer strategy `zero`, not a mode of its own.
enum class ParallelMode { None, DP, FSDP, TP, FSDP_TP, PP };
/// What the planner optimises for.
enum class Objective { Speed, Memory, Capacity };
/// Where optimizer state lives in data parallelism.
enum class OptimizerStrategy { None, Zero };
/// The order in which pipeline stages run microbatches.
enum class PipelineSchedule { GPipe, OneFOneB, Interleaved1F1B, ZeroBubble };
/// A user's `--mode`: a mode to force, or `auto` to let the planner choose.
enum class RequestedMode { Auto, None, DP, Zero, FSDP, TP, FSDP_TP, PP };

/// One accepted spelling. `alias` spellings parse but are never printed.
template <typename E> struct Spelling {
  E value;
  const char *name;
  bool alias = false;
};

/// The spellings of `E` and the word that names it in messages ("mode").
template <typename E> struct SpellingTable {
  const Spelling<E> *begin;
  const Spelling<E> *end;
  const char *what;
};

template <typename E> SpellingTable<E> spellings();
template <> SpellingTable<ParallelMode> spellings<ParallelMode>();
template <> SpellingTable<Objective> spellings<Objective>();
template <> SpellingTable<OptimizerStrategy> spellings<OptimizerStrategy>();
template <> SpellingTable<PipelineSchedule> spellings<PipelineSchedule>();
template <> SpellingTable<RequestedMode> spellings<RequestedMode>();

/// The printed name of `value`.
template <typename E> const char *nameOf(E value) {
  SpellingTable<E> table = spellings<E>();
  for (const Spelling<E> *s = table.begin; s != table.end; ++s)
    if (s->value == value && !s->alias)
      return s->name;
  return "?";
}

/// `text` as a value of `E`, aliases included; nullopt when unknown.
template <typename E> std::optional<E> parseEnum(std::string_view text) {
  SpellingTable<E> table = spellings<E>();
  for (const Spelling<E> *s = table.begin; s != table.end; ++s)
    if (text == s->name)
      return s->value;
  return std::nullopt;
}

/// "a", "a or b", "a, b or c": how every message lists the accepted names.
std::string joinAlternatives(const std::vector<std::string_view> &names);

/// "speed, memory or capacity": the printed names, for messages and --help.
template <typename E> std::string spellingList() {
  SpellingTable<E> table = spellings<E>();
  std::vector<std::string_view> names;
  for (const Spelling<E> *s = table.begin; s != table.end; ++s)
    if (!s->alias)
      names.push_back(s->name);
  return joinAlternatives(names);
}

/// "unknown mode 'x' (expected none, dp, ...)".
template <typename E> std::string unknownSpellingMessage(std::string_view text) {
  return std::string("unknown ") + spellings<E>().what + " '" + std::string(text) +
         "' (expected " + spellingList<E>() + ")";
}

/// Whether every rank of `mode` runs the one whole program, the runtime sharding the
/// batch (and the optimizer state or parameters) itself: the data-parallel family.
bool runsReplicatedProgram(ParallelMode mode);

/// Whether an artifact can be written for a plan of `mode` whose programs are
/// `partitioned` (or not): one process and the data-parallel family as one
/// program every rank runs; tp and fsdp_tp only once partitioned into per-rank
/// programs (--snn-partition); pp as its stage programs (the exporter checks
/// that --snn-split-pipeline-stages made them).
bool canExportMode(ParallelMode mode, bool partitioned);
/// Whether the compiler partitions a plan of `mode` over its tp axis (per-rank programs with
/// split parameters and collectives): tp and fsdp_tp always, pp when its stages are
/// tensor-parallel (a tp axis in its mesh).
bool partitionsOverTp(ParallelMode mode, bool meshHasTpAxis);

/// A forced mode as the plan's mode and optimizer strategy; nullopt for Auto.
struct ResolvedMode {
  ParallelMode mode;
  OptimizerStrategy optimizer;
};
std::optional<ResolvedMode> resolveRequestedMode(RequestedMode requested);

} // namespace snn::schema

#endif // SNN_SCHEMA_ENUMS_H
