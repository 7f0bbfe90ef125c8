//===- CalibratedCostModelTest.cpp - The cost model on a measured machine -===//
//
// A device profile's curves (Calibration) replace the constants: curves
// interpolate in log-log and extrapolate at their end rates, collectives of
// an unmeasured group size scale with the ring's steps, every op kind maps to
// its curve with its unit of work, and the estimator's compute and
// communication times are the sums of those curves.
//
//===----------------------------------------------------------------------===//

#include "TestModels.h"

#include "snn/Planner/Calibration.h"
#include "snn/Planner/Communication.h"
#include "snn/Planner/CostModel.h"
#include "snn/Planner/DeviceCalibration.h"
#include "snn/Planner/Pipeline.h"
#include "snn/Planner/PipelineUnits.h"
#include "snn/Planner/Recommender.h"
#include "snn/Planner/TensorParallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

using namespace snn::planner;

namespace {

/// Every kind at `secondsPerUnit` per unit of work, every collective at `secondsPerByte`
/// (straight lines; collectives measured over 2 ranks).
std::shared_ptr<Calibration> uniformCalibration(double secondsPerUnit,
                                                double secondsPerByte = 1e-9) {
  auto c = std::make_shared<Calibration>();
  c->source = "test";
  for (MeasuredCurve &curve : c->compute)
    curve.points = {{1, secondsPerUnit}, {1e9, 1e9 * secondsPerUnit}};
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                              CollectiveKind::ReduceScatter, CollectiveKind::SendRecv})
    c->collectives[{kind, 2}].points = {{1, secondsPerByte}, {1e9, 1e9 * secondsPerByte}};
  return c;
}

} // namespace

TEST(CalibratedCostModel, CurvesInterpolateInLogLogAndHoldTheirEnds) {
  MeasuredCurve curve{{{100, 1e-5}, {10000, 1e-2}}};
  EXPECT_DOUBLE_EQ(curve.secondsAt(100), 1e-5);
  EXPECT_DOUBLE_EQ(curve.secondsAt(10000), 1e-2);
  // Halfway in log size is halfway in log time: sqrt(1e-5 * 1e-2).
  EXPECT_NEAR(curve.secondsAt(1000), std::sqrt(1e-7), 1e-12);
  EXPECT_DOUBLE_EQ(curve.secondsAt(50), 1e-5);    // a call's fixed cost: the first point's
  EXPECT_DOUBLE_EQ(curve.secondsAt(1), 1e-5);
  EXPECT_DOUBLE_EQ(curve.secondsAt(20000), 2e-2); // the last point's rate
  EXPECT_EQ(MeasuredCurve{}.secondsAt(10), 0.0);
  EXPECT_EQ(curve.secondsAt(0), 0.0);
}

// A profile's communication curve never falls with the bytes: a point below a
// smaller message's time (noise of a loaded machine) takes that time.
TEST(CalibratedCostModel, ACommunicationCurveFromAProfileNeverFallsWithTheBytes) {
  snn::schema::DeviceProfile profile;
  profile.machine = {"cpu", 2, 1, "gloo"};
  profile.communication.push_back(
      {"send_recv", 4, {{4096, 1.4e-3}, {262144, 1.2e-3}, {1048576, 4.7e-4}, {4194304, 2.7e-3}}});
  profile.compute.push_back({"gemm", {{1e6, 2e-3}, {1e7, 1e-3}}});
  std::shared_ptr<const Calibration> c = calibrationFromProfile(profile, "p.json");
  EXPECT_DOUBLE_EQ(c->collectiveSeconds(CollectiveKind::SendRecv, 4, 4096), 1.4e-3);
  EXPECT_DOUBLE_EQ(c->collectiveSeconds(CollectiveKind::SendRecv, 4, 262144), 1.4e-3);
  EXPECT_DOUBLE_EQ(c->collectiveSeconds(CollectiveKind::SendRecv, 4, 1048576), 1.4e-3);
  EXPECT_DOUBLE_EQ(c->collectiveSeconds(CollectiveKind::SendRecv, 4, 4194304), 2.7e-3);
  // Compute curves are read as measured.
  EXPECT_DOUBLE_EQ(c->compute[size_t(WorkKind::Gemm)].secondsAt(1e7), 1e-3);
}

// A message's floor is the least step any measured all-reduce took: one slow small
// all-reduce (a loaded machine's) does not price every pipeline message.
TEST(CalibratedCostModel, TheMessageFloorIsTheFastestAllReduceStep) {
  snn::schema::DeviceProfile profile;
  profile.machine = {"cpu", 2, 1, "gloo"};
  profile.compute.push_back({"gemm", {{1e6, 2e-3}}});
  // 2 ranks: one exchange by recursive doubling up to 1 MiB, 2 ring steps above.
  profile.communication.push_back(
      {"all_reduce", 2, {{4096, 2.9e-3}, {262144, 3.3e-4}, {4194304, 2.8e-3}}});
  // 4 ranks: 2 doubling steps; here the smallest is also the fastest step.
  profile.communication.push_back({"all_reduce", 4, {{4096, 1e-3}, {1048576, 4e-3}}});
  std::shared_ptr<const Calibration> c = calibrationFromProfile(profile, "p.json");
  EXPECT_DOUBLE_EQ(c->messageLatency(2), 3.3e-4);
  EXPECT_DOUBLE_EQ(c->messageLatency(4), 1e-3 / 2.0);
  // The curve itself still never falls with the bytes.
  EXPECT_DOUBLE_EQ(c->collectiveSeconds(CollectiveKind::AllReduce, 2, 262144), 2.9e-3);
}

// A wait between computes grows with the compute before the call: a wait above one
// measured after a longer compute is noise, and takes that smaller wait, so one slow
// sample after the shortest compute does not price every pipeline message.
TEST(CalibratedCostModel, AWaitBetweenComputesIsTheLowerEnvelopeOfItsCurve) {
  snn::schema::DeviceProfile profile;
  profile.machine = {"cpu", 2, 1, "gloo"};
  profile.compute.push_back({"gemm", {{1e6, 2e-3}}});
  profile.waitsBetweenComputes.push_back(
      {2, 16384, {{1.25e-4, 1.57e-3}, {5e-4, 6.2e-4}, {2e-3, 7.8e-4}, {8e-3, 6.3e-4}}});
  std::shared_ptr<const Calibration> c = calibrationFromProfile(profile, "p.json");
  const MeasuredCurve &waits = c->waitsBetweenComputes.at(2).waits;
  ASSERT_EQ(waits.points.size(), 4u);
  EXPECT_DOUBLE_EQ(waits.points[0].second, 6.2e-4);
  EXPECT_DOUBLE_EQ(waits.points[1].second, 6.2e-4);
  EXPECT_DOUBLE_EQ(waits.points[2].second, 6.3e-4);
  EXPECT_DOUBLE_EQ(waits.points[3].second, 6.3e-4);
  // A rising curve is read as measured.
  profile.waitsBetweenComputes[0].points = {{1e-4, 3e-3}, {2e-3, 5e-3}};
  c = calibrationFromProfile(profile, "p.json");
  EXPECT_DOUBLE_EQ(c->waitsBetweenComputes.at(2).waits.points[0].second, 3e-3);
  EXPECT_DOUBLE_EQ(c->waitsBetweenComputes.at(2).waits.points[1].second, 5e-3);
}

// A replicas' step grows with their samples: one slower than a larger batch's is noise and
// takes that step (a 16-sample point of a small conv model at 16.6 ms, 32 samples at 10.0).
TEST(CalibratedCostModel, AReplicatedStepIsTheLowerEnvelopeOfItsCurve) {
  snn::schema::DeviceProfile profile;
  profile.machine = {"cpu", 2, 1, "gloo"};
  profile.compute.push_back({"gemm", {{1e6, 2e-3}}});
  snn::schema::ModelStepCurve step{"m", 100, {2, -1, 8}, {{1, 8e-4}, {16, 1.6e-3}, {32, 2.3e-3}},
                                   {}, {}, {}};
  step.replicated.push_back({2, {{1, 8.5e-3}, {4, 7.5e-3}, {16, 16.6e-3}, {32, 10e-3}}});
  profile.modelSteps.push_back(step);
  std::shared_ptr<const Calibration> c = calibrationFromProfile(profile, "p.json");
  const MeasuredCurve &replicas = c->modelSteps.at(0).replicated.at(2);
  ASSERT_EQ(replicas.points.size(), 4u);
  for (auto [i, seconds] : {std::pair{0, 7.5e-3}, {1, 7.5e-3}, {2, 10e-3}, {3, 10e-3}})
    EXPECT_DOUBLE_EQ(replicas.points[size_t(i)].second, seconds) << i;
}

// A profile measured while the hypervisor ran other tenants says so wherever the planner
// names its times; a quiet one does not.
TEST(CalibratedCostModel, AProfileMeasuredInASlowSpellSaysSo) {
  snn::schema::DeviceProfile profile;
  profile.machine = {"cpu", 2, 1, "gloo"};
  profile.compute.push_back({"gemm", {{1e6, 2e-3}}});
  for (double steal : {-1.0, 0.0, 0.04}) {
    profile.machine.stealShare = steal;
    EXPECT_EQ(calibrationFromProfile(profile, "p.json")->source.find("hypervisor"),
              std::string::npos)
        << steal;
  }
  profile.machine.stealShare = 0.21;
  EXPECT_NE(calibrationFromProfile(profile, "p.json")
                ->source.find("measured while the hypervisor gave 21 % of its CPU time to "
                              "other tenants"),
            std::string::npos);
}

