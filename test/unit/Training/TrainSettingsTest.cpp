//===- TrainSettingsTest.cpp - From typed train options to a run ----------===//
//
// The settings a checkpoint stores are text: they must stay the strings that
// runs before the typed options wrote, or those checkpoints stop resuming.
// Also the checks of single flag values (run by snn-run's command line) and
// of their combinations (validateTrainOptions), with their messages.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Training/TrainSettings.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace snn::runtime;

namespace {

std::string errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TrainOptions adamwOptions() {
  TrainOptions options;
  options.steps = 10;
  options.batchSize = 2;
  options.lr = 0.001;
  options.seed = 7;
  options.optimizer = OptimizerKind::AdamW;
  options.schedule = ScheduleKind::Cosine;
  options.loss = LossKind::CrossEntropy;
  return options;
}

} // namespace

TEST(TrainSettings, SettingsKeepTheirStrings) {
  TrainOptions options = adamwOptions();
  Dataset train{"x.npy", at::zeros({5, 3}), at::zeros({5}, at::kLong)};
  BatchLayout layout{4, false};
  TrainConfig config = makeTrainConfig(options, 3);
  Settings settings = trainSettings(options, config, train, layout);
  // As written by snn-run before the options were typed (and so in its
  // checkpoints): these must match for those checkpoints to resume.
  Settings before = {
      {"training samples", "5"}, {"time steps T", "4"},
      {"--batch-size", "2"},     {"--seed", "7"},
      {"--no-shuffle", "off"},   {"--keep-last", "off"},
      {"--optimizer", "adamw"},  {"--lr", "0.001"},
      {"--momentum", "0"},       {"--weight-decay", "0.01"},
      {"--schedule", "cosine"},  {"--step-size", "1"},
      {"--gamma", "0.1"},        {"--eta-min", "0"},
      {"--loss", "ce"},
  };
  EXPECT_EQ(settings, before);
  EXPECT_NO_THROW(checkResumeSettings(before, settings, "ck"));

  options.optimizer = OptimizerKind::Sgd;
  options.schedule = ScheduleKind::Step;
  options.stepSize = 3;
  options.loss = LossKind::Mse;
  Settings sgd =
      trainSettings(options, makeTrainConfig(options, 3), train, layout);
  EXPECT_EQ(sgd[6].second, "sgd");
  EXPECT_EQ(sgd[9].second, "0");
  EXPECT_EQ(sgd[10].second, "step");
  EXPECT_EQ(sgd[14].second, "mse");
  EXPECT_EQ(errorOf([&] { checkResumeSettings(before, sgd, "ck"); }),
            "--resume: checkpoint 'ck' was saved by a run with --optimizer "
            "adamw, this run has --optimizer sgd (resume with the interrupted "
            "run's settings)");
}

TEST(TrainSettings, ConfigTakesTheTypedValues) {
  TrainOptions options = adamwOptions();
  options.weightDecay = 0.5;
  TrainConfig config = makeTrainConfig(options, 3);
  EXPECT_EQ(config.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_EQ(config.optimizer.weightDecay, 0.5);
  EXPECT_EQ(config.schedule.kind, ScheduleKind::Cosine);
  EXPECT_EQ(config.loss, LossKind::CrossEntropy);
  EXPECT_EQ(config.totalSteps, 10);
  options.steps = 0;
  options.epochs = 2;
  EXPECT_EQ(makeTrainConfig(options, 3).totalSteps, 6);
}

TEST(TrainSettings, CombinationsAreChecked) {
  TrainOptions options = adamwOptions();
  EXPECT_NO_THROW(validateTrainOptions(options));
  auto with = [&](const std::function<void(TrainOptions &)> &change) {
    TrainOptions changed = options;
    change(changed);
    return errorOf([&] { validateTrainOptions(changed); });
  };
  EXPECT_EQ(with([](TrainOptions &o) { o.epochs = 1; }),
            "give exactly one of --epochs E and --steps S");
  EXPECT_EQ(with([](TrainOptions &o) { o.steps = 0; }),
            "give exactly one of --epochs E and --steps S");
  EXPECT_EQ(with([](TrainOptions &o) { o.momentum = 0.9; }),
            "--momentum applies to --optimizer sgd only");
  EXPECT_EQ(with([](TrainOptions &o) { o.schedule = ScheduleKind::Step; }),
            "--schedule step needs --step-size K (K >= 1)");
  EXPECT_EQ(with([](TrainOptions &o) { o.resume = true; }),
            "--resume needs --checkpoint DIR");
  EXPECT_EQ(with([](TrainOptions &o) { o.checkpointEvery = 2; }),
            "--checkpoint-every needs --checkpoint DIR");
  EXPECT_EQ(with([](TrainOptions &o) { o.stopAfter = 2; }),
            "--stop-after needs --checkpoint DIR (the run continues from it "
            "with --resume)");
}

TEST(TrainSettings, SingleValueChecks) {
  EXPECT_NO_THROW(requireFiniteNonNegative(0.0, "--lr"));
  EXPECT_EQ(errorOf([] { requireFiniteNonNegative(-0.5, "--momentum"); }),
            "--momentum must be a finite number >= 0, got -0.5");
  EXPECT_EQ(errorOf([] { requireFiniteNonNegative(NAN, "--lr"); }),
            "--lr must be a finite number >= 0, got nan");
  EXPECT_EQ(errorOf([] { requireFiniteNonNegative(INFINITY, "--gamma"); }),
            "--gamma must be a finite number >= 0, got inf");
  EXPECT_NO_THROW(requireCount(1, "--batch-size", false));
  EXPECT_EQ(errorOf([] { requireCount(0, "--batch-size", false); }),
            "--batch-size must be at least 1");
  EXPECT_NO_THROW(requireCount(0, "--stop-after", true));
  EXPECT_EQ(errorOf([] { requireCount(-1, "--stop-after", true); }),
            "--stop-after must be at least 1");
}
