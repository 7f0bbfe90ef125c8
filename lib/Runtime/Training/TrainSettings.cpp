//===- TrainSettings.cpp - From `snn-run train` flags to a run ------------===//

#include "snn/Runtime/Training/TrainSettings.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Support/Error.h"

#include <cmath>
#include <map>

namespace snn::runtime {

namespace {

void requireFinite(double value, const char *flag, bool allowNegative) {
  if (!std::isfinite(value) || (!allowNegative && value < 0))
    throw Error(std::string(flag) + " must be a finite number" +
                (allowNegative ? "" : " >= 0") + ", got " +
                formatDouble(value));
}

void validateRunLength(const TrainOptions &options) {
  if ((options.epochs > 0) == (options.steps > 0))
    throw Error("give exactly one of --epochs E and --steps S");
  if (options.epochs < 0 || options.steps < 0)
    throw Error("--epochs and --steps must be positive");
  if (options.batchSize < 1)
    throw Error("--batch-size must be at least 1");
}

void validateOptimizer(const TrainOptions &options) {
  OptimizerKind kind = parseOptimizerKind(options.optimizer);
  requireFinite(options.lr, "--lr", false);
  requireFinite(options.momentum, "--momentum", false);
  if (options.weightDecay)
    requireFinite(*options.weightDecay, "--weight-decay", false);
  if (options.momentum != 0 && kind != OptimizerKind::Sgd)
    throw Error("--momentum applies to --optimizer sgd only");
}

void validateSchedule(const TrainOptions &options) {
  ScheduleKind kind = parseScheduleKind(options.schedule);
  if (kind == ScheduleKind::Step && options.stepSize < 1)
    throw Error("--schedule step needs --step-size K (K >= 1)");
  if (options.stepSize < 0)
    throw Error("--step-size must be at least 1");
  requireFinite(options.gamma, "--gamma", false);
  requireFinite(options.etaMin, "--eta-min", false);
}

void validateCheckpointing(const TrainOptions &options) {
  bool checkpointing = !options.checkpointDir.empty();
  if (options.checkpointEvery < 0)
    throw Error("--checkpoint-every must be at least 1");
  if (options.checkpointEvery > 0 && !checkpointing)
    throw Error("--checkpoint-every needs --checkpoint DIR");
  if (options.resume && !checkpointing)
    throw Error("--resume needs --checkpoint DIR");
  if (options.stopAfter < 0)
    throw Error("--stop-after must be at least 1");
  if (options.stopAfter > 0 && !checkpointing)
    throw Error("--stop-after needs --checkpoint DIR (the run continues "
                "from it with --resume)");
  if (options.keepCheckpoints < 1)
    throw Error("--keep-checkpoints must be at least 1");
}

} // namespace

void validateTrainOptions(const TrainOptions &options) {
  validateRunLength(options);
  validateOptimizer(options);
  validateSchedule(options);
  validateCheckpointing(options);
  parseLossKind(options.loss);
  if (options.repeatTime < 0)
    throw Error("--repeat-time must be at least 1");
}

TrainConfig makeTrainConfig(const TrainOptions &options,
                            int64_t batchesPerEpoch) {
  TrainConfig config;
  config.totalSteps =
      options.steps > 0 ? options.steps : options.epochs * batchesPerEpoch;
  config.optimizer.kind = parseOptimizerKind(options.optimizer);
  config.optimizer.momentum = options.momentum;
  config.optimizer.weightDecay =
      options.weightDecay.value_or(defaultWeightDecay(config.optimizer.kind));
  config.schedule.kind = parseScheduleKind(options.schedule);
  config.schedule.lr = options.lr;
  config.schedule.stepSize = std::max<int64_t>(1, options.stepSize);
  config.schedule.gamma = options.gamma;
  config.schedule.etaMin = options.etaMin;
  config.schedule.totalSteps = std::max<int64_t>(1, config.totalSteps);
  config.loss = parseLossKind(options.loss);
  config.seed = options.seed;
  config.checkpointEvery = options.checkpointEvery;
  config.stopAfter = options.stopAfter;
  config.evalEveryEpoch = options.evalEveryEpoch;
  return config;
}

Settings trainSettings(const TrainOptions &options, const TrainConfig &config,
                       const Dataset &train, const BatchLayout &layout) {
  const LrSchedule &schedule = config.schedule;
  return {
      {"training samples", std::to_string(train.size())},
      {"time steps T", std::to_string(layout.steps)},
      {"--batch-size", std::to_string(options.batchSize)},
      {"--seed", std::to_string(options.seed)},
      {"--no-shuffle", options.shuffle ? "off" : "on"},
      {"--keep-last", options.dropLast ? "off" : "on"},
      {"--optimizer", optimizerKindName(config.optimizer.kind)},
      {"--lr", formatDouble(options.lr)},
      {"--momentum", formatDouble(config.optimizer.momentum)},
      {"--weight-decay", formatDouble(config.optimizer.weightDecay)},
      {"--schedule", scheduleKindName(schedule.kind)},
      {"--step-size", std::to_string(schedule.stepSize)},
      {"--gamma", formatDouble(schedule.gamma)},
      {"--eta-min", formatDouble(schedule.etaMin)},
      {"--loss", lossKindName(config.loss)},
  };
}

void checkResumeSettings(const Settings &saved, const Settings &current,
                         const std::string &where) {
  std::map<std::string, std::string> savedByKey(saved.begin(), saved.end());
  for (const auto &[key, value] : current) {
    auto it = savedByKey.find(key);
    if (it == savedByKey.end() || it->second == value)
      continue;
    throw Error("--resume: checkpoint '" + where +
                "' was saved by a run with " + key + " " + it->second +
                ", this run has " + key + " " + value +
                " (resume with the interrupted run's settings)");
  }
}

} // namespace snn::runtime