TEST(CalibratedCostModel, CollectivesOfOtherGroupSizesScaleWithTheirSteps) {
  Calibration c;
  int64_t large = int64_t(4) << 20;
  c.collectives[{CollectiveKind::AllReduce, 2}].points = {{1024, 1e-4}};
  c.collectives[{CollectiveKind::AllReduce, 4}].points = {{1024, 5e-4}, {double(large), 8e-3}};
  c.collectives[{CollectiveKind::SendRecv, 2}].points = {{1024, 2e-5}};
  c.collectives[{CollectiveKind::AllGather, 4}].points = {{1024, 3e-4}};
  EXPECT_DOUBLE_EQ(c.collectiveSeconds(CollectiveKind::AllReduce, 2, 1024), 1e-4);
  EXPECT_DOUBLE_EQ(c.collectiveSeconds(CollectiveKind::AllReduce, 4, 1024), 5e-4);
  // Recursive doubling: 3 steps on 8 ranks where 4 took 2.
  EXPECT_DOUBLE_EQ(c.collectiveSeconds(CollectiveKind::AllReduce, 8, 1024), 5e-4 * 3 / 2);
  // A large tensor goes around the ring: 14 steps on 8 ranks, 6 on 4.
  EXPECT_DOUBLE_EQ(c.collectiveSeconds(CollectiveKind::AllReduce, 8, double(large)),
                   8e-3 * 14 / 6);
  // Three ranks take the ring (4 steps) where the nearest group, 2, took one doubling.
  EXPECT_DOUBLE_EQ(c.collectiveSeconds(CollectiveKind::AllReduce, 3, 1024), 1e-4 * 4);
  EXPECT_DOUBLE_EQ(c.collectiveSeconds(CollectiveKind::AllGather, 8, 1024), 3e-4 * 7 / 3);
  EXPECT_DOUBLE_EQ(c.collectiveSeconds(CollectiveKind::SendRecv, 8, 1024), 2e-5);
  EXPECT_EQ(c.collectiveSeconds(CollectiveKind::ReduceScatter, 2, 1024), 0.0);
}

TEST(CalibratedCostModel, RanksSharingTheCpusComputeMoreSlowly) {
  Calibration c;
  EXPECT_EQ(c.oversubscription(8), 1.0); // the machine is unknown
  c.logicalCpus = 2;
  c.threadsPerRank = 1;
  EXPECT_EQ(c.oversubscription(1), 1.0);
  EXPECT_EQ(c.oversubscription(2), 1.0);
  EXPECT_EQ(c.oversubscription(4), 2.0);
  c.threadsPerRank = 2;
  EXPECT_EQ(c.oversubscription(4), 4.0);
  // The estimate: dp on 4 ranks of a 2-CPU machine computes its quarter batch at half speed.
  ModelInfo model = test::spikingMlp(64, 32, 10);
  PlannerInput input;
  input.model = model;
  PlanRequest request;
  request.topology = *parseTopology("dp=4");
  request.batchSize = 64;
  request.forced = *modeRequest(snn::schema::RequestedMode::DP);
  auto shared = std::make_shared<Calibration>(*uniformCalibration(1e-9));
  request.hardware.calibration = shared;
  auto alone = recommend(input, request);
  shared->logicalCpus = 2;
  auto crowded = recommend(input, request);
  ASSERT_TRUE(alone.ok() && crowded.ok());
  ASSERT_TRUE(alone->chosen && crowded->chosen);
  EXPECT_DOUBLE_EQ(crowded->chosen->computeSeconds, 2.0 * alone->chosen->computeSeconds);
}

TEST(CalibratedCostModel, AMessageOfABusyJobWaitsLikeARingStep) {
  Calibration c;
  c.collectives[{CollectiveKind::SendRecv, 2}].points = {{4096, 5e-5}, {1 << 20, 3e-4}};
  // The smallest 4-rank all-reduce over its log2 4 = 2 doubling steps: 2 ms / 2.
  c.collectives[{CollectiveKind::AllReduce, 4}].points = {{4096, 2e-3}, {1 << 20, 8e-3}};
  c.collectives[{CollectiveKind::AllReduce, 2}].points = {{4096, 1e-4}, {1 << 20, 4e-4}};
  EXPECT_DOUBLE_EQ(c.messageLatency(4), 1e-3);
  EXPECT_DOUBLE_EQ(c.messageLatency(2), 1e-4);
  EXPECT_DOUBLE_EQ(c.messageLatency(8), 2e-3 / 2.0); // the nearest group measured: 4
  EXPECT_EQ(c.messageLatency(1), 0.0);
  Hardware hw;
  hw.calibration = std::make_shared<Calibration>(c);
  // No pairs measured in a job of 4: the ping-pong's time, at least the wait.
  EXPECT_DOUBLE_EQ(hw.sendSeconds(4096, 4), 1e-3);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(1 << 20, 4), 1e-3);
  // The pair measured in a job of 2 is that job's message.
  EXPECT_DOUBLE_EQ(hw.sendSeconds(4096, 2), 5e-5);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(1 << 20, 2), 3e-4);
  EXPECT_EQ(Calibration().messageLatency(4), 0.0);
  // Pairs measured exchanging at once in a job of 4: their curve, whatever the all-reduce.
  c.collectives[{CollectiveKind::SendRecv, 4}].points = {{4096, 4e-4}, {1 << 20, 9e-4}};
  hw.calibration = std::make_shared<Calibration>(c);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(4096, 4), 4e-4);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(1 << 20, 4), 9e-4);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(4096, 8), 1e-3); // no pairs of a job of 8: the wait
  // A job of 4 on 2 CPUs: the all-pairs curve, never under the ring step's wait.
  c.logicalCpus = 2;
  c.threadsPerRank = 1;
  hw.calibration = std::make_shared<Calibration>(c);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(4096, 4), 1e-3);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(1 << 20, 4), 1e-3);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(4096, 2), 5e-5); // 2 ranks on 2 CPUs: the ping-pong
  // One pipeline's pairs do not all exchange at once: the ping-pong, with the same floor.
  c.collectives[{CollectiveKind::SendRecv, 4}].points = {{4096, 4e-3}, {1 << 20, 9e-3}};
  hw.calibration = std::make_shared<Calibration>(c);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(4096, 4), 4e-3);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(4096, 4, /*allPairs=*/false), 1e-3);
  EXPECT_DOUBLE_EQ(hw.sendSeconds(1 << 20, 4, /*allPairs=*/false), 1e-3);
}

namespace {

/// The plan of `mode` forced on `topology` for `model` at batch 64.
Result<Plan> forcedPlan(const ModelInfo &model, const std::string &topology,
                        snn::schema::RequestedMode mode, const Hardware &hw,
                        std::optional<Schedule> schedule = std::nullopt) {
  PlannerInput input;
  input.model = model;
  for (const OpInfo &op : model.ops)
    input.tpCandidates += op.tpCandidate ? 1 : 0;
  input.pipelineUnits = int64_t(pipelineUnits(model).size());
  PlanRequest request;
  request.topology = *parseTopology(topology);
  request.batchSize = 64;
  request.forced = *modeRequest(mode);
  request.hardware = hw;
  request.ppSchedule = schedule;
  return recommend(input, request);
}

/// The chosen estimate of forcedPlan.
Estimate forcedEstimate(const ModelInfo &model, const std::string &topology,
                        snn::schema::RequestedMode mode, const Hardware &hw,
                        std::optional<Schedule> schedule = std::nullopt) {
  auto plan = forcedPlan(model, topology, mode, hw, schedule);
  EXPECT_TRUE(plan.ok() && plan->chosen)
      << (plan.ok() ? "nothing chosen" : plan.error().message);
  return plan.ok() && plan->chosen ? *plan->chosen : Estimate{};
}

/// The rationale of forcedPlan, its lines joined ("" when it fails, which the test sees).
std::string forcedRationale(const ModelInfo &model, const std::string &topology,
                            snn::schema::RequestedMode mode, const Hardware &hw) {
  auto plan = forcedPlan(model, topology, mode, hw);
  EXPECT_TRUE(plan.ok());
  std::string rationale;
  if (plan.ok())
    for (const std::string &line : plan->rationale)
      rationale += line + "\n";
  return rationale;
}

/// `model`'s whole step as `factor` x the sum of its ops' curves, at several batch sizes.
MeasuredCurve stepCurve(const ModelInfo &model, const Hardware &hw, double factor) {
  MeasuredCurve step;
  for (int64_t batch : {1, 8, 32, 64}) {
    double ops = 0;
    for (size_t i = 0; i < model.ops.size(); ++i)
      ops += opTrainingSeconds(model, int(i), batch, 1.0, hw);
    step.points.push_back({double(batch), factor * ops});
  }
  return step;
}

int64_t parameterCount(const ModelInfo &model) {
  int64_t total = 0;
  for (const OpInfo &op : model.ops)
    total += op.paramElements;
  return total;
}

} // namespace

TEST(CalibratedCostModel, TheModelsMeasuredStepScalesItsOps) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  Hardware hw;
  hw.calibration = calibration;
  Estimate opsAlone = forcedEstimate(model, "dp=2", snn::schema::RequestedMode::DP, hw);
  // The whole step measured at 3x the ops' sum at every batch size.
  MeasuredCurve step = stepCurve(model, hw, 3.0);
  // Another model's step (other parameter count) is not this one's.
  calibration->modelSteps.push_back({"other", parameterCount(model) + 1, model.inputShape, step});
  Estimate unmatched = forcedEstimate(model, "dp=2", snn::schema::RequestedMode::DP, hw);
  EXPECT_DOUBLE_EQ(unmatched.computeSeconds, opsAlone.computeSeconds);
  EXPECT_EQ(calibration->modelStepOf(model), nullptr);
  calibration->modelSteps.push_back({"mine", parameterCount(model), model.inputShape, step});
  ASSERT_NE(calibration->modelStepOf(model), nullptr);
  EXPECT_EQ(calibration->modelStepOf(model)->model, "mine");
  Estimate scaled = forcedEstimate(model, "dp=2", snn::schema::RequestedMode::DP, hw);
  EXPECT_NEAR(scaled.computeSeconds, 3.0 * opsAlone.computeSeconds,
              1e-9 * opsAlone.computeSeconds);
  EXPECT_DOUBLE_EQ(scaled.commSeconds, opsAlone.commSeconds); // communication is not scaled
  EXPECT_NE(timesSource(hw, model).find("scaled to this model's measured training step"),
            std::string::npos);
  calibration->modelSteps.clear();
  EXPECT_EQ(timesSource(hw, model), "test");
  EXPECT_EQ(timesSource(Hardware{}, model), "default constants");
}

