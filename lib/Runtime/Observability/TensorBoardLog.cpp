//===- TensorBoardLog.cpp - The training log as TensorBoard scalars -------===//

#include "snn/Runtime/Observability/TensorBoardLog.h"

#include <nlohmann/json.hpp>

namespace snn::runtime {

namespace {

// Ordered: a step's firing rates keep the log's layer order.
using Json = nlohmann::ordered_json;

/// `tag` <- event[key] when it is a number.
void addNumber(std::vector<Scalar> &out, const Json &event, const char *key,
               const std::string &tag) {
  auto it = event.find(key);
  if (it != event.end() && it->is_number())
    out.push_back({tag, it->get<double>()});
}

/// event[key] = {"<name>": value, ...} ("firing_rates": layer -> rate,
/// "grad_norms": parameter group -> norm) -> `prefix`<name>, in the log's
/// order.
void addNamed(std::vector<Scalar> &out, const Json &event, const char *key,
              const std::string &prefix) {
  auto rates = event.find(key);
  if (rates == event.end() || !rates->is_object())
    return;
  for (auto it = rates->begin(); it != rates->end(); ++it)
    if (it->is_number())
      out.push_back({prefix + it.key(), it->get<double>()});
}

/// The share of the step spent in the collectives a partitioned run's step
/// event lists under "comm" (each entry's "seconds").
void addCommShare(std::vector<Scalar> &out, const Json &event) {
  auto comm = event.find("comm");
  auto seconds = event.find("seconds");
  if (comm == event.end() || !comm->is_array() || seconds == event.end() ||
      !seconds->is_number() || seconds->get<double>() <= 0)
    return;
  double inside = 0;
  for (const Json &entry : *comm)
    if (entry.contains("seconds") && entry["seconds"].is_number())
      inside += entry["seconds"].get<double>();
  out.push_back({"train/comm_share", inside / seconds->get<double>()});
}

std::vector<Scalar> stepScalars(const Json &event) {
  std::vector<Scalar> out;
  addNumber(out, event, "loss", "train/loss");
  addNumber(out, event, "accuracy", "train/accuracy");
  addNumber(out, event, "lr", "train/learning_rate");
  addNumber(out, event, "samples_per_s", "train/samples_per_s");
  addNumber(out, event, "seconds", "train/step_seconds");
  addCommShare(out, event);
  addNamed(out, event, "firing_rates", "firing_rate/");
  addNamed(out, event, "grad_norms", "grad_norm/");
  return out;
}

std::vector<Scalar> epochScalars(const Json &event) {
  std::vector<Scalar> out;
  addNumber(out, event, "loss", "epoch/loss");
  addNumber(out, event, "accuracy", "epoch/accuracy");
  addNumber(out, event, "eval_loss", "eval/loss");
  addNumber(out, event, "eval_accuracy", "eval/accuracy");
  addNamed(out, event, "firing_rates", "epoch/firing_rate/");
  return out;
}

} // namespace

std::optional<LogScalars> scalarsOfLogLine(const std::string &line,
                                           int64_t lastStep) {
  Json event = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!event.is_object() || !event.contains("event"))
    return std::nullopt;
  const Json &kind = event["event"];
  if (kind == "step" && event.contains("step") && event["step"].is_number_integer())
    return LogScalars{event["step"].get<int64_t>(), stepScalars(event)};
  if (kind == "epoch")
    return LogScalars{lastStep, epochScalars(event)};
  return std::nullopt;
}

void TensorBoardLog::event(const std::string &line) {
  std::optional<LogScalars> scalars = scalarsOfLogLine(line, lastStep);
  if (!scalars || scalars->scalars.empty())
    return;
  lastStep = scalars->step;
  writer.write(scalars->step, scalars->scalars);
}

} // namespace snn::runtime
