//===- RunReport.cpp - What `snn-run report` shows of a run ---------------===//

#include "snn/Runtime/Observability/RunReport.h"
#include "LogReader.h"
#include "ReportTrace.h"
#include "snn/Runtime/Support/Error.h"

#include <filesystem>
#include <map>

namespace snn::runtime {

namespace {

/// Step events by step (the last event of a step wins) and epoch events by
/// epoch, each epoch with the step that ended it.
struct RunEvents {
  std::map<int64_t, const LogEvent *> steps;
  std::map<int64_t, std::pair<const LogEvent *, int64_t>> epochs;
  const LogEvent *end = nullptr;
  const LogEvent *rank = nullptr;
};

RunEvents indexEvents(const std::vector<LogEvent> &events) {
  RunEvents run;
  int64_t lastStep = 0;
  for (const LogEvent &event : events) {
    const std::string &kind = event.kind();
    if (kind == "step") {
      lastStep = requireInteger(event, "step");
      requireNumber(event, "loss");
      requireNumber(event, "accuracy");
      run.steps[lastStep] = &event;
    } else if (kind == "epoch") {
      run.epochs[requireInteger(event, "epoch")] = {&event, lastStep};
    } else if (kind == "end") {
      run.end = &event;
    } else if (kind == "rank" && !run.rank) {
      run.rank = &event;
    }
  }
  return run;
}

/// event[key] when it is a number, else null (a NaN is null in the log too).
LogJson numberOrNull(const LogEvent &event, const char *key) {
  auto it = event.event.find(key);
  return it != event.event.end() && it->is_number() ? *it : LogJson(nullptr);
}

LogJson stepColumns(const RunEvents &run) {
  static const char *const kColumns[] = {"epoch", "loss", "accuracy", "lr",
                                         "samples_per_s", "seconds"};
  LogJson columns = {{"step", LogJson::array()}};
  for (const char *key : kColumns)
    columns[key] = LogJson::array();
  for (const auto &[step, event] : run.steps) {
    columns["step"].push_back(step);
    for (const char *key : kColumns)
      columns[key].push_back(numberOrNull(*event, key));
  }
  return columns;
}

LogJson epochRows(const RunEvents &run) {
  LogJson rows = LogJson::array();
  for (const auto &[epoch, entry] : run.epochs) {
    const LogEvent &event = *entry.first;
    rows.push_back({{"epoch", epoch},
                    {"end_step", entry.second},
                    {"loss", numberOrNull(event, "loss")},
                    {"accuracy", numberOrNull(event, "accuracy")},
                    {"eval_loss", numberOrNull(event, "eval_loss")},
                    {"eval_accuracy", numberOrNull(event, "eval_accuracy")}});
  }
  return rows;
}

/// One series per layer named in any step's "firing_rates", in the order
/// the layers first appear.
LogJson firingRateSeries(const RunEvents &run) {
  LogJson series = LogJson::array();
  std::map<std::string, size_t> index;
  for (const auto &[step, event] : run.steps) {
    auto rates = event->event.find("firing_rates");
    if (rates == event->event.end())
      continue;
    if (!rates->is_object())
      throw Error(event->where + ": step event: 'firing_rates' is not an object");
    for (auto it = rates->begin(); it != rates->end(); ++it) {
      auto [at, added] = index.emplace(it.key(), series.size());
      if (added)
        series.push_back({{"layer", it.key()}, {"step", LogJson::array()},
                          {"rate", LogJson::array()}});
      series[at->second]["step"].push_back(step);
      series[at->second]["rate"].push_back(it->is_number() ? *it : LogJson(nullptr));
    }
  }
  return series;
}

LogJson rankSeries(int64_t rank, const std::string &file, const RunEvents &run) {
  LogJson series = {{"rank", rank}, {"file", file}, {"mode", nullptr},
                    {"step", LogJson::array()}, {"seconds", LogJson::array()}};
  if (run.rank && run.rank->event.contains("mode"))
    series["mode"] = run.rank->event["mode"];
  for (const auto &[step, event] : run.steps) {
    series["step"].push_back(step);
    series["seconds"].push_back(numberOrNull(*event, "seconds"));
  }
  return series;
}

/// The end event's plan_check, when the run's plan had a prediction.
void addPlanCheck(LogJson &plans, int64_t rank, const RunEvents &run) {
  if (!run.end || !run.end->event.contains("plan_check"))
    return;
  const LogJson &check = run.end->event["plan_check"];
  if (!check.is_object() || !check.contains("predicted") || !check.contains("measured"))
    throw Error(run.end->where + ": end event: 'plan_check' lacks 'predicted' or 'measured'");
  LogJson row = check;
  row["rank"] = rank;
  plans.push_back(row);
}

/// LOG.rank<R>.jsonl beside LOG (docs/training.md, "Outputs"), by rank.
std::map<int64_t, std::string> rankLogPaths(const std::string &logPath) {
  namespace fs = std::filesystem;
  fs::path log(logPath);
  fs::path dir = log.parent_path().empty() ? fs::path(".") : log.parent_path();
  std::string stem = log.stem().string(), ext = log.extension().string();
  std::map<int64_t, std::string> paths;
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    std::string prefix = stem + ".rank";
    if (name.size() <= prefix.size() + ext.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
      continue;
    std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - ext.size());
    if (!digits.empty() && digits.size() < 7 &&
        digits.find_first_not_of("0123456789") == std::string::npos)
      paths[std::stoll(digits)] = (log.parent_path() / name).string();
  }
  return paths;
}

/// Step times and plan checks per rank: the rank logs, or the log itself
/// for a run of one process.
void addRanks(LogJson &data, const std::string &logPath, const RunEvents &run) {
  LogJson ranks = LogJson::array(), plans = LogJson::array();
  std::map<int64_t, std::string> paths = rankLogPaths(logPath);
  if (paths.empty()) {
    ranks.push_back(rankSeries(0, logPath, run));
    addPlanCheck(plans, 0, run);
  }
  for (const auto &[rank, path] : paths) {
    std::vector<LogEvent> events = readLogEvents(path);
    RunEvents rankRun = indexEvents(events);
    ranks.push_back(rankSeries(rank, path, rankRun));
    addPlanCheck(plans, rank, rankRun);
  }
  data["ranks"] = ranks;
  data["plan"] = plans;
}

} // namespace

std::string reportData(const std::string &logPath, const std::string &tracePath) {
  std::vector<LogEvent> events = readLogEvents(logPath);
  RunEvents run = indexEvents(events);
  if (run.steps.empty())
    throw Error(logPath + ": holds no step event (not a 'snn-run train --log' file?)");
  LogJson data = {{"log", logPath}};
  data["steps"] = stepColumns(run);
  data["epochs"] = epochRows(run);
  data["firing_rates"] = firingRateSeries(run);
  addRanks(data, logPath, run);
  data["trace"] = tracePath.empty() ? LogJson(nullptr) : traceSection(tracePath);
  return data.dump();
}

} // namespace snn::runtime