namespace {
/// `topology`'s compute on `hw` over its compute with the op curves alone (`hw` without
/// its measured model steps).
double computeOverOpsAlone(const ModelInfo &model, const std::string &topology,
                           snn::schema::RequestedMode mode, const Hardware &hw,
                           std::optional<Schedule> schedule = std::nullopt) {
  auto without = std::make_shared<Calibration>(*hw.calibration);
  without->modelSteps.clear();
  Hardware alone = hw;
  alone.calibration = without;
  return forcedEstimate(model, topology, mode, hw, schedule).computeSeconds /
         forcedEstimate(model, topology, mode, alone, schedule).computeSeconds;
}
} // namespace

TEST(CalibratedCostModel, RunsThatTakeTheBlocksApartUseTheStepMeasuredNodeByNode) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  Hardware hw;
  hw.calibration = calibration;
  // Fused, the step is 3x the ops' sum; with its blocks taken apart, 5x.
  MeasuredCurve fused = stepCurve(model, hw, 3.0), apart = stepCurve(model, hw, 5.0);
  calibration->modelSteps.push_back(
      {"mine", parameterCount(model), model.inputShape, fused, apart});
  // dp replicas synchronise their BatchNorms, which takes the blocks apart; a pipeline's
  // stages keep them.
  using snn::schema::RequestedMode;
  EXPECT_NEAR(computeOverOpsAlone(model, "dp=2", RequestedMode::DP, hw), 5.0, 1e-9);
  EXPECT_NEAR(computeOverOpsAlone(model, "pp=2", RequestedMode::PP, hw), 3.0, 1e-9);
  // A profile measured before node-by-node steps were: the fused step for every run.
  calibration->modelSteps.back().nodeByNode = MeasuredCurve{};
  EXPECT_NEAR(computeOverOpsAlone(model, "dp=2", RequestedMode::DP, hw), 3.0, 1e-9);
}

TEST(CalibratedCostModel, APipelinesTicksUseTheStepMeasuredAfterOtherWork) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  Hardware hw;
  hw.calibration = calibration;
  // Steady, the step is 3x the ops' sum; right after other work, 4x.
  calibration->modelSteps.push_back({"mine", parameterCount(model), model.inputShape,
                                     stepCurve(model, hw, 3.0), MeasuredCurve{}});
  calibration->modelSteps.back().cold = stepCurve(model, hw, 4.0);
  // A tensor-parallel rank's step follows its own last step; a pipeline stage's tick
  // follows other microbatches' ticks, and under GPipe, which holds every microbatch's
  // activations, touches memory the last one did not.
  using snn::schema::RequestedMode;
  EXPECT_NEAR(computeOverOpsAlone(model, "tp=2", RequestedMode::TP, hw), 3.0, 1e-9);
  EXPECT_NEAR(computeOverOpsAlone(model, "pp=2", RequestedMode::PP, hw, Schedule::GPipe), 4.0,
              1e-9);
  // Under 1F1B the stage that computes more than its neighbour runs its ticks back to back:
  // its compute tends to the steady step's by as much as it leads.
  double oneF1B = computeOverOpsAlone(model, "pp=2", RequestedMode::PP, hw, Schedule::OneFOneB);
  EXPECT_GT(oneF1B, 3.0);
  EXPECT_LT(oneF1B, 4.0 - 1e-3);
  // A profile without cold steps: the steady one for every run.
  calibration->modelSteps.back().cold = MeasuredCurve{};
  EXPECT_NEAR(computeOverOpsAlone(model, "pp=2", RequestedMode::PP, hw, Schedule::GPipe), 3.0,
              1e-9);
}

TEST(CalibratedCostModel, RanksWaitsForEachOtherAreWhatTheMeasuredReplicasShow) {
  ModelInfo model = test::csnn(8); // 2 BatchNorms: 4 SyncBatchNorm all-reduces a step
  auto calibration = uniformCalibration(1e-9);
  Hardware hw;
  hw.calibration = calibration;
  MeasuredCurve fused = stepCurve(model, hw, 3.0), apart = stepCurve(model, hw, 4.0);
  calibration->modelSteps.push_back(
      {"mine", parameterCount(model), model.inputShape, fused, apart, {}});
  Estimate before = forcedEstimate(model, "dp=2", snn::schema::RequestedMode::DP, hw);
  EXPECT_EQ(before.replicaSyncSeconds, 0.0); // no replicated step measured

  // Two replicas' training step measured 4 ms slower than one process plus the curves of
  // its collectives: the gradients' buckets, the step's metrics and SyncBatchNorm's.
  Communication calls = dataParallelCommunication(modelCost(model, 1), 2);
  calls += syncBatchNormCommunication(model, 2, {});
  calls += stepMetricsCommunication(2);
  ASSERT_EQ(calls.collectives, 1 + 4 + 1);
  MeasuredCurve replicas;
  for (const auto &[samples, seconds] : apart.points)
    replicas.points.push_back({samples, seconds + calls.seconds(hw, 2) + 4e-3});
  calibration->modelSteps.back().replicated[2] = replicas;
  Estimate dp = forcedEstimate(model, "dp=2", snn::schema::RequestedMode::DP, hw);
  EXPECT_NEAR(dp.replicaSyncSeconds, 4e-3, 1e-9);
  EXPECT_NEAR(dp.commSeconds, before.commSeconds + 4e-3, 1e-9);
  EXPECT_NEAR(dp.stepSeconds, before.stepSeconds + 4e-3, 1e-9);
  std::string rationale = forcedRationale(model, "dp=2", snn::schema::RequestedMode::DP, hw);
  EXPECT_NE(rationale.find("of which 4 ms the ranks' waits for each other measured on "
                           "replicas"),
            std::string::npos)
      << rationale;
  // Every flat mode's ranks meet every step: fsdp's replicas, and tp's ranks (each with a
  // replica's work of 64 / 2 samples); a pipeline's stages are priced by their schedule.
  Estimate fsdp = forcedEstimate(model, "dp=2", snn::schema::RequestedMode::FSDP, hw);
  EXPECT_NEAR(fsdp.replicaSyncSeconds, 4e-3, 1e-9);
  Estimate tp = forcedEstimate(model, "tp=2", snn::schema::RequestedMode::TP, hw);
  EXPECT_NEAR(tp.replicaSyncSeconds, 4e-3, 1e-9);
  Estimate pp = forcedEstimate(model, "dp=2,pp=2", snn::schema::RequestedMode::PP, hw);
  EXPECT_EQ(pp.replicaSyncSeconds, 0.0);
  {
    // On a job whose ranks take every CPU, a whole-job tp's calls wait as the replicas' did
    // a call (4 ms over their 6), as often as it calls, not SyncBatchNorm's waits it lacks;
    // nor the waits between computes on top.
    calibration->logicalCpus = 2;
    calibration->waitsBetweenComputes[2] = {16384, {{{1e-4, 5e-3}, {1e-2, 5e-3}}}};
    ASSERT_TRUE(hw.ranksFillCpus(2));
    Communication tpCalls = tensorParallelCommunication(model, planTensorParallel(model), 2, 64);
    ASSERT_GE(tpCalls.collectives, 1);
    Estimate busy = forcedEstimate(model, "tp=2", snn::schema::RequestedMode::TP, hw);
    EXPECT_NEAR(busy.replicaSyncSeconds, 4e-3 * double(tpCalls.collectives) / 6.0, 1e-9);
    EXPECT_EQ(busy.peerWaitSeconds, 0.0);
    // dp's replicas are what was measured: all of it.
    EXPECT_NEAR(forcedEstimate(model, "dp=2", snn::schema::RequestedMode::DP, hw)
                    .replicaSyncSeconds,
                4e-3, 1e-9);
    // The same on ranks that oversubscribe the CPUs (2 ranks on 1: each replica's compute
    // takes twice its one-process step).
    calibration->logicalCpus = 1;
    MeasuredCurve shared;
    for (const auto &[samples, seconds] : apart.points)
      shared.points.push_back({samples, 2.0 * seconds + calls.seconds(hw, 2) + 4e-3});
    calibration->modelSteps.back().replicated[2] = shared;
    EXPECT_NEAR(forcedEstimate(model, "tp=2", snn::schema::RequestedMode::TP, hw)
                    .replicaSyncSeconds,
                4e-3 * double(tpCalls.collectives) / 6.0, 1e-9);
    calibration->modelSteps.back().replicated[2] = replicas;
    calibration->logicalCpus = 0;
    calibration->waitsBetweenComputes.clear();
  }
  // Replicas measured no slower than their parts charge nothing more.
  calibration->modelSteps.back().replicated[2] = apart;
  EXPECT_EQ(forcedEstimate(model, "dp=2", snn::schema::RequestedMode::DP, hw).replicaSyncSeconds,
            0.0);
}

