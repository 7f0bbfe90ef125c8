//===- EnumsTest.cpp - Every spelling parses back to its value ------------===//

#include "snn/Schema/Enums.h"

#include <gtest/gtest.h>

using namespace snn::schema;

namespace {

/// Every printed name parses back to its value, and every value has a name.
template <typename E> void expectRoundTrip(size_t values) {
  SpellingTable<E> table = spellings<E>();
  size_t printed = 0;
  for (const Spelling<E> *s = table.begin; s != table.end; ++s) {
    EXPECT_EQ(parseEnum<E>(s->name), s->value) << s->name;
    if (!s->alias) {
      EXPECT_STREQ(nameOf(s->value), s->name);
      ++printed;
    }
  }
  EXPECT_EQ(printed, values);
}

} // namespace

TEST(Enums, EverySpellingRoundTrips) {
  expectRoundTrip<ParallelMode>(6);
  expectRoundTrip<Objective>(3);
  expectRoundTrip<OptimizerStrategy>(2);
  expectRoundTrip<PipelineSchedule>(4);
  expectRoundTrip<RequestedMode>(8);
}

TEST(Enums, AliasesParseButPrintTheirName) {
  EXPECT_EQ(parseEnum<ParallelMode>("fsdp2"), ParallelMode::FSDP);
  EXPECT_EQ(parseEnum<RequestedMode>("dp+zero"), RequestedMode::Zero);
  EXPECT_EQ(parseEnum<PipelineSchedule>("zbv"), PipelineSchedule::ZeroBubble);
  EXPECT_STREQ(nameOf(PipelineSchedule::Interleaved1F1B), "interleaved_1f1b");
  EXPECT_EQ(parseEnum<Objective>("Speed"), std::nullopt);
}

TEST(Enums, UnknownSpellingMessageListsPrintedNames) {
  EXPECT_EQ(unknownSpellingMessage<Objective>("fast"),
            "unknown objective 'fast' (expected speed, memory or capacity)");
  EXPECT_EQ(unknownSpellingMessage<PipelineSchedule>("2f2b"),
            "unknown pipeline schedule '2f2b' (expected gpipe, 1f1b, interleaved_1f1b or "
            "zero_bubble)");
}

TEST(Enums, RequestedModesResolve) {
  EXPECT_FALSE(resolveRequestedMode(RequestedMode::Auto));
  std::optional<ResolvedMode> zero = resolveRequestedMode(RequestedMode::Zero);
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->mode, ParallelMode::DP);
  EXPECT_EQ(zero->optimizer, OptimizerStrategy::Zero);
  EXPECT_EQ(resolveRequestedMode(RequestedMode::FSDP_TP)->mode, ParallelMode::FSDP_TP);
}
