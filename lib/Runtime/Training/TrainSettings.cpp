//===- TrainSettings.cpp - From `snn-run train` flags to a run ------------===//

#include "snn/Runtime/Training/TrainSettings.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/NumberFormat.h"

#include <algorithm>
#include <map>

namespace snn::runtime {

namespace {

void validateCheckpointing(const TrainOptions &options) {
  bool checkpointing = !options.checkpointDir.empty();
  if (options.checkpointEvery > 0 && !checkpointing)
    throw Error("--checkpoint-every needs --checkpoint DIR");
  if (options.resume && !checkpointing)
    throw Error("--resume needs --checkpoint DIR");
  if (options.checkpointSync && !checkpointing)
    throw Error("--checkpoint-sync needs --checkpoint DIR");
  if (options.checkpointErrors != CheckpointErrors::Stop && !checkpointing)
    throw Error("--checkpoint-errors needs --checkpoint DIR");
  if (options.stopAfter > 0 && !checkpointing)
    throw Error("--stop-after needs --checkpoint DIR (the run continues "
                "from it with --resume)");
}

} // namespace

void validateTrainOptions(const TrainOptions &options) {
  if ((options.epochs > 0) == (options.steps > 0))
    throw Error("give exactly one of --epochs E and --steps S");
  if (options.momentum != 0 && options.optimizer != OptimizerKind::Sgd)
    throw Error("--momentum applies to --optimizer sgd only");
  if (options.schedule == ScheduleKind::Step && options.stepSize < 1)
    throw Error("--schedule step needs --step-size K (K >= 1)");
  validateCheckpointing(options);
}

void checkPipelineBatches(const TrainOptions &options, int64_t microbatches,
                          int64_t replicas, int64_t samples) {
  int64_t share = options.batchSize / replicas, rest = samples % options.batchSize;
  if (share % microbatches != 0 ||
      (!options.dropLast && rest != 0 && (rest / replicas) % microbatches != 0))
    throw Error("--batch-size " + std::to_string(options.batchSize) + " over " +
                std::to_string(replicas) + " data-parallel replica(s) gives batches of " +
                std::to_string(share) + (rest && !options.dropLast
                                              ? " (and a last one of " +
                                                    std::to_string(rest / replicas) + ")"
                                              : std::string()) +
                " samples per pipeline, which do not divide into the plan's " +
                std::to_string(microbatches) + " microbatches (pp_microbatches)");
}

TrainConfig makeTrainConfig(const TrainOptions &options,
                            int64_t batchesPerEpoch) {
  TrainConfig config;
  config.totalSteps =
      options.steps > 0 ? options.steps : options.epochs * batchesPerEpoch;
  config.optimizer.kind = options.optimizer;
  config.optimizer.momentum = options.momentum;
  config.optimizer.weightDecay =
      options.weightDecay.value_or(defaultWeightDecay(options.optimizer));
  config.schedule.kind = options.schedule;
  config.schedule.lr = options.lr;
  config.schedule.stepSize = std::max<int64_t>(1, options.stepSize);
  config.schedule.gamma = options.gamma;
  config.schedule.etaMin = options.etaMin;
  config.schedule.totalSteps = std::max<int64_t>(1, config.totalSteps);
  config.loss = options.loss;
  config.seed = options.seed;
  config.checkpointEvery = options.checkpointEvery;
  config.checkpointPolicy = {!options.checkpointSync, options.checkpointErrors};
  config.skipNonFiniteSteps = options.skipNonFiniteSteps;
  config.firingRates = !options.noFiringRates;
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
      {"--optimizer", kOptimizerKindNames.name(config.optimizer.kind)},
      {"--lr", formatDouble(options.lr)},
      {"--momentum", formatDouble(config.optimizer.momentum)},
      {"--weight-decay", formatDouble(config.optimizer.weightDecay)},
      {"--schedule", kScheduleKindNames.name(schedule.kind)},
      {"--step-size", std::to_string(schedule.stepSize)},
      {"--gamma", formatDouble(schedule.gamma)},
      {"--eta-min", formatDouble(schedule.etaMin)},
      {"--loss", kLossKindNames.name(config.loss)},
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
