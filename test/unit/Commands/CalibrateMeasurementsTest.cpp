//===- CalibrateMeasurementsTest.cpp - snn-run calibrate's measurements ---===//
//
// Tiny sizes only: the point is that each kind runs its kernel forward and
// backward, sizes come out in the planner's units, ascending, and the result
// is a profile the planner's reader accepts. The CLI and real ranks are
// tested by test/python/snn_run_calibrate_test.py, --model by
// test/e2e/calibrate_model.py.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"
#include "snn/Runtime/Commands/CalibrateCommand.h"
#include "snn/Runtime/Commands/Calibration.h"
#include "snn/Runtime/Distributed/World.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

using namespace snn::runtime;
using snn::schema::CommunicationCurve;
using snn::schema::ComputeCurve;
using snn::schema::DeviceProfile;
using snn::test::errorOf;

namespace {

const CalibrationTiming kFast{1, 3, 0.0};

CalibrationSizes tinySizes() {
  CalibrationSizes sizes;
  sizes.gemm = {{4, 8, 8}, {8, 16, 16}};
  sizes.conv2d = {{1, 2, 2, 4, 4}, {2, 4, 4, 8, 8}};
  sizes.neuron = {{2, 2, 8}, {3, 2, 4, 4, 4}};
  sizes.batchNorm = {{2, 2, 4, 4}, {4, 4, 4, 4}};
  sizes.maxPool = {{2, 2, 4, 4}, {4, 4, 4, 4}};
  sizes.elementwise = {{2, 2, 4, 4}, {4, 4, 4, 4}};
  return sizes;
}

void expectAscendingPositive(const std::vector<snn::schema::ProfilePoint> &points,
                             const std::string &kind) {
  ASSERT_FALSE(points.empty()) << kind;
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_GT(points[i].seconds, 0.0) << kind;
    EXPECT_TRUE(std::isfinite(points[i].seconds)) << kind;
    if (i > 0)
      EXPECT_GT(points[i].size, points[i - 1].size) << kind;
  }
}

} // namespace

TEST(CalibrateMeasurements, FixedSamplesRunWarmupsAndEverySample) {
  int calls = 0, samples = 0;
  CalibrationTiming timing{2, 5, 0.0};
  double seconds =
      interleavedMedianSeconds({[&] { ++calls; }}, timing, {}, {3}, [&] { ++samples; }).front();
  EXPECT_EQ(calls, 2 + 5 * 3);
  EXPECT_EQ(samples, 5);
  EXPECT_GE(seconds, 0.0);
}

TEST(CalibrateMeasurements, TheFirstCallOfASampleIsTimedApartFromTheSteadyOnes) {
  // Each call is slow right after the other one (its data out of the caches, as a model's
  // step after another model's) and fast after itself.
  int last = -1;
  std::vector<int> calls(2, 0);
  auto call = [&](int which) {
    return [&, which] {
      ++calls[size_t(which)];
      bool cold = last != which;
      last = which;
      std::this_thread::sleep_for(std::chrono::microseconds(cold ? 8000 : 1000));
    };
  };
  CalibrationTiming timing{1, 5, 0.0};
  timing.firstCallApart = true;
  InterleavedSampler sampler({call(0), call(1)}, timing, {2, 2});
  for (int round = 0; round < timing.repeats; ++round)
    sampler.round();
  EXPECT_EQ(calls, (std::vector<int>{1 + 5 * 3, 1 + 5 * 3}));
  std::vector<double> steady = sampler.medians(), cold = sampler.firstCallMedians();
  ASSERT_EQ(cold.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GE(cold[i], 0.008) << i;
    EXPECT_GE(steady[i], 0.001) << i;
    EXPECT_LT(steady[i], 0.006) << i; // the cold call is not in the sample
  }
  // Without it there are no first calls apart.
  InterleavedSampler plain({call(0)}, CalibrationTiming{0, 1, 0.0}, {1});
  plain.round();
  EXPECT_TRUE(plain.firstCallMedians().empty());
}

TEST(CalibrateMeasurements, MedianSecondsMeasuresTheCall) {
  auto sleep = [] { std::this_thread::sleep_for(std::chrono::microseconds(2000)); };
  double seconds = medianSeconds(sleep, CalibrationTiming{1, 3, 0.001});
  EXPECT_GE(seconds, 0.002);
  EXPECT_LT(seconds, 0.1); // far above a sleep's overshoot, far below a wrong unit
}

