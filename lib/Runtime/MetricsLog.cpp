//===- MetricsLog.cpp - The JSON-lines training log -----------------------===//

#include "snn/Runtime/MetricsLog.h"
#include "snn/Runtime/Error.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

namespace snn::runtime {

// ordered_json keeps "event" first, as a reader scanning the file expects.
using Json = nlohmann::ordered_json;

MetricsLog::MetricsLog(const std::string &path, bool append)
    : file(std::fopen(path.c_str(), append ? "a" : "w")), path(path) {
  if (!file)
    throw Error("--log " + path + ": cannot open: " + std::strerror(errno));
}

void MetricsLog::writeLine(const std::string &line) {
  if (!file)
    return;
  if (std::fputs(line.c_str(), file.get()) < 0 ||
      std::fputc('\n', file.get()) == EOF || std::fflush(file.get()) != 0)
    throw Error("--log " + path + ": write failed: " + std::strerror(errno));
}

void MetricsLog::step(const StepMetrics &metrics) {
  // NaN/Inf have no JSON form; nlohmann writes them as null.
  writeLine(Json{{"event", "step"},
                 {"epoch", metrics.epoch},
                 {"step", metrics.step},
                 {"loss", metrics.loss},
                 {"accuracy", metrics.accuracy},
                 {"lr", metrics.lr},
                 {"samples_per_s", metrics.samplesPerSecond}}
                .dump());
}

void MetricsLog::epoch(const EpochMetrics &metrics) {
  Json line{{"event", "epoch"},
            {"epoch", metrics.epoch},
            {"steps", metrics.steps},
            {"loss", metrics.loss},
            {"accuracy", metrics.accuracy}};
  if (metrics.hasEval) {
    line["eval_loss"] = metrics.eval.loss;
    line["eval_accuracy"] = metrics.eval.accuracy;
  }
  line["seconds"] = metrics.seconds;
  writeLine(line.dump());
}

std::string evalJson(const EvalMetrics &metrics) {
  return Json{{"event", "eval"},
              {"loss", metrics.loss},
              {"accuracy", metrics.accuracy},
              {"samples", metrics.samples},
              {"seconds", metrics.seconds}}
      .dump();
}

void MetricsLog::eval(const EvalMetrics &metrics) {
  writeLine(evalJson(metrics));
}

} // namespace snn::runtime