TEST(CalibratedCostModel, ReplicasWithoutBatchNormWaitForEachOtherToo) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  Hardware hw;
  hw.calibration = calibration;
  MeasuredCurve step = stepCurve(model, hw, 3.0);
  Communication calls = dataParallelCommunication(modelCost(model, 1), 2);
  calls += stepMetricsCommunication(2);
  MeasuredCurve replicas;
  for (const auto &[samples, seconds] : step.points)
    replicas.points.push_back({samples, seconds + calls.seconds(hw, 2) + 2e-3});
  calibration->modelSteps.push_back(
      {"mlp", parameterCount(model), model.inputShape, step, {}, {{2, replicas}}});
  EXPECT_NEAR(forcedEstimate(model, "dp=2", snn::schema::RequestedMode::DP, hw)
                  .replicaSyncSeconds,
              2e-3, 1e-9);
}

// With virtual stages a rank runs its chunks in turn: a microbatch costs the sum of its
// chunks' ticks, not as many of the heaviest chunk's. One heavy chunk (a 2048-wide Linear)
// and three light ones on pp=2 x vpp 2 cost what the same heavy stage costs without
// virtual stages, per microbatch and fill tick.
TEST(CalibratedCostModel, APipelineRankPaysEachOfItsChunksTicksOnce) {
  test::ModelBuilder b({4, -1, 2048}, 4);
  int x = b.linear(-1, 2048, true, "heavy");
  x = b.neuron(x, OpKind::LIFNode, "heavy_lif");
  for (const char *name : {"a", "b", "c"}) {
    x = b.linear(x, 8, true, name);
    x = b.neuron(x, OpKind::LIFNode, std::string(name) + "_lif");
  }
  ModelInfo model = b.build(b.meanTime(x, "mean"));
  Hardware hw;
  hw.calibration = uniformCalibration(1e-9);
  Estimate flat = forcedEstimate(model, "pp=2,vpp=1", snn::schema::RequestedMode::PP, hw);
  Estimate virt = forcedEstimate(model, "pp=2,vpp=2", snn::schema::RequestedMode::PP, hw);
  ASSERT_EQ(virt.virtualStages, 2);
  ASSERT_GT(flat.microbatches, 0);
  ASSERT_GT(virt.microbatches, 0);
  // Each is (microbatches + 1) heavy ticks of 64 / microbatches samples, the light chunks
  // a rounding error; charging the heavy chunk for every tick would make the virtual one
  // (2 m + 1) / (m + 1) times that.
  double perSampleFlat = flat.computeSeconds / double(flat.microbatches + 1) *
                         double(flat.microbatches);
  double perSampleVirt = virt.computeSeconds / double(virt.microbatches + 1) *
                         double(virt.microbatches);
  EXPECT_NEAR(perSampleVirt / perSampleFlat, 1.0, 0.05);
}

// A tensor-parallel stage's all-reduces run while the job's other ranks run theirs, on
// CPUs the job shares: like a flat dp x tp mesh's groups, they are priced by the job
// size's curve (its steps scaled to the group's) where that is slower.
TEST(CalibratedCostModel, APipelineStagesTensorParallelCallsWaitLikeTheJobs) {
  ModelInfo model = test::csnn(8, 4, /*convCandidates=*/true);
  auto calibration = uniformCalibration(1e-9);
  calibration->logicalCpus = 2; // 4 ranks of 1 thread: oversubscribed
  Hardware hw;
  hw.calibration = calibration;
  // The job size's all-reduce: the same latency, 100x the time per byte.
  MeasuredCurve &job = calibration->collectives[{CollectiveKind::AllReduce, 4}];
  job.points = {{1, 1e-9}, {1e9, 1e9 * 1e-9}};
  Estimate before = forcedEstimate(model, "tp=2,pp=2,vpp=1", snn::schema::RequestedMode::PP, hw);
  job.points = {{1, 1e-9}, {1e9, 1e9 * 1e-7}};
  Estimate slower = forcedEstimate(model, "tp=2,pp=2,vpp=1", snn::schema::RequestedMode::PP, hw);
  // (Priced by the tp group's own curve alone, the two would be equal: the messages
  // between stages read the job's curve only at its smallest size.)
  EXPECT_GT(slower.commSeconds, 1.5 * before.commSeconds);
}

TEST(CalibratedCostModel, ACollectiveAfterComputeWaitsForItsPeersAsMeasured) {
  Calibration c;
  c.collectives[{CollectiveKind::AllReduce, 2}].points = {{4096, 2e-4}, {65536, 4e-4}};
  EXPECT_FALSE(c.busyCollectiveSeconds(CollectiveKind::AllReduce, 2, 4, 4096, 1e-3));
  c.waitsBetweenComputes[4] = {65536, {{{1e-4, 3e-3}, {2e-3, 5e-3}, {8e-3, 8e-3}}}};
  // Its own time alone, and the wait beyond a 2-rank all_reduce of the measured size.
  auto busy = [&](double bytes, double compute, int64_t job = 4) {
    return *c.busyCollectiveSeconds(CollectiveKind::AllReduce, 2, job, bytes, compute);
  };
  EXPECT_DOUBLE_EQ(busy(4096, 2e-3), 2e-4 + (5e-3 - 4e-4));
  EXPECT_DOUBLE_EQ(busy(65536, 2e-3), 5e-3);
  // The compute held to the measured range: no less than after the shortest, no more than
  // after the longest.
  EXPECT_DOUBLE_EQ(busy(4096, 1e-6), 2e-4 + (3e-3 - 4e-4));
  EXPECT_DOUBLE_EQ(busy(4096, 35e-3), 2e-4 + (8e-3 - 4e-4));
  // The job size nearest; a wait under the collective's own time adds nothing.
  c.waitsBetweenComputes[8] = {65536, {{{1e-4, 1e-4}}}};
  EXPECT_DOUBLE_EQ(busy(4096, 2e-3, 8), 2e-4);
  EXPECT_DOUBLE_EQ(busy(4096, 2e-3, 5), 2e-4 + (5e-3 - 4e-4));
}

TEST(CalibratedCostModel, APipelineStagesTensorParallelCallsWaitForPeersWhenTheCpusAreTaken) {
  ModelInfo model = test::csnn(8, 4, /*convCandidates=*/true);
  auto calibration = uniformCalibration(1e-9);
  Hardware hw;
  hw.calibration = calibration;
  auto estimate = [&](double wait, int64_t cpus) {
    calibration->logicalCpus = cpus;
    calibration->waitsBetweenComputes[4] = {16384, {{{1e-4, wait}, {1e-2, wait}}}};
    return forcedEstimate(model, "tp=2,pp=2,vpp=1", snn::schema::RequestedMode::PP, hw);
  };
  // A wait no longer than the collective alone: nothing to add.
  Estimate none = estimate(1e-9, 2);
  EXPECT_DOUBLE_EQ(none.stageCollectiveLagSeconds, 0.0);
  // 5 ms a call with every rank computing: its share of the step, by the chance that the
  // other 3 ranks fill the 2 CPUs when a rank is ready.
  Estimate waits = estimate(5e-3, 2);
  ASSERT_GT(waits.stageCollectiveLagSeconds, 0.0);
  double added = waits.commSeconds - none.commSeconds;
  EXPECT_GT(added, 0.0);
  EXPECT_LT(added, waits.stageCollectiveLagSeconds);
  EXPECT_NEAR(waits.peerWaitSeconds, added, 1e-9 * waits.commSeconds);
  // CPUs to spare: a ready rank always runs, and waits for no one.
  Estimate spare = estimate(5e-3, 8);
  EXPECT_GT(spare.stageCollectiveLagSeconds, 0.0);
  EXPECT_DOUBLE_EQ(spare.commSeconds, estimate(1e-9, 8).commSeconds);
  // One CPU: any other rank busy takes it, more often than 2 of 3 fill two.
  Estimate one = estimate(5e-3, 1);
  EXPECT_GT(one.commSeconds - estimate(1e-9, 1).commSeconds, added);
}

// fsdp_tp's tp groups are pairs of a larger job: each tp call waits for a peer that
// computed beside the other pairs, as calibrate's pairs measured, every rank computing in
// lockstep (no chance factor).
TEST(CalibratedCostModel, FsdpTpTensorParallelCallsWaitForTheirPeersAsMeasuredPairsDo) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  calibration->logicalCpus = 2;
  Hardware hw;
  hw.calibration = calibration;
  auto estimate = [&](double wait, const std::string &topology, snn::schema::RequestedMode m) {
    calibration->waitsBetweenComputes[4] = {16384, {{{1e-4, wait}, {1e-2, wait}}}};
    return forcedEstimate(model, topology, m, hw);
  };
  using snn::schema::RequestedMode;
  Estimate none = estimate(1e-9, "dp=2,tp=2", RequestedMode::FSDP_TP);
  Estimate waits = estimate(5e-3, "dp=2,tp=2", RequestedMode::FSDP_TP);
  // Each tp call: 5 ms less the 2-rank all-reduce of the measured 16 KiB.
  double perCall = 5e-3 - calibration->collectiveSeconds(CollectiveKind::AllReduce, 2, 16384);
  double calls = (waits.commSeconds - none.commSeconds) / perCall;
  EXPECT_GE(calls, 1.0 - 1e-9);
  EXPECT_NEAR(calls, std::round(calls), 1e-6);
  EXPECT_DOUBLE_EQ(waits.computeSeconds, none.computeSeconds);
  EXPECT_DOUBLE_EQ(none.peerWaitSeconds, 0.0);
  EXPECT_NEAR(waits.peerWaitSeconds, waits.commSeconds - none.commSeconds,
              1e-9 * waits.commSeconds);
  std::string rationale = forcedRationale(model, "dp=2,tp=2", RequestedMode::FSDP_TP, hw);
  EXPECT_NE(rationale.find(" the calls' and messages' waits for their peers measured between "
                           "computes"),
            std::string::npos)
      << rationale;
  // A whole-job tp on CPUs it oversubscribes, without a replicated step measured, waits as
  // calibrate measured between computes too (FlatEstimate), but after its own compute.
  EXPECT_GT(estimate(5e-3, "tp=4", RequestedMode::TP).commSeconds,
            estimate(1e-9, "tp=4", RequestedMode::TP).commSeconds + perCall);
}

