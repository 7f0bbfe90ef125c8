//===- HostCpuTimesTest.cpp - /proc/stat's CPU times and steal ------------===//
//
// calibrate records the hypervisor's share of the CPUs (steal) while it
// measures: the reading of /proc/stat's "cpu" line, and the share between two
// readings.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Support/HostCpuTimes.h"

#include <gtest/gtest.h>

using namespace snn::runtime;

TEST(HostCpuTimes, ReadsTheAllCpusLine) {
  std::optional<HostCpuTimes> times = parseHostCpuTimes(
      "cpu  100 1 50 800 3 0 2 44 0 0\ncpu0 50 0 25 400 1 0 1 22 0 0\nintr 1 2\n");
  ASSERT_TRUE(times.has_value());
  EXPECT_EQ((*times)[0], 100u);
  EXPECT_EQ((*times)[3], 800u);
  EXPECT_EQ((*times)[7], 44u) << "steal, the eighth number";
}

TEST(HostCpuTimes, WithoutStealAccountingThereIsNoReading) {
  EXPECT_FALSE(parseHostCpuTimes("cpu  100 1 50 800 3 0 2\n").has_value());
  EXPECT_FALSE(parseHostCpuTimes("cpu0 1 2 3 4 5 6 7 8\n").has_value()) << "one CPU only";
  EXPECT_FALSE(parseHostCpuTimes("").has_value());
  EXPECT_FALSE(readHostCpuTimes("/nonexistent/stat").has_value());
}

TEST(HostCpuTimes, StealsShareOfTheTimeBetweenTwoReadings) {
  HostCpuTimes before{100, 0, 50, 800, 0, 0, 0, 50};
  HostCpuTimes after{160, 0, 70, 890, 0, 0, 0, 80}; // 200 ticks, 30 of them stolen
  EXPECT_DOUBLE_EQ(stealShareBetween(before, after), 0.15);
  EXPECT_LT(stealShareBetween(before, before), 0) << "no time passed";
  EXPECT_LT(stealShareBetween(after, before), 0) << "readings out of order";
  EXPECT_LT(stealShareBetween(std::nullopt, after), 0);
  // This machine's own readings, where it has them, are in order and a share.
  std::optional<HostCpuTimes> here = readHostCpuTimes();
  if (here) {
    double share = stealShareBetween(HostCpuTimes{}, here);
    EXPECT_GE(share, 0.0);
    EXPECT_LE(share, 1.0);
  }
}
