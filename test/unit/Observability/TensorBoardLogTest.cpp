//===- TensorBoardLogTest.cpp - Log lines as TensorBoard scalars ----------===//

#include "snn/Runtime/Observability/TensorBoardLog.h"

#include <gtest/gtest.h>

#include <map>

using namespace snn::runtime;

namespace {

std::map<std::string, double> byTag(const LogScalars &scalars) {
  std::map<std::string, double> tags;
  for (const Scalar &s : scalars.scalars)
    tags[s.tag] = s.value;
  return tags;
}

TEST(TensorBoardLogTest, StepEventScalars) {
  std::optional<LogScalars> scalars = scalarsOfLogLine(
      R"({"event":"step","epoch":0,"step":12,"loss":0.5,"accuracy":0.25,"lr":0.01,)"
      R"("samples_per_s":800.0,"seconds":0.02,)"
      R"("comm":[{"kind":"all_reduce","mesh_axis":"tp","calls":2,"bytes":64,"seconds":0.004},)"
      R"({"kind":"all_gather","mesh_axis":"tp","calls":1,"bytes":32,"seconds":0.001}],)"
      R"("firing_rates":{"conv_fc.2":0.125,"conv_fc.6":0.0625},)"
      R"("grad_norms":{"conv_fc.0":1.5,"conv_fc.1":0.25}})",
      0);
  ASSERT_TRUE(scalars);
  EXPECT_EQ(scalars->step, 12);
  std::map<std::string, double> want = {
      {"train/loss", 0.5},           {"train/accuracy", 0.25},
      {"train/learning_rate", 0.01}, {"train/samples_per_s", 800.0},
      {"train/step_seconds", 0.02},  {"train/comm_share", 0.005 / 0.02},
      {"firing_rate/conv_fc.2", 0.125}, {"firing_rate/conv_fc.6", 0.0625},
      {"grad_norm/conv_fc.0", 1.5},     {"grad_norm/conv_fc.1", 0.25}};
  std::map<std::string, double> got = byTag(*scalars);
  ASSERT_EQ(got.size(), want.size());
  for (const auto &[tag, value] : want)
    EXPECT_DOUBLE_EQ(got[tag], value) << tag;
}

TEST(TensorBoardLogTest, OlderStepEventsGiveWhatTheyHave) {
  // No seconds (an older log), a NaN loss (null): no step time, no comm share, no loss.
  std::optional<LogScalars> scalars = scalarsOfLogLine(
      R"({"event":"step","epoch":0,"step":3,"loss":null,"accuracy":0.5,"lr":0.1,)"
      R"("samples_per_s":10,"comm":[]})",
      0);
  ASSERT_TRUE(scalars);
  std::map<std::string, double> got = byTag(*scalars);
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(got.count("train/loss"), 0u);
  EXPECT_EQ(got.count("train/comm_share"), 0u);
  EXPECT_EQ(got.count("train/step_seconds"), 0u);
}

TEST(TensorBoardLogTest, EpochEventAtTheStepThatEndedIt) {
  std::optional<LogScalars> scalars = scalarsOfLogLine(
      R"({"event":"epoch","epoch":1,"steps":4,"loss":0.4,"accuracy":0.6,)"
      R"("eval_loss":0.45,"eval_accuracy":0.55,"seconds":1.0,"firing_rates":{"fc.1":0.2}})",
      7);
  ASSERT_TRUE(scalars);
  EXPECT_EQ(scalars->step, 7);
  std::map<std::string, double> got = byTag(*scalars);
  EXPECT_EQ(got.size(), 5u);
  EXPECT_DOUBLE_EQ(got["eval/accuracy"], 0.55);
  EXPECT_DOUBLE_EQ(got["epoch/loss"], 0.4);
  EXPECT_DOUBLE_EQ(got["epoch/firing_rate/fc.1"], 0.2);
}

TEST(TensorBoardLogTest, OtherLinesGiveNothing) {
  EXPECT_FALSE(scalarsOfLogLine(R"({"event":"end","steps":3})", 0));
  EXPECT_FALSE(scalarsOfLogLine(R"({"event":"rank","rank":0})", 0));
  EXPECT_FALSE(scalarsOfLogLine("not json", 0));
  EXPECT_FALSE(scalarsOfLogLine("[1, 2]", 0));
}

} // namespace