namespace {
/// The slowdown of a pipeline's busiest stage (cpuContention): its rank computes beside
/// each other stage's rank with that rank's busy share u = c x busy / (c x compute + comm),
/// independently, and beside k of them runs max(1, (k + 1) x `perRank`) times slower: the
/// expectation over k, to its fixed point from c = 1.
double expectedContention(const Estimate &e, double compute, double perRank) {
  std::vector<double> others = e.stageBusySeconds;
  others.erase(std::max_element(others.begin(), others.end()));
  double c = 1.0;
  for (int i = 0; i < 200; ++i) {
    std::vector<double> chance{1.0}; // P(k of the others busy), one other at a time
    for (double busy : others) {
      double u = std::min(1.0, c * busy / (c * compute + e.commSeconds));
      std::vector<double> next(chance.size() + 1, 0.0);
      for (size_t k = 0; k < chance.size(); ++k) {
        next[k] += chance[k] * (1.0 - u);
        next[k + 1] += chance[k] * u;
      }
      chance = next;
    }
    c = 0;
    for (size_t k = 0; k < chance.size(); ++k)
      c += chance[k] * std::max(1.0, double(k + 1) * perRank);
  }
  return c;
}
} // namespace

TEST(CalibratedCostModel, PipelineRanksTakingTurnsShareTheCpusLess) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = std::make_shared<Calibration>(*uniformCalibration(1e-9));
  Hardware hw;
  hw.calibration = calibration;
  snn::schema::RequestedMode pp = snn::schema::RequestedMode::PP;
  Estimate pipeAlone = forcedEstimate(model, "pp=4,vpp=1", pp, hw, Schedule::GPipe);
  Estimate dpAlone = forcedEstimate(model, "dp=4", snn::schema::RequestedMode::DP, hw);
  calibration->logicalCpus = 1; // 4 ranks on 1 CPU: 4x when all compute at once
  Estimate pipe = forcedEstimate(model, "pp=4,vpp=1", pp, hw, Schedule::GPipe);
  Estimate dp = forcedEstimate(model, "dp=4", snn::schema::RequestedMode::DP, hw);
  EXPECT_DOUBLE_EQ(dp.computeSeconds, 4.0 * dpAlone.computeSeconds); // lockstep
  // A pipeline's busiest stage computes beside each other rank busy its own share of the
  // step, and beside k of them on the one CPU runs k + 1 times slower: between 1 and the
  // lockstep 4. The step is never below the busySeconds the one CPU must run, plus the
  // synchronisation after the drain.
  ASSERT_EQ(pipe.stageBusySeconds.size(), 4u);
  ASSERT_GT(pipe.busySeconds, 0.0);
  double compute = pipeAlone.computeSeconds, comm = pipe.commSeconds;
  double contention = expectedContention(pipe, compute, 1.0);
  EXPECT_GT(contention, 1.0);
  EXPECT_LT(contention, 4.0);
  double floor = pipe.busySeconds + pipe.drainSyncSeconds;
  EXPECT_NEAR(pipe.stepSeconds, std::max(contention * compute + comm, floor),
              1e-9 * pipe.stepSeconds);
  EXPECT_DOUBLE_EQ(pipe.stepSeconds, pipe.computeSeconds + pipe.commSeconds);
}

// A pipeline's ranks are busy at random times, not evenly: a rank computing beside k others
// on 2 CPUs runs max(1, (k + 1) / 2) times slower. At an average load under the CPUs (no
// slowdown by the average alone) compute still slows by that expectation, over the other
// stages' own busy shares: the busiest stage's among light ones slows less than among its
// equals.
TEST(CalibratedCostModel, APipelineRankSlowsByTheExpectedCpuSharingAtItsBusyShare) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = std::make_shared<Calibration>(*uniformCalibration(1e-9));
  Hardware hw;
  hw.calibration = calibration;
  snn::schema::RequestedMode pp = snn::schema::RequestedMode::PP;
  Estimate alone = forcedEstimate(model, "pp=4,vpp=1", pp, hw, Schedule::GPipe);
  calibration->logicalCpus = 2;
  Estimate pipe = forcedEstimate(model, "pp=4,vpp=1", pp, hw, Schedule::GPipe);
  ASSERT_GT(pipe.busySeconds, 0.0);
  ASSERT_GT(pipe.stepSeconds, pipe.busySeconds / 2.0 + pipe.drainSyncSeconds); // not the floor
  double compute = alone.computeSeconds, comm = pipe.commSeconds;
  double c = expectedContention(pipe, compute, 0.5);
  double averageLoad = pipe.busySeconds * 2.0 / (4.0 * (compute + comm));
  ASSERT_LT(averageLoad, 1.0); // the average alone: no slowdown
  EXPECT_GT(c, 1.01);
  EXPECT_NEAR(pipe.computeSeconds, c * compute, 1e-6 * pipe.computeSeconds);
  // The same busy time spread evenly over the stages slows the busiest one more.
  Estimate even = pipe;
  even.stageBusySeconds.assign(4, pipe.busySeconds / 4.0);
  double busiest = *std::max_element(pipe.stageBusySeconds.begin(), pipe.stageBusySeconds.end());
  ASSERT_GT(busiest, 1.2 * pipe.busySeconds / 4.0); // the MLP's stages are unequal
  EXPECT_GT(expectedContention(even, compute, 0.5), c);
}

TEST(CalibratedCostModel, APipelinesMessagesTakeTheCpuCalibrateMeasured) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = std::make_shared<Calibration>(*uniformCalibration(1e-9));
  calibration->logicalCpus = 2;
  Hardware hw;
  hw.calibration = calibration;
  // Without measured CPU, a message keeps both ends busy for its whole time.
  snn::schema::RequestedMode pp = snn::schema::RequestedMode::PP;
  Estimate unmeasured = forcedEstimate(model, "dp=2,pp=2,vpp=1", pp, hw);
  ASSERT_GT(unmeasured.busySeconds, 0.0);
  // Measured: none at 2 ranks, a lot at 4 (all pairs exchanging at once).
  calibration->cpu[{CollectiveKind::SendRecv, 2}].points = {{1, 1e-12}, {1e9, 1e-12}};
  calibration->cpu[{CollectiveKind::SendRecv, 4}].points = {{1, 2e-2}, {1e9, 2e-2}};
  Estimate replicas = forcedEstimate(model, "dp=2,pp=2,vpp=1", pp, hw);
  Estimate alone = forcedEstimate(model, "pp=4,vpp=1", pp, hw);
  // dp=2 x pp=2: 2 replicas x m microbatches x 2 messages (activations, gradients) of
  // 20 ms each, on top of the compute: the 2 CPUs bound the step.
  double messages = 2.0 * double(replicas.microbatches) * 2.0 * 2e-2;
  EXPECT_GT(replicas.busySeconds, messages);
  EXPECT_LT(replicas.busySeconds, messages + unmeasured.busySeconds);
  EXPECT_NEAR(replicas.stepSeconds, replicas.busySeconds / 2.0 + replicas.drainSyncSeconds,
              1e-9 * replicas.stepSeconds);
  EXPECT_GT(replicas.stepSeconds, 2.0 * unmeasured.stepSeconds);
  // One pipeline exchanges a pair at a time: the two-rank curve, next to no CPU.
  EXPECT_LT(alone.busySeconds, messages / 4.0);
}

TEST(CalibratedCostModel, FlatRanksCannotOutrunTheCpusTheirCollectivesKeepBusy) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = std::make_shared<Calibration>(*uniformCalibration(1e-9));
  calibration->logicalCpus = 2; // 4 ranks of 1 thread
  Hardware hw;
  hw.calibration = calibration;
  // A 4-rank all-reduce of 5 ms at any size.
  calibration->collectives[{CollectiveKind::AllReduce, 4}].points = {{1, 5e-3}, {1e9, 5e-3}};
  snn::schema::RequestedMode dp = snn::schema::RequestedMode::DP;
  Estimate unmeasured = forcedEstimate(model, "dp=4", dp, hw);
  EXPECT_EQ(unmeasured.busySeconds, 0.0); // no CPU measured: lockstep compute + the calls
  EXPECT_DOUBLE_EQ(unmeasured.stepSeconds,
                   unmeasured.computeSeconds + unmeasured.commSeconds);
  // Each call keeps its 4 ranks' CPUs busy its whole time: 4 ranks' compute and calls on
  // 2 CPUs take longer than compute x 2 + the calls.
  calibration->cpu[{CollectiveKind::AllReduce, 4}].points = {{1, 2e-2}, {1e9, 2e-2}};
  Estimate busy = forcedEstimate(model, "dp=4", dp, hw);
  double compute = unmeasured.computeSeconds / 2.0; // one rank's alone
  EXPECT_NEAR(busy.busySeconds, 4.0 * (compute + unmeasured.commSeconds),
              1e-9 * busy.busySeconds);
  EXPECT_NEAR(busy.stepSeconds, busy.busySeconds / 2.0, 1e-9 * busy.stepSeconds);
  EXPECT_GT(busy.stepSeconds, unmeasured.stepSeconds);
  // A tenth of their time: the lockstep estimate holds.
  calibration->cpu[{CollectiveKind::AllReduce, 4}].points = {{1, 2e-3}, {1e9, 2e-3}};
  EXPECT_DOUBLE_EQ(forcedEstimate(model, "dp=4", dp, hw).stepSeconds, unmeasured.stepSeconds);
}

