//===- Mode.cpp - Parsing objectives and forced modes ---------------------===//
#include "snn/Planner/Mode.h"

namespace snn::planner {

Result<Objective> parseObjective(const std::string &text) {
  if (std::optional<Objective> objective = schema::parseEnum<Objective>(text))
    return *objective;
  return makeError(schema::unknownSpellingMessage<Objective>(text));
}

std::optional<ModeRequest> modeRequest(schema::RequestedMode requested) {
  std::optional<schema::ResolvedMode> resolved = schema::resolveRequestedMode(requested);
  if (!resolved)
    return std::nullopt;
  return ModeRequest{resolved->mode, resolved->optimizer};
}

Result<ModeRequest> parseMode(const std::string &text) {
  std::optional<schema::RequestedMode> requested = schema::parseEnum<schema::RequestedMode>(text);
  std::optional<ModeRequest> forced =
      requested ? modeRequest(*requested) : std::optional<ModeRequest>();
  if (!requested)
    return makeError(schema::unknownSpellingMessage<schema::RequestedMode>(text));
  if (!forced)
    return makeError("mode '" + text + "' chooses a mode; it does not force one");
  return *forced;
}

} // namespace snn::planner