TEST(CalibrateMeasurements, WorkIsCountedAsThePlannerCountsIt) {
  // Linear: 2 * in + 1 per output element (bias); conv 3x3: 2 * C * 9 + 1.
  EXPECT_DOUBLE_EQ(linearWork({4, 8, 3}), 4.0 * 3.0 * 17.0);
  EXPECT_DOUBLE_EQ(convWork({2, 3, 5, 4, 6}), 2.0 * 5 * 4 * 6 * (2.0 * 3 * 9 + 1));
}

TEST(CalibrateMeasurements, ComputeCurvesCoverEveryKindInPlannerUnits) {
  std::vector<std::string> seen;
  std::vector<ComputeCurve> curves =
      measureCompute(tinySizes(), kFast, [&](const std::string &what, size_t, size_t) {
        seen.push_back(what);
      });
  ASSERT_EQ(curves.size(), std::size(snn::schema::kComputeKinds));
  for (size_t i = 0; i < curves.size(); ++i) {
    EXPECT_EQ(curves[i].kind, snn::schema::kComputeKinds[i]);
    EXPECT_EQ(curves[i].points.size(), 2u) << curves[i].kind;
    expectAscendingPositive(curves[i].points, curves[i].kind);
  }
  EXPECT_EQ(seen.size(), 12u); // one call per point
  EXPECT_DOUBLE_EQ(curves[0].points[0].size, linearWork({4, 8, 8}));
  EXPECT_DOUBLE_EQ(curves[1].points[1].size, convWork({2, 4, 4, 8, 8}));
  EXPECT_DOUBLE_EQ(curves[2].points[0].size, 2.0 * 2 * 8); // neuron: input elements
  EXPECT_DOUBLE_EQ(curves[2].points[1].size, 3.0 * 2 * 4 * 4 * 4);
  EXPECT_DOUBLE_EQ(curves[4].points[1].size, 4.0 * 4 * 4 * 4); // max_pool: input elements
}

TEST(CalibrateMeasurements, ConfigurationsOfEqualSizeGiveOnePointInOrder) {
  CalibrationSizes sizes = tinySizes();
  // Out of order, and two shapes with the same element count.
  sizes.elementwise = {{4, 4, 4, 4}, {2, 2, 4, 4}, {1, 4, 4, 4}};
  std::vector<ComputeCurve> curves = measureCompute(sizes, kFast, {});
  const ComputeCurve &add = curves.back();
  ASSERT_EQ(add.kind, "elementwise");
  ASSERT_EQ(add.points.size(), 2u);
  EXPECT_DOUBLE_EQ(add.points[0].size, 64.0);
  EXPECT_DOUBLE_EQ(add.points[1].size, 256.0);
}

TEST(CalibrateMeasurements, PointsThatBreakTheCurvesShapeAreSuspect) {
  // Per unit: 1e-6 (the call's fixed cost), 1e-8, 1e-8, 1.1e-8: nothing to measure again.
  ComputeCurve smooth{"neuron", {{1e3, 1e-3}, {1e5, 1e-3}, {1e6, 1e-2}, {1e7, 1.1e-1}}};
  EXPECT_TRUE(suspectComputePoints(smooth).empty());
  // The built-in profile's neuron curve as it once was: its last point 10x the
  // one before while twice the size (a slow spell).
  ComputeCurve lastSlow{"neuron", {{1e3, 1e-3}, {4.2e6, 9.8e-3}, {8.4e6, 1.45e-1}}};
  EXPECT_EQ(suspectComputePoints(lastSlow), std::vector<size_t>{2});
  // An inner point slower than a call twice its size, however it looks per unit.
  ComputeCurve innerSlow{"conv2d", {{1e3, 1e-4}, {1e6, 5e-3}, {2e6, 2e-3}, {4e6, 4e-3}}};
  EXPECT_EQ(suspectComputePoints(innerSlow), std::vector<size_t>{1});
  // Exactly the factor is not beyond it.
  ComputeCurve atFactor{"gemm", {{1e3, 1e-4}, {1e6, 2e-3}, {2e6, 1e-3}}};
  EXPECT_TRUE(suspectComputePoints(atFactor).empty());
}