TEST(CalibratedCostModel, ACallKeepsItsRanksCpusBusyTheShareCalibrateMeasured) {
  auto c = std::make_shared<Calibration>();
  c->logicalCpus = 2;
  c->collectives[{CollectiveKind::AllReduce, 4}].points = {{4096, 2e-3}, {1 << 20, 4e-3}};
  c->cpu[{CollectiveKind::AllReduce, 4}].points = {{4096, 2e-3}, {1 << 20, 2e-2}};
  // 2 ms of CPU over 4 ranks' 2 ms: a quarter; more CPU than time is at most all of it.
  EXPECT_DOUBLE_EQ(*c->cpuShare(CollectiveKind::AllReduce, 4, 4096), 0.25);
  EXPECT_DOUBLE_EQ(*c->cpuShare(CollectiveKind::AllReduce, 4, 1 << 20), 1.0);
  EXPECT_DOUBLE_EQ(*c->cpuShare(CollectiveKind::AllReduce, 3, 4096), 0.25); // nearest
  EXPECT_FALSE(c->cpuShare(CollectiveKind::AllGather, 4, 4096));
  EXPECT_FALSE(c->cpuSeconds(CollectiveKind::SendRecv, 2, 4096));
  EXPECT_DOUBLE_EQ(*c->cpuSeconds(CollectiveKind::AllReduce, 2, 4096), 2e-3);

  Hardware hw;
  hw.calibration = c;
  Communication comm;
  comm.calls = {{CollectiveKind::AllReduce, 2, 4096, 3}};
  // Three 2-rank calls beside the job's other group: each the time of one of the 4-rank
  // curve's 2 doubling steps, a quarter of it on each of the call's 2 ranks.
  EXPECT_DOUBLE_EQ(comm.seconds(hw, 4), 3 * 1e-3);
  EXPECT_DOUBLE_EQ(comm.rankCpuSeconds(hw, 4), 3 * 0.25 * 1e-3);
  // Not measured: both ends busy for the whole call.
  c->cpu.clear();
  EXPECT_DOUBLE_EQ(comm.rankCpuSeconds(hw, 4), comm.seconds(hw, 4));
}

TEST(CalibratedCostModel, GroupsBesideTheJobsOtherGroupsWaitLikeItsSteps) {
  Calibration c;
  c.collectives[{CollectiveKind::AllReduce, 2}].points = {{4096, 4e-4}};
  c.collectives[{CollectiveKind::AllReduce, 4}].points = {{4096, 6e-3}};
  // Alone, or the job's CPUs to spare: the group's own curve.
  EXPECT_DOUBLE_EQ(c.concurrentCollectiveSeconds(CollectiveKind::AllReduce, 2, 4, 4096), 4e-4);
  c.logicalCpus = 2;
  c.threadsPerRank = 1;
  // 4 ranks on 2 CPUs: the 4-rank curve over its 2 doubling steps, one of the group's.
  EXPECT_DOUBLE_EQ(c.concurrentCollectiveSeconds(CollectiveKind::AllReduce, 2, 4, 4096),
                   6e-3 / 2.0);
  // A large tensor goes around the rings: 2 of the job's 6 steps.
  double large = double(int64_t(4) << 20);
  c.collectives[{CollectiveKind::AllReduce, 2}].points = {{4096, 4e-4}, {large, 1e-3}};
  c.collectives[{CollectiveKind::AllReduce, 4}].points = {{4096, 6e-3}, {large, 1.2e-2}};
  EXPECT_DOUBLE_EQ(c.concurrentCollectiveSeconds(CollectiveKind::AllReduce, 2, 4, large),
                   1.2e-2 * 2 / 6);
  EXPECT_DOUBLE_EQ(c.concurrentCollectiveSeconds(CollectiveKind::AllReduce, 2, 2, 4096), 4e-4);
  EXPECT_DOUBLE_EQ(c.concurrentCollectiveSeconds(CollectiveKind::AllReduce, 4, 4, 4096), 6e-3);
  // No curve of the job's size: the group's own.
  EXPECT_DOUBLE_EQ(c.concurrentCollectiveSeconds(CollectiveKind::AllReduce, 2, 8, 4096), 4e-4);
  // The contended time never undercuts the group's own.
  c.collectives[{CollectiveKind::AllReduce, 4}].points = {{4096, 6e-4}};
  EXPECT_DOUBLE_EQ(c.concurrentCollectiveSeconds(CollectiveKind::AllReduce, 2, 4, 4096), 4e-4);
}

TEST(CalibratedCostModel, AMiddleStagesTickWaitsForBothOfItsMessages) {
  // Messages only cost (compute nearly free): a middle stage's tick of a 1F1B pipeline
  // receives an activation and a gradient of the same size, at different times of the
  // schedule, and the middle stages are the busiest.
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = std::make_shared<Calibration>(*uniformCalibration(1e-15, 1e-6));
  Hardware hw;
  hw.calibration = calibration;
  Estimate pipe = forcedEstimate(model, "pp=4", snn::schema::RequestedMode::PP, hw);
  ASSERT_GT(pipe.commSeconds, 0.0);
  // Every boundary carries [T, micro, 32] floats.
  int64_t micro = (64 + pipe.microbatches - 1) / pipe.microbatches;
  double message = hw.sendSeconds(4 * micro * 32 * 4, 4);
  double ticks = double(pipe.microbatches * pipe.virtualStages + pipe.pp - 1);
  // After the drain, the last stage's metrics reach every stage (schema's pipeline step).
  double metrics = pipelineStepCommunication(4, 1, 0, 0, 0).seconds(hw, 4);
  ASSERT_GT(metrics, 0.0);
  EXPECT_NEAR(pipe.commSeconds, ticks * 2 * message + metrics, 1e-6 * ticks * message);
  // Two stages have no middle one: a tick waits for one message.
  Estimate two = forcedEstimate(model, "pp=2,vpp=1", snn::schema::RequestedMode::PP, hw);
  ASSERT_EQ(two.virtualStages, 1) << two.microbatches;
  int64_t twoMicro = (64 + two.microbatches - 1) / two.microbatches;
  double twoTicks = double(two.microbatches * two.virtualStages + two.pp - 1);
  EXPECT_NEAR(two.commSeconds,
              twoTicks * hw.sendSeconds(4 * twoMicro * 32 * 4, 2) +
                  pipelineStepCommunication(2, 1, 0, 0, 0).seconds(hw, 2),
              1e-6 * twoTicks * message);
}

TEST(CalibratedCostModel, APipelineStepEndsWithTheRuntimesSynchronisation) {
  // What PipelineSync does after the last microbatch: metrics over pp, and with replicas
  // the gradients, running statistics and buffers over dp.
  Communication alone = pipelineStepCommunication(4, 1, 4000, 48, 400);
  ASSERT_EQ(alone.calls.size(), 1u);
  EXPECT_EQ(alone.calls[0].kind, CollectiveKind::AllGather);
  EXPECT_EQ(alone.calls[0].ranks, 4);
  EXPECT_EQ(alone.calls[0].tensorBytes, 16);
  Communication replicas = pipelineStepCommunication(2, 3, 4000, 48, 400);
  ASSERT_EQ(replicas.calls.size(), 5u);
  EXPECT_EQ(replicas.calls[1].kind, CollectiveKind::AllReduce); // the metrics over dp
  EXPECT_EQ(replicas.calls[1].tensorBytes, 16);
  EXPECT_EQ(replicas.calls[2].kind, CollectiveKind::AllReduce); // one flat gradient tensor
  EXPECT_EQ(replicas.calls[2].tensorBytes, 4000);
  EXPECT_EQ(replicas.calls[3].kind, CollectiveKind::AllGather); // mean and var of 3 replicas
  EXPECT_EQ(replicas.calls[3].tensorBytes, 48 * 2 * 4 * 3);
  EXPECT_EQ(replicas.calls[4].tensorBytes, 400); // the buffers' broadcast
  for (size_t i = 1; i < replicas.calls.size(); ++i)
    EXPECT_EQ(replicas.calls[i].ranks, 3);
  // Nothing to all-gather or broadcast without BatchNorms and buffers.
  EXPECT_EQ(pipelineStepCommunication(2, 3, 4000, 0, 0).calls.size(), 3u);

  // The estimate charges them: with every all-gather taking 1 s and all else next to
  // nothing, a dp x pp CSNN (BatchNorms on both stages) pays the metrics, the running
  // statistics and the buffers (3 s), a pipeline without replicas the metrics only.
  ModelInfo model = test::csnn(8);
  auto calibration = std::make_shared<Calibration>(*uniformCalibration(1e-15, 1e-15));
  calibration->collectives[{CollectiveKind::AllGather, 2}].points = {{1, 1.0}, {1e9, 1.0}};
  Hardware hw;
  hw.calibration = calibration;
  Estimate replicated = forcedEstimate(model, "dp=2,pp=2", snn::schema::RequestedMode::PP, hw);
  EXPECT_NEAR(replicated.commSeconds, 3.0, 1e-3);
  Estimate single = forcedEstimate(model, "pp=2", snn::schema::RequestedMode::PP, hw);
  EXPECT_NEAR(single.commSeconds, 1.0, 1e-3);
}

TEST(CalibratedCostModel, APipelineReplicaHoldsItsGradientsFlatCopyAndItsBatch) {
  // Large weights, small activations (T = 1): after the drain, a replica's rank all-reduces
  // its stages' gradients through one flat copy while its batch is still loaded; up to
  // 1 MiB on 2 ranks the all-reduce goes by recursive doubling, receiving into a second
  // tensor of that size (larger ones go through Gloo's ring, whose buffers are its own).
  int64_t batch = 32 * 64 * 4 + 32 * 8; // a replica's 32 of the 64 samples, and labels
  for (int64_t hidden : {1024, 8192}) {
    ModelInfo model = test::spikingMlp(64, hidden, 10, /*timeSteps=*/1);
    Hardware hw;
    Estimate replicas = forcedEstimate(model, "dp=2,pp=2", snn::schema::RequestedMode::PP, hw);
    // The busiest rank's parameters: its state is weights, gradients and Adam's 2 states.
    int64_t params = replicas.stateBytes / 4;
    ASSERT_GT(params, 0);
    bool doubling = params <= (int64_t(1) << 20);
    EXPECT_EQ(doubling, hidden == 1024) << params;
    // Beyond the backward's peak, and not growing with the batch: transient; so is a
    // microbatch's weight gradient before it is accumulated (the busiest rank holds both
    // layers, the first the larger).
    int64_t largestLayer = (64 * hidden + hidden) * 4;
    EXPECT_EQ(replicas.transientBytes,
              std::max(largestLayer, (doubling ? 2 : 1) * params + batch -
                                         replicas.activationBytes))
        << hidden;
  }
}

