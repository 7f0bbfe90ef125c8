//===- EnumNamesTest.cpp - The name tables of snn-run's enum flags --------===//
//
// One table per enum parses the flag (snn-run's command line) and formats
// the value (resume settings, checkpoints, help). Every name must read back
// as its value; the names are pinned, because checkpoints written before the
// tables store them and must still resume; an unknown name must give the
// error line snn-run printed before the tables.
//
//===----------------------------------------------------------------------===//

#include "snn/Schema/Enums.h"
#include "snn/Runtime/Support/EnumNames.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Optim/LrSchedule.h"
#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Training/Progress.h"

#include <gtest/gtest.h>

#include <set>

using namespace snn::runtime;

namespace {

/// Every entry parses to its value and formats to its name; no name or value
/// is listed twice.
template <typename Table> void expectRoundTrip(const Table &table) {
  std::set<std::string> names;
  std::set<int> values;
  for (const auto &[value, name] : table.entries) {
    EXPECT_EQ(table.parse(name), value) << name;
    EXPECT_STREQ(table.name(value), name);
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_TRUE(values.insert(int(value)).second) << name << "'s value twice";
  }
}

template <typename Table>
std::string parseError(const Table &table, const std::string &name) {
  try {
    table.parse(name);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

using Names = std::vector<std::string_view>;

} // namespace

TEST(EnumNames, Optimizer) {
  expectRoundTrip(kOptimizerKindNames);
  EXPECT_EQ(kOptimizerKindNames.names(), (Names{"sgd", "adam", "adamw"}));
  EXPECT_EQ(parseError(kOptimizerKindNames, "rmsprop"),
            "--optimizer: unknown optimizer 'rmsprop' (expected sgd, adam or "
            "adamw)");
  EXPECT_EQ(parseOptimizerKind("adamw"), OptimizerKind::AdamW);
  EXPECT_STREQ(optimizerKindName(OptimizerKind::Adam), "adam");
}

TEST(EnumNames, Schedule) {
  expectRoundTrip(kScheduleKindNames);
  EXPECT_EQ(kScheduleKindNames.names(), (Names{"constant", "step", "cosine"}));
  EXPECT_EQ(parseError(kScheduleKindNames, "linear"),
            "--schedule: unknown schedule 'linear' (expected constant, step "
            "or cosine)");
}

TEST(EnumNames, Loss) {
  expectRoundTrip(kLossKindNames);
  EXPECT_EQ(kLossKindNames.names(), (Names{"mse", "ce"}));
  EXPECT_EQ(kLossKindNames.parse("ce"), LossKind::CrossEntropy);
  EXPECT_EQ(parseError(kLossKindNames, "nll"),
            "--loss: unknown loss 'nll' (expected mse or ce)");
}

TEST(EnumNames, Progress) {
  expectRoundTrip(kProgressSettingNames);
  EXPECT_EQ(kProgressSettingNames.names(),
            (Names{"auto", "bar", "lines", "none"}));
  EXPECT_EQ(parseError(kProgressSettingNames, "fancy"),
            "--progress: unknown mode 'fancy' (expected auto, bar, lines or "
            "none)");
  EXPECT_EQ(Progress::modeFor(ProgressSetting::None), Progress::Mode::Off);
  EXPECT_EQ(Progress::modeFor(ProgressSetting::Lines), Progress::Mode::Lines);
  EXPECT_EQ(Progress::modeFor(ProgressSetting::Bar), Progress::Mode::Bar);
  EXPECT_NE(Progress::modeFor(ProgressSetting::Auto), Progress::Mode::Off);
}

TEST(EnumNames, MatchesTheExactSpelling) {
  for (const char *name : {"SGD", "Adam", " sgd", "sgd ", ""})
    EXPECT_THROW(kOptimizerKindNames.parse(name), Error) << "'" << name << "'";
  EXPECT_FALSE(kOptimizerKindNames.find("adam ").has_value());
  EXPECT_EQ(parseError(kOptimizerKindNames, ""),
            "--optimizer: unknown optimizer '' (expected sgd, adam or adamw)");
}

TEST(EnumNames, JoinsNamesAsAList) {
  EXPECT_EQ(snn::schema::joinAlternatives({}), "");
  EXPECT_EQ(snn::schema::joinAlternatives({"a"}), "a");
  EXPECT_EQ(snn::schema::joinAlternatives({"a", "b"}), "a or b");
  EXPECT_EQ(snn::schema::joinAlternatives({"a", "b", "c", "d"}), "a, b, c or d");
}