TEST(CalibrateMeasurements, SuspectPointsAreMeasuredAgainKeepingTheFastest) {
  ComputeCurve curve{"neuron", {{1e3, 1e-3}, {4.2e6, 9.8e-3}, {8.4e6, 1.45e-1}}};
  std::vector<size_t> measured;
  remeasureSuspectPoints(curve, [&](size_t point) {
    measured.push_back(point);
    return 2.1e-2; // the slow spell is over
  });
  EXPECT_EQ(measured, std::vector<size_t>{2}); // once: no longer suspect
  EXPECT_DOUBLE_EQ(curve.points[2].seconds, 2.1e-2);
  EXPECT_DOUBLE_EQ(curve.points[1].seconds, 9.8e-3);

  // A point that is that slow measures so again: kept after every round, never raised.
  ComputeCurve cliff{"neuron", {{1e3, 1e-3}, {4.2e6, 9.8e-3}, {8.4e6, 1.45e-1}}};
  int calls = 0;
  remeasureSuspectPoints(cliff, [&](size_t) { return ++calls == 1 ? 1.5e-1 : 1.4e-1; });
  EXPECT_EQ(calls, kSuspectRemeasures);
  EXPECT_DOUBLE_EQ(cliff.points[2].seconds, 1.4e-1);
}

TEST(CalibrateMeasurements, TheBuiltInProfileHasNoSuspectPoint) {
  DeviceProfile builtin = snn::schema::readDeviceProfile(snn::schema::kBuiltinDeviceProfile);
  ASSERT_FALSE(builtin.compute.empty());
  for (const ComputeCurve &curve : builtin.compute)
    EXPECT_TRUE(suspectComputePoints(curve).empty()) << curve.kind;
}

TEST(CalibrateMeasurements, DefaultSizesAreAtLeastFourPerKind) {
  for (bool quick : {true, false}) {
    CalibrationSizes sizes = defaultCalibrationSizes(quick);
    EXPECT_GE(sizes.gemm.size(), 4u);
    EXPECT_GE(sizes.conv2d.size(), 4u);
    for (const auto *shapes :
         {&sizes.neuron, &sizes.batchNorm, &sizes.maxPool, &sizes.elementwise})
      EXPECT_GE(shapes->size(), 4u);
    EXPECT_GE(defaultMessageBytes(quick).size(), 4u);
  }
}

TEST(CalibrateMeasurements, CommunicationResultsRoundTrip) {
  std::vector<CommunicationCurve> curves{{"all_reduce", 2, {{4096, 1.5e-4}, {65536, 3e-4}}},
                                         {"send_recv", 2, {{4096, 2.25e-5}}}};
  std::vector<CommunicationCurve> back =
      parseCommunicationResults(formatCommunicationResults(curves), "r.txt");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].kind, "all_reduce");
  EXPECT_EQ(back[0].ranks, 2);
  ASSERT_EQ(back[0].points.size(), 2u);
  EXPECT_EQ(back[0].points[1].size, 65536.0);
  EXPECT_EQ(back[0].points[1].seconds, 3e-4); // exact: shortest round-trip text
  EXPECT_EQ(back[1].points[0].seconds, 2.25e-5);
  EXPECT_TRUE(back[1].cpuPoints.empty());

  curves[1].points.push_back({65536, 1e-4});
  curves[1].cpuPoints = {{4096, 0.0}, {65536, 3.5e-4}}; // CPU time may exceed the wall's
  back = parseCommunicationResults(formatCommunicationResults(curves), "r.txt");
  ASSERT_EQ(back[1].cpuPoints.size(), 2u);
  EXPECT_EQ(back[1].cpuPoints[0].seconds, 0.0);
  EXPECT_EQ(back[1].cpuPoints[1].seconds, 3.5e-4);
  EXPECT_EQ(back[1].cpuPoints[1].size, 65536.0);
}