// From its second microbatch on, a stage's backward computes a weight gradient beside the
// one accumulated so far: a rank holds its largest layer's worth more than its
// activations, which does not grow with the batch (capacity does not count it).
TEST(CalibratedCostModel, APipelineRankAccumulatesItsMicrobatchesWeightGradients) {
  ModelInfo model = test::spikingMlp(64, 8192, 10, /*timeSteps=*/1);
  Hardware hw;
  Estimate pipeline = forcedEstimate(model, "pp=2", snn::schema::RequestedMode::PP, hw);
  EXPECT_EQ(pipeline.transientBytes, (64 * 8192 + 8192) * 4);
}

// dp's reducer holds a flat copy of the gradients for the whole run, and after backward,
// the activations freed, each bucket's all-reduce by recursive doubling receives into a
// tensor of the bucket's size.
TEST(CalibratedCostModel, DataParallelRanksHoldTheirBucketsAndTheirAllReducesScratch) {
  // 0.8 MiB of weights, far less activation at 16 samples a rank.
  ModelInfo model = test::spikingMlp(192, 1024, 10, /*timeSteps=*/1);
  Hardware hw;
  Estimate alone = forcedEstimate(model, "dp=1", snn::schema::RequestedMode::None, hw);
  Estimate replicas = forcedEstimate(model, "dp=4", snn::schema::RequestedMode::DP, hw);
  int64_t params = alone.stateBytes / 4; // weights, gradients and Adam's 2 states
  ASSERT_GT(params, 0);
  EXPECT_EQ(replicas.stateBytes, alone.stateBytes + params) << "the buckets";
  // The scratch replaces the freed activations: the step's peak beside the state is the
  // larger of the two, with the batch.
  int64_t batch = 16 * 192 * 4 + 16 * 8;
  EXPECT_EQ(replicas.activationBytes + replicas.transientBytes,
            std::max(replicas.activationBytes - batch, params) + batch);
  EXPECT_GT(replicas.transientBytes, 0);
  // Three ranks are not a power of two: Gloo's ring, no scratch of the runtime's.
  Estimate three = forcedEstimate(model, "dp=3", snn::schema::RequestedMode::DP, hw);
  EXPECT_EQ(three.transientBytes, 0);
  EXPECT_EQ(three.stateBytes, alone.stateBytes + params);
}

// fsdp reduces each layer's gradients as soon as backward has them: backward holds, beside
// the activations, the layer gathered, the one before it prefetched, and the layer's
// gradients with their flat copy, where one gathered layer was counted before.
TEST(CalibratedCostModel, FsdpBackwardHoldsALayerItsGradientsAndThePreviousPrefetched) {
  ModelInfo model = test::spikingMlp(64, 1024, 10, /*timeSteps=*/1);
  Hardware hw;
  Estimate fsdp = forcedEstimate(model, "dp=2", snn::schema::RequestedMode::FSDP, hw);
  int64_t first = (64 * 1024 + 1024) * 4, second = (1024 * 10 + 10) * 4;
  // At the first layer's backward: 3 x its bytes, with what its backward holds.
  EXPECT_GE(fsdp.activationBytes + fsdp.transientBytes, 3 * first);
  // At most both layers' worst, with every activation.
  EXPECT_LE(fsdp.transientBytes, 3 * first + second);
  EXPECT_GT(fsdp.transientBytes, first) << "more than one gathered layer";
}

TEST(CalibratedCostModel, EachOpKindHasItsUnitOfWork) {
  ModelInfo model = test::csnn(8);
  for (size_t i = 0; i < model.ops.size(); ++i) {
    auto [kind, work] = opWork(model, int(i), 2);
    const OpInfo &op = model.ops[i];
    OpCost cost = opCost(model, int(i), 2);
    switch (op.kind) {
    case OpKind::Conv2d:
      EXPECT_EQ(kind, WorkKind::Conv2d);
      EXPECT_DOUBLE_EQ(work, cost.forwardFlops);
      break;
    case OpKind::Linear:
      EXPECT_EQ(kind, WorkKind::Gemm);
      EXPECT_DOUBLE_EQ(work, cost.forwardFlops);
      break;
    case OpKind::LIFNode:
      EXPECT_EQ(kind, WorkKind::Neuron);
      EXPECT_DOUBLE_EQ(work, double(cost.outputBytes / kBytesPerElement));
      break;
    case OpKind::MaxPool2d: // the input: 4 elements per output element of a 2x2 pool
      EXPECT_EQ(kind, WorkKind::Pool);
      EXPECT_DOUBLE_EQ(work, 4.0 * double(cost.outputBytes / kBytesPerElement));
      break;
    case OpKind::Flatten:
      EXPECT_EQ(work, 0.0);
      break;
    default:
      break;
    }
  }
}

TEST(CalibratedCostModel, TheEstimateIsTheSumOfTheCurves) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  Hardware hw;
  hw.calibration = uniformCalibration(1e-9);
  double expected = 0;
  for (size_t i = 0; i < model.ops.size(); ++i)
    expected += opWork(model, int(i), 8).second * 1e-9;
  double sum = 0;
  for (size_t i = 0; i < model.ops.size(); ++i)
    sum += opTrainingSeconds(model, int(i), 8, 1.0, hw);
  EXPECT_NEAR(sum, expected, 1e-15);
  // A dp all-reduce of the parameters: the measured curve at its tensor's bytes (2 ranks).
  Communication comm = allReduce(4000, 2);
  EXPECT_NEAR(comm.seconds(hw), 4000 * 1e-9, 1e-15);
  EXPECT_NEAR(hw.sendSeconds(4000), 4000 * 1e-9, 1e-15);
  // fsdp: one gather, re-gather and reduce-scatter per parameter-holding op.
  ModelCost cost = modelCost(model, 1);
  Communication fsdp = fsdpCommunication(cost, 2);
  EXPECT_NEAR(fsdp.seconds(hw),
              3.0 * double(cost.paramOps) * double(cost.paramBytes / cost.paramOps) * 1e-9,
              1e-12);
  // Without a calibration: the constants.
  Hardware plain;
  EXPECT_DOUBLE_EQ(comm.seconds(plain), double(comm.bytes) / plain.linkBytesPerSecond +
                                            double(comm.latencySteps) * plain.latencySeconds);
}

TEST(CalibratedCostModel, AMeasuredSlowLinkTurnsTheChoiceToWhatSendsLess) {
  // The same model and request on two measured machines. With fast collectives the
  // modes that split the work alike (dp, tp) tie on compute and tp's smaller all-reduces
  // decide; where each byte takes a microsecond, the pipeline, sending only the boundary
  // activations, wins although its compute takes longer.
  ModelInfo model = test::spikingMlp(784, 512, 10);
  PlannerInput input;
  input.model = model;
  for (const OpInfo &op : model.ops)
    input.tpCandidates += op.tpCandidate ? 1 : 0;
  input.pipelineUnits = int64_t(pipelineUnits(model).size());
  PlanRequest request;
  request.topology = *parseTopology("dp=2");
  request.batchSize = 64;
  request.hardware.calibration = uniformCalibration(1e-9, 1e-12);
  auto fast = recommend(input, request);
  ASSERT_TRUE(fast.ok()) << fast.error().message;
  EXPECT_EQ(fast->mode, Mode::TP);
  request.hardware.calibration = uniformCalibration(1e-9, 1e-6);
  auto slow = recommend(input, request);
  ASSERT_TRUE(slow.ok()) << slow.error().message;
  EXPECT_EQ(slow->mode, Mode::PP);
  auto best = [&](Mode mode) {
    const Estimate *found = nullptr;
    for (const Estimate &e : slow->candidates)
      if (e.mode == mode && e.feasible && (!found || e.stepSeconds < found->stepSeconds))
        found = &e;
    return found;
  };
  const Estimate *tp = best(Mode::TP), *pp = best(Mode::PP), *dp = best(Mode::DP);
  ASSERT_TRUE(tp && pp && dp);
  EXPECT_LT(pp->commBytes, tp->commBytes);
  EXPECT_LT(tp->commBytes, dp->commBytes);
  EXPECT_GT(pp->computeSeconds, tp->computeSeconds);
  EXPECT_LT(pp->stepSeconds, tp->stepSeconds);
}

