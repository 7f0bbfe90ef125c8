//===- RunReportTest.cpp - The report's data and page, and bad input ------===//

#include "TestSupport.h"

#include "snn/Runtime/Observability/ReportPage.h"
#include "snn/Runtime/Observability/RunReport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace snn::runtime;
using snn::test::errorOf;
using snn::test::TempDir;
using Json = nlohmann::json;

namespace {

std::string step(int s, int epoch, double loss, const std::string &extra = "") {
  return R"({"event":"step","epoch":)" + std::to_string(epoch) + R"(,"step":)" +
         std::to_string(s) + R"(,"loss":)" + std::to_string(loss) +
         R"(,"accuracy":0.5,"lr":0.1,"samples_per_s":100,"seconds":0.01)" + extra + "}\n";
}

TEST(RunReportTest, StepsEpochsFiringRatesAndPlan) {
  TempDir tmp;
  std::string log = tmp.file("m.jsonl");
  std::string rates = R"(,"firing_rates":{"b":0.25,"a":0.125})";
  snn::test::writeFile(
      log, step(0, 0, 2.0, rates) + step(1, 0, 1.5, rates) +
               R"({"event":"epoch","epoch":0,"steps":2,"loss":1.75,"accuracy":0.5,)"
               R"("eval_loss":1.6,"eval_accuracy":0.4,"seconds":1})" "\n" +
               // a resumed run logs step 1 again: the later event wins
               step(1, 0, 1.25, rates) + step(2, 1, 1.0) +
               R"({"event":"end","steps":3,"plan_check":{"predicted":{"step_seconds":0.02,)"
               R"("comm_seconds":0},"measured":{"step_seconds":0.01,"comm_seconds":0},)"
               R"("ratio":{"step":0.5,"comm":null}}})" "\n");
  Json data = Json::parse(reportData(log, ""));
  EXPECT_EQ(data["steps"]["step"], Json({0, 1, 2}));
  EXPECT_EQ(data["steps"]["loss"], Json({2.0, 1.25, 1.0}));
  ASSERT_EQ(data["epochs"].size(), 1u);
  EXPECT_EQ(data["epochs"][0]["end_step"], 1);
  EXPECT_EQ(data["epochs"][0]["eval_accuracy"], 0.4);
  // Layers in the log's order; the step without rates adds no point.
  ASSERT_EQ(data["firing_rates"].size(), 2u);
  EXPECT_EQ(data["firing_rates"][0]["layer"], "b");
  EXPECT_EQ(data["firing_rates"][0]["step"], Json({0, 1}));
  EXPECT_EQ(data["firing_rates"][1]["rate"], Json({0.125, 0.125}));
  ASSERT_EQ(data["ranks"].size(), 1u); // one process: the log itself
  EXPECT_EQ(data["ranks"][0]["seconds"], Json({0.01, 0.01, 0.01}));
  ASSERT_EQ(data["plan"].size(), 1u);
  EXPECT_EQ(data["plan"][0]["predicted"]["step_seconds"], 0.02);
  EXPECT_TRUE(data["trace"].is_null());
}

TEST(RunReportTest, RankLogsBesideTheLog) {
  TempDir tmp;
  std::string log = tmp.file("m.jsonl");
  snn::test::writeFile(log, step(0, 0, 1.0));
  for (int r : {1, 0})
    snn::test::writeFile(tmp.file("m.rank" + std::to_string(r) + ".jsonl"),
                         R"({"event":"rank","rank":)" + std::to_string(r) +
                             R"(,"world_size":2,"pid":1,"mode":"dp"})" "\n" + step(0, 0, 1.0));
  snn::test::writeFile(tmp.file("other.rank2.jsonl"), "garbage\n"); // another log's
  Json data = Json::parse(reportData(log, ""));
  ASSERT_EQ(data["ranks"].size(), 2u);
  EXPECT_EQ(data["ranks"][1]["rank"], 1);
  EXPECT_EQ(data["ranks"][1]["mode"], "dp");
}

TEST(RunReportTest, TraceSpansByStep) {
  TempDir tmp;
  std::string log = tmp.file("m.jsonl"), trace = tmp.file("t.json");
  snn::test::writeFile(log, step(0, 0, 1.0));
  snn::test::writeFile(
      trace, R"({"traceEvents":[{"name":"thread_name","ph":"M","pid":0,"tid":0},)"
             R"({"name":"F s0 m0","cat":"forward","ph":"X","pid":0,"tid":0,"ts":0,"dur":5,"args":{"step":0}},)"
             R"({"name":"F s1 m0","cat":"forward","ph":"X","pid":0,"tid":1,"ts":6,"dur":5,"args":{"step":0}},)"
             R"({"name":"B s1 m0","cat":"backward","ph":"X","pid":0,"tid":1,"ts":20,"dur":9,"args":{"step":1}}]})");
  Json t = Json::parse(reportData(log, trace))["trace"];
  EXPECT_EQ(t["ranks"], 2);
  EXPECT_EQ(t["steps"], Json({0, 1}));
  EXPECT_EQ(t["categories"], Json({"forward", "backward"}));
  ASSERT_EQ(t["spans"].size(), 3u);
  EXPECT_EQ(t["spans"][2], Json({1, 1, 20.0, 9.0, 1, "B s1 m0"}));
}

TEST(RunReportTest, BadInputNamesFileAndLine) {
  TempDir tmp;
  std::string log = tmp.file("m.jsonl");
  EXPECT_NE(errorOf([&] { reportData(log, ""); }).find(log + ": cannot open"), std::string::npos);
  snn::test::writeFile(log, step(0, 0, 1.0) + "\n{\"event\": \"step\", \"loss\n" + step(1, 0, 1));
  EXPECT_NE(errorOf([&] { reportData(log, ""); }).find(log + ":3: not JSON"), std::string::npos);
  snn::test::writeFile(log, step(0, 0, 1.0) + "[1]\n");
  EXPECT_NE(errorOf([&] { reportData(log, ""); }).find(log + ":2: not a log event"),
            std::string::npos);
  snn::test::writeFile(log, R"({"event":"step","step":0,"accuracy":1})" "\n");
  EXPECT_EQ(errorOf([&] { reportData(log, ""); }), log + ":1: step event: 'loss' is missing");
  snn::test::writeFile(log, R"({"event":"rank","rank":0})" "\n");
  EXPECT_NE(errorOf([&] { reportData(log, ""); }).find("holds no step event"), std::string::npos);
  snn::test::writeFile(log, step(0, 0, 1.0));
  std::string trace = tmp.file("t.json");
  snn::test::writeFile(trace, "{\"traceEvents\": [\n{\"ph\": \"X\",\n\"ts\": oops}]}");
  EXPECT_NE(errorOf([&] { reportData(log, trace); }).find(trace + ":3: not JSON"),
            std::string::npos);
}

TEST(RunReportTest, UnfinishedLastLineIsLeftOut) {
  TempDir tmp;
  std::string log = tmp.file("m.jsonl");
  snn::test::writeFile(log, step(0, 0, 1.0) + R"({"event":"step","ep)");
  EXPECT_EQ(Json::parse(reportData(log, ""))["steps"]["step"], Json({0}));
}

TEST(ReportPageTest, DataCannotEndItsScriptElement) {
  std::string page = reportPage(R"({"log":"</script><b>"})", "a<b>.jsonl");
  EXPECT_EQ(page.find("</script><b>"), std::string::npos);
  EXPECT_NE(page.find(R"("\u003c/script>\u003cb>")"), std::string::npos);
  EXPECT_NE(page.find("<title>SpikeMesh report: a&lt;b&gt;.jsonl</title>"), std::string::npos);
  EXPECT_EQ(page.find("{{SNN_REPORT"), std::string::npos);
}

} // namespace