TEST(CalibrateMeasurements, MalformedCommunicationResultsNameTheLine) {
  EXPECT_NE(errorOf([] { parseCommunicationResults("all_reduce 2 4096 0.1\nbad\n", "r.txt"); })
                .find("r.txt:2"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseCommunicationResults("all_reduce 2 4096 -1\n", "r.txt"); }), "");
  EXPECT_NE(errorOf([] { parseCommunicationResults("all_reduce 2 4096 1 x\n", "r.txt"); }), "");
  EXPECT_NE(errorOf([] { parseCommunicationResults("send_recv 2 4096 1 -1\n", "r.txt"); }), "");
  EXPECT_NE(
      errorOf([] {
        parseCommunicationResults("send_recv 2 4096 1 0.5\nsend_recv 2 8192 1\n", "r.txt");
      })
          .find("r.txt:2: expected 'KIND RANKS BYTES SECONDS [CPU_SECONDS]' (CPU seconds on "
                "every point of a curve or on none)"),
      std::string::npos);
}

TEST(CalibrateMeasurements, CollectivesOnOneRankGiveEveryKindAndTheWholeTensor) {
  std::shared_ptr<snn::dist::World> world =
      snn::dist::World::initialize(snn::dist::singleProcessEnvironment());
  std::vector<CommunicationCurve> curves =
      measureCollectives(*world, {4096, 65536}, /*sendRecv=*/false, kFast, {});
  ASSERT_EQ(curves.size(), 3u);
  for (const CommunicationCurve &curve : curves) {
    EXPECT_EQ(curve.ranks, 1);
    ASSERT_EQ(curve.points.size(), 2u);
    EXPECT_EQ(curve.points[0].size, 4096.0) << curve.kind;
    expectAscendingPositive(curve.points, curve.kind);
  }
}

TEST(CalibrateMeasurements, WaitsBetweenComputesNeedAnEvenJob) {
  std::shared_ptr<snn::dist::World> world =
      snn::dist::World::initialize(snn::dist::singleProcessEnvironment());
  snn::schema::WaitBetweenComputesCurve curve = measureWaitsBetweenComputes(*world, kFast, {});
  EXPECT_EQ(curve.ranks, 1);
  EXPECT_EQ(curve.bytes, kWaitBetweenComputesBytes);
  EXPECT_TRUE(curve.points.empty());
}

TEST(CalibrateMeasurements, MeasuredProfileParsesBack) {
  DeviceProfile profile;
  profile.createdBy = "test";
  profile.machine = snn::schema::thisMachine();
  profile.machine.threads = 1;
  profile.machine.backend = "gloo";
  profile.compute = measureCompute(tinySizes(), kFast, {});
  profile.communication = {{"all_reduce", 2, {{4096, 1e-4}, {8192, 2e-4}}}};
  DeviceProfile back =
      snn::schema::parseDeviceProfile(snn::schema::formatDeviceProfile(profile), "p.json");
  ASSERT_EQ(back.compute.size(), profile.compute.size());
  EXPECT_EQ(back.computeCurve("gemm")->points.size(), 2u);
  EXPECT_EQ(back.machine.threads, 1);
  std::string table = formatCalibrationSummary(profile);
  for (const char *kind : snn::schema::kComputeKinds)
    EXPECT_NE(table.find(kind), std::string::npos) << kind;
  EXPECT_NE(table.find("FLOP/s"), std::string::npos);
}

TEST(CalibrateMeasurements, BadOptionsAreOneLineNamingTheFlag) {
  snn::test::TempDir dir;
  auto with = [&](auto change) {
    CalibrateOptions options;
    options.outPath = dir.file("p.json");
    change(options);
    return errorOf([&] { validateCalibrateOptions(options); });
  };
  EXPECT_EQ(with([](CalibrateOptions &) {}), "");
  EXPECT_NE(with([](CalibrateOptions &o) { o.ranks = {1}; }).find("--ranks"), std::string::npos);
  EXPECT_NE(with([](CalibrateOptions &o) { o.ranks = {2, 2}; }).find("twice"), std::string::npos);
  EXPECT_NE(with([](CalibrateOptions &o) { o.ranks = {65}; }).find("--ranks"), std::string::npos);
  EXPECT_NE(with([](CalibrateOptions &o) { o.threads = 0; }).find("--threads"), std::string::npos);
  EXPECT_NE(with([&](CalibrateOptions &o) { o.outPath = dir.path(); }).find("directory"),
            std::string::npos);
  EXPECT_NE(with([&](CalibrateOptions &o) { o.outPath = dir.file("no/p.json"); }).find("--out"),
            std::string::npos);
  EXPECT_NE(with([](CalibrateOptions &o) { o.outPath = "/proc/p.json"; }).find("--out"),
            std::string::npos);
}