// 2 ranks of 1 thread on 2 CPUs take every CPU: a pipeline's messages, fsdp's
// reduce-scatters and tp's all-reduces wait for the peer as the 2-rank waits between
// computes say; on 4 CPUs, or without that curve, they cost the curves alone.
TEST(CalibratedCostModel, OnAJobThatTakesEveryCpuMessagesAndScattersWaitAsMeasured) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  calibration->logicalCpus = 2;
  Hardware hw;
  hw.calibration = calibration;
  using snn::schema::RequestedMode;
  auto comm = [&](const std::string &topology, RequestedMode mode) {
    return forcedEstimate(model, topology, mode, hw).commSeconds;
  };
  double pipeline = comm("pp=2,vpp=1", RequestedMode::PP);
  double fsdp = comm("dp=2", RequestedMode::FSDP);
  double dp = comm("dp=2", RequestedMode::DP);
  double tp = comm("tp=2", RequestedMode::TP);
  EXPECT_FALSE(hw.ranksFillCpus(2));
  calibration->waitsBetweenComputes[2] = {16384, {{{1e-4, 2e-3}, {1e-2, 2e-3}}}};
  EXPECT_TRUE(hw.ranksFillCpus(2));
  EXPECT_FALSE(hw.ranksFillCpus(4)); // oversubscribed: the all-pairs curves say it
  double wait = 2e-3 - calibration->collectiveSeconds(CollectiveKind::AllReduce, 2, 16384);
  Estimate waited = forcedEstimate(model, "pp=2,vpp=1", RequestedMode::PP, hw);
  // Each tick waits for the later of its messages: at least one wait a microbatch.
  EXPECT_GE(waited.commSeconds - pipeline, double(waited.microbatches) * wait * (1 - 1e-9));
  EXPECT_NEAR(hw.busyMessageSeconds(4096, 2, 1e-3),
              calibration->collectiveSeconds(CollectiveKind::SendRecv, 2, 4096) + wait,
              1e-12);
  // fsdp: one reduce-scatter per parameter-holding layer waits, its all-gathers do not.
  Estimate sharded = forcedEstimate(model, "dp=2", RequestedMode::FSDP, hw);
  double layers = 0;
  for (const OpInfo &op : model.ops)
    layers += op.paramElements > 0 ? 1.0 : 0.0;
  ASSERT_GE(layers, 2.0);
  EXPECT_NEAR(sharded.commSeconds - fsdp, layers * wait, 1e-9);
  EXPECT_NEAR(sharded.peerWaitSeconds, layers * wait, 1e-9);
  EXPECT_DOUBLE_EQ(comm("dp=2", RequestedMode::DP), dp);
  // tp: each of its all-reduces between the layers' computes waits, forward and backward.
  Estimate split = forcedEstimate(model, "tp=2", RequestedMode::TP, hw);
  double calls = std::round((split.commSeconds - tp) / wait);
  EXPECT_GE(calls, 2.0);
  EXPECT_NEAR(split.commSeconds - tp, calls * wait, 1e-9);
  EXPECT_NEAR(split.peerWaitSeconds, calls * wait, 1e-9);
  calibration->logicalCpus = 4;
  EXPECT_DOUBLE_EQ(comm("pp=2,vpp=1", RequestedMode::PP), pipeline);
  EXPECT_DOUBLE_EQ(comm("dp=2", RequestedMode::FSDP), fsdp);
  EXPECT_DOUBLE_EQ(comm("tp=2", RequestedMode::TP), tp);
}

// Where the profile measured a two-stage pipeline's ticks on the job's ranks, a message of
// a job whose ranks take every CPU costs what a tick took there beyond its compute, at the
// tick's compute (clamped to the curve), plus what its bytes take beyond the curve's; the
// waits between computes then no longer price it.
TEST(CalibratedCostModel, APipelinesMessageCostsTheMeasuredTickBeyondItsCompute) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  calibration->logicalCpus = 2;
  calibration->waitsBetweenComputes[2] = {16384, {{{1e-4, 2e-4}, {1e-2, 2e-4}}}};
  Hardware hw;
  hw.calibration = calibration;
  ASSERT_TRUE(hw.ranksFillCpus(2));
  using snn::schema::RequestedMode;
  Estimate waited = forcedEstimate(model, "pp=2,vpp=1", RequestedMode::PP, hw);
  calibration->pipelineMessages[2] = {16384, {{{1e-4, 1e-3}, {8e-3, 3e-3}}}};
  EXPECT_DOUBLE_EQ(hw.busyMessageSeconds(4096, 2, 1e-5), 1e-3); // below the curve: its first
  double between = hw.busyMessageSeconds(4096, 2, 2e-3);
  EXPECT_DOUBLE_EQ(between, calibration->pipelineMessages.at(2).waits.secondsAt(2e-3));
  EXPECT_GT(between, 1e-3);
  EXPECT_LT(between, 3e-3);
  EXPECT_DOUBLE_EQ(hw.busyMessageSeconds(4096, 2, 1.0), 3e-3);
  int64_t large = 64 << 20;
  EXPECT_NEAR(hw.busyMessageSeconds(large, 2, 1e-5),
              1e-3 + hw.sendSeconds(large, 2, false) - hw.sendSeconds(16384, 2, false), 1e-12);
  Estimate ticked = forcedEstimate(model, "pp=2,vpp=1", RequestedMode::PP, hw);
  // One message a tick, m + 1 ticks: each at least the curve's first point.
  EXPECT_GE(ticked.commSeconds - waited.commSeconds,
            double(ticked.microbatches + 1) * (1e-3 - 2e-4) * (1 - 1e-9));
  EXPECT_DOUBLE_EQ(ticked.computeSeconds, waited.computeSeconds);
  calibration->logicalCpus = 4; // CPUs to spare: the ping-pong alone
  EXPECT_DOUBLE_EQ(hw.busyMessageSeconds(4096, 2, 1e-3), hw.sendSeconds(4096, 2, false));
}

// Two-stage pipelines on every pair of the job's ranks (dp=2 x pp=2 on 4 ranks) are what
// calibrate's pipelines ran: where it measured their messages' CPU, their messages wait and
// take CPU as measured there, on CPUs they fill or oversubscribe; other pipelines (pp=4) as
// before.
TEST(CalibratedCostModel, TwoStagePipelinesOnEveryPairArePricedAsCalibratesPipelines) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  calibration->logicalCpus = 2;
  calibration->cpu[{CollectiveKind::SendRecv, 4}] = {{{1, 1.2e-3}, {1e9, 1.2e-3}}};
  Hardware hw;
  hw.calibration = calibration;
  snn::schema::RequestedMode pp = snn::schema::RequestedMode::PP;
  Estimate pingPong = forcedEstimate(model, "dp=2,pp=2,vpp=1", pp, hw);
  Estimate fourStages = forcedEstimate(model, "pp=4,vpp=1", pp, hw);
  // The waits alone (an older profile's curve) change nothing at 4 ranks of 2 CPUs.
  calibration->pipelineMessages[4] = {16384, {{{1e-4, 2e-3}, {8e-3, 2e-3}}}, {}};
  EXPECT_FALSE(hw.measuredPipelineMessageCpu(4));
  EXPECT_DOUBLE_EQ(forcedEstimate(model, "dp=2,pp=2,vpp=1", pp, hw).stepSeconds,
                   pingPong.stepSeconds);
  calibration->pipelineMessages[4].cpu = {{{1e-4, 5e-4}, {8e-3, 5e-4}}};
  ASSERT_TRUE(hw.measuredPipelineMessageCpu(4));
  EXPECT_DOUBLE_EQ(hw.pipelineMessageCpuSeconds(4096, 4, true, 1e-3), 5e-4);
  EXPECT_DOUBLE_EQ(hw.busyMessageSeconds(4096, 4, 1e-3, /*measuredShape=*/true), 2e-3);
  Estimate measured = forcedEstimate(model, "dp=2,pp=2,vpp=1", pp, hw);
  // Each replica's two messages a microbatch take 0.5 ms of CPU, not the ping-pong's 1.2.
  double messages = double(2 * measured.dp * measured.microbatches);
  EXPECT_NEAR(pingPong.busySeconds - measured.busySeconds, messages * (1.2e-3 - 5e-4), 1e-9);
  EXPECT_GT(measured.commSeconds, pingPong.commSeconds); // a tick's 2 ms beyond its compute
  Estimate stillFour = forcedEstimate(model, "pp=4,vpp=1", pp, hw);
  EXPECT_DOUBLE_EQ(stillFour.stepSeconds, fourStages.stepSeconds);
}

// On CPUs the job oversubscribes (4 ranks of 1 thread on 2 CPUs), a pipeline's message may
// find its receiver descheduled: the all-pairs curve's excess over the two-rank price, as
// often as the CPUs are taken. Without that curve, or with CPUs to spare, nothing.
TEST(CalibratedCostModel, APipelinesMessagesWaitForADescheduledReceiverAsOftenAsCpusAreTaken) {
  ModelInfo model = test::spikingMlp(64, 32, 10);
  auto calibration = uniformCalibration(1e-9);
  calibration->logicalCpus = 2;
  Hardware hw;
  hw.calibration = calibration;
  snn::schema::RequestedMode pp = snn::schema::RequestedMode::PP;
  Estimate twoRank = forcedEstimate(model, "pp=4,vpp=1", pp, hw);
  EXPECT_DOUBLE_EQ(hw.descheduledMessageSeconds(4096, 4), 0.0);
  calibration->collectives[{CollectiveKind::SendRecv, 4}].points = {{1, 3e-3}, {1e9, 3e-3}};
  double lag = hw.descheduledMessageSeconds(4096, 4);
  EXPECT_NEAR(lag, 3e-3 - hw.sendSeconds(4096, 4, false), 1e-12);
  EXPECT_GT(lag, 0.0);
  Estimate waited = forcedEstimate(model, "pp=4,vpp=1", pp, hw);
  EXPECT_GT(waited.stageCollectiveLagSeconds, twoRank.stageCollectiveLagSeconds);
  EXPECT_GT(waited.peerWaitSeconds, 0.0);
  EXPECT_LE(waited.peerWaitSeconds, waited.stageCollectiveLagSeconds * (1 + 1e-12));
  EXPECT_NEAR(waited.commSeconds - twoRank.commSeconds,
              waited.peerWaitSeconds - twoRank.peerWaitSeconds, 1e-9);
  calibration->logicalCpus = 4; // a CPU per rank: no receiver is descheduled
  EXPECT_DOUBLE_EQ(hw.descheduledMessageSeconds(4096, 4), 0.0);
}
