//===- DeviceProfileTest.cpp - The device profile's reader and writer -----===//
//
// A profile written by formatDeviceProfile reads back equal; a missing file,
// malformed JSON and every invalid field are refused naming the file and the
// field; a profile of another machine is told apart from this one.
//
//===----------------------------------------------------------------------===//

#include "snn/Schema/DeviceProfile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

using namespace snn::schema;

namespace {

DeviceProfile sampleProfile() {
  DeviceProfile profile;
  profile.createdBy = "test";
  profile.machine = {"Example CPU @ 2.0GHz", 2, 1, "gloo"};
  double base = 1e-6;
  for (const char *kind : kComputeKinds) {
    profile.compute.push_back({kind, {{1e3, base}, {1e6, base * 200}}});
    base *= 2;
  }
  profile.communication.push_back({"all_reduce", 2, {{4096, 5e-5}, {1 << 20, 2e-3}}});
  profile.communication.push_back({"send_recv", 2, {{4096, 3e-5}}});
  return profile;
}

std::string errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const DeviceProfileError &e) {
    return e.what();
  }
  return "(no error)";
}

/// The message of parsing the sample profile after `edit` changed its text.
std::string editedError(const std::string &from, const std::string &to) {
  std::string text = formatDeviceProfile(sampleProfile());
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  return errorOf([&] { parseDeviceProfile(text, "p.json"); });
}

} // namespace

TEST(DeviceProfile, RoundTrips) {
  DeviceProfile profile = sampleProfile();
  DeviceProfile back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  EXPECT_EQ(back.machine.cpu, profile.machine.cpu);
  EXPECT_EQ(back.machine.threads, 1);
  ASSERT_EQ(back.compute.size(), std::size(kComputeKinds));
  ASSERT_NE(back.computeCurve("conv2d"), nullptr);
  EXPECT_EQ(back.computeCurve("conv2d")->points[1].seconds,
            profile.computeCurve("conv2d")->points[1].seconds);
  ASSERT_EQ(back.communication.size(), 2u);
  EXPECT_EQ(back.communication[0].points[1].size, double(1 << 20));
  EXPECT_EQ(back.computeCurve("softmax"), nullptr);
}

TEST(DeviceProfile, MissingAndMalformedFilesAreRefused) {
  EXPECT_NE(errorOf([] { readDeviceProfile("/nonexistent/profile.json"); })
                .find("/nonexistent/profile.json: no such device profile (write one with "
                      "`snn-run calibrate --out"),
            std::string::npos);
  EXPECT_NE(errorOf([] { readDeviceProfile("/dev/null"); }).find("not a regular file"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseDeviceProfile("{\"format\": ", "p.json"); })
                .find("p.json: invalid JSON"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseDeviceProfile(std::string(100, '[') + std::string(100, ']'),
                                            "p.json"); })
                .find("nested deeper"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseDeviceProfile("{\"format\": \"spikemesh-artifact\"}", "m.json"); })
                .find("m.json: not a device profile (format 'spikemesh-artifact'"),
            std::string::npos);
}

TEST(DeviceProfile, InvalidFieldsAreNamed) {
  EXPECT_NE(editedError("\"version\": 1", "\"version\": 7").find("version 7, this tool reads 1"),
            std::string::npos);
  EXPECT_NE(editedError("\"kind\": \"gemm\"", "\"kind\": \"fft\"")
                .find("'compute[0].kind': unknown compute kind 'fft'"),
            std::string::npos);
  EXPECT_NE(editedError("\"kind\": \"gemm\"", "\"kind\": \"conv2d\"")
                .find("'compute[1].kind': 'conv2d' is measured twice"),
            std::string::npos);
  EXPECT_NE(editedError("\"seconds\": 1e-06", "\"seconds\": -1.0")
                .find("'compute[0].points[0]': size and seconds must be positive and finite"),
            std::string::npos);
  EXPECT_NE(editedError("\"size\": 1000000.0", "\"size\": 10.0")
                .find("'compute[0].points[1].size' must be larger than the point before it"),
            std::string::npos);
  EXPECT_NE(editedError("\"kind\": \"send_recv\"", "\"kind\": \"all_reduce\"")
                .find("all_reduce over 2 ranks is measured twice"),
            std::string::npos);
  EXPECT_NE(editedError("\"ranks\": 2", "\"ranks\": 1").find("'communication[0].ranks' must be"),
            std::string::npos);
  EXPECT_NE(editedError("\"threads\": 1", "\"threads\": 0").find("'machine.threads' must be"),
            std::string::npos);
  DeviceProfile partial = sampleProfile();
  partial.compute.pop_back();
  EXPECT_NE(errorOf([&] { parseDeviceProfile(formatDeviceProfile(partial), "p.json"); })
                .find("'compute' has no 'elementwise' curve"),
            std::string::npos);
}

TEST(DeviceProfile, ModelStepsRoundTripAndAreChecked) {
  DeviceProfile profile = sampleProfile();
  EXPECT_EQ(formatDeviceProfile(profile).find("model_steps"), std::string::npos);
  profile.modelSteps.push_back({"art", 1234, {4, -1, 2, 8, 8}, {{1, 1e-3}, {8, 4e-3}}});
  DeviceProfile back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  ASSERT_EQ(back.modelSteps.size(), 1u);
  EXPECT_EQ(back.modelSteps[0].model, "art");
  EXPECT_EQ(back.modelSteps[0].parameters, 1234);
  EXPECT_EQ(back.modelSteps[0].input, (std::vector<int64_t>{4, -1, 2, 8, 8}));
  ASSERT_EQ(back.modelSteps[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(back.modelSteps[0].points[1].seconds, 4e-3);
  EXPECT_TRUE(back.modelSteps[0].nodeByNodePoints.empty()); // optional: not written
  EXPECT_EQ(formatDeviceProfile(profile).find("node_by_node_points"), std::string::npos);
  profile.modelSteps[0].nodeByNodePoints = {{1, 2e-3}, {8, 5e-3}};
  back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  ASSERT_EQ(back.modelSteps[0].nodeByNodePoints.size(), 2u);
  EXPECT_DOUBLE_EQ(back.modelSteps[0].nodeByNodePoints[1].seconds, 5e-3);
  EXPECT_TRUE(back.modelSteps[0].coldPoints.empty()); // optional: not written
  EXPECT_EQ(formatDeviceProfile(profile).find("cold_points"), std::string::npos);
  profile.modelSteps[0].coldPoints = {{1, 3e-3}, {8, 6e-3}};
  back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  ASSERT_EQ(back.modelSteps[0].coldPoints.size(), 2u);
  EXPECT_DOUBLE_EQ(back.modelSteps[0].coldPoints[0].seconds, 3e-3);
  EXPECT_DOUBLE_EQ(back.modelSteps[0].coldPoints[1].seconds, 6e-3);

  auto refused = [&](const std::function<void(ModelStepCurve &)> &edit) {
    DeviceProfile bad = profile;
    edit(bad.modelSteps[0]);
    return errorOf([&] { parseDeviceProfile(formatDeviceProfile(bad), "p.json"); });
  };
  EXPECT_NE(refused([](ModelStepCurve &c) { c.parameters = 0; })
                .find("p.json: 'model_steps[0].parameters' must be at least 1"),
            std::string::npos);
  EXPECT_NE(refused([](ModelStepCurve &c) { c.input = {4, 8, 8}; })
                .find("'model_steps[0].input' must be a shape of positive sizes with one -1"),
            std::string::npos);
  EXPECT_NE(refused([](ModelStepCurve &c) { c.input = {-1, -1}; }).find("with one -1"),
            std::string::npos);
  EXPECT_NE(refused([](ModelStepCurve &c) { c.points = {{8, 1e-3}, {4, 2e-3}}; })
                .find("'model_steps[0].points[1].size' must be larger"),
            std::string::npos);
  EXPECT_NE(refused([](ModelStepCurve &c) { c.nodeByNodePoints = {{4, 1e-3}, {4, 2e-3}}; })
                .find("'model_steps[0].node_by_node_points[1].size' must be larger"),
            std::string::npos);
  EXPECT_NE(refused([](ModelStepCurve &c) { c.nodeByNodePoints = {{4, -1.0}}; })
                .find("'model_steps[0].node_by_node_points[0]': size and seconds must be "
                      "positive"),
            std::string::npos);
  EXPECT_NE(refused([](ModelStepCurve &c) { c.coldPoints = {{8, 1e-3}, {2, 2e-3}}; })
                .find("'model_steps[0].cold_points[1].size' must be larger"),
            std::string::npos);
  DeviceProfile twice = profile;
  twice.modelSteps.push_back(profile.modelSteps[0]);
  EXPECT_NE(errorOf([&] { parseDeviceProfile(formatDeviceProfile(twice), "p.json"); })
                .find("'model_steps[1]': the same model (parameters and input) is measured "
                      "twice"),
            std::string::npos);
}

TEST(DeviceProfile, ReplicatedStepsRoundTripAndAreChecked) {
  DeviceProfile profile = sampleProfile();
  profile.modelSteps.push_back({"art", 1234, {4, -1, 2, 8, 8}, {{1, 1e-3}, {8, 4e-3}}});
  EXPECT_EQ(formatDeviceProfile(profile).find("replicated"), std::string::npos); // optional
  profile.modelSteps[0].replicated = {{2, {{1, 3e-3}, {8, 9e-3}}}, {4, {{8, 2e-2}}}};
  DeviceProfile back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  const std::vector<ReplicatedStepCurve> &replicated = back.modelSteps[0].replicated;
  ASSERT_EQ(replicated.size(), 2u);
  EXPECT_EQ(replicated[0].ranks, 2);
  ASSERT_EQ(replicated[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(replicated[0].points[1].seconds, 9e-3);
  EXPECT_EQ(replicated[1].ranks, 4);
  EXPECT_DOUBLE_EQ(replicated[1].points[0].size, 8.0);

  auto refused = [&](const std::function<void(std::vector<ReplicatedStepCurve> &)> &edit) {
    DeviceProfile bad = profile;
    edit(bad.modelSteps[0].replicated);
    return errorOf([&] { parseDeviceProfile(formatDeviceProfile(bad), "p.json"); });
  };
  EXPECT_NE(refused([](auto &r) { r[0].ranks = 1; })
                .find("p.json: 'model_steps[0].replicated[0].ranks' must be at least 2"),
            std::string::npos);
  EXPECT_NE(refused([](auto &r) { r[1].ranks = 2; })
                .find("'model_steps[0].replicated[1].ranks' must be larger than the curve's "
                      "before it"),
            std::string::npos);
  EXPECT_NE(refused([](auto &r) { r[0].points = {{8, 1e-3}, {1, 2e-3}}; })
                .find("'model_steps[0].replicated[0].points[1].size' must be larger"),
            std::string::npos);
  EXPECT_NE(refused([](auto &r) { r[1].points.clear(); })
                .find("'model_steps[0].replicated[1].points' must hold at least one"),
            std::string::npos);
}

TEST(DeviceProfile, MessagesCpuRoundTripsAndIsChecked) {
  DeviceProfile profile = sampleProfile();
  EXPECT_EQ(formatDeviceProfile(profile).find("cpu_points"), std::string::npos); // optional
  profile.communication[1].points = {{4096, 3e-5}, {1 << 20, 4e-4}};
  profile.communication[1].cpuPoints = {{4096, 0.0}, {1 << 20, 7e-4}};
  DeviceProfile back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  ASSERT_EQ(back.communication[1].cpuPoints.size(), 2u);
  EXPECT_DOUBLE_EQ(back.communication[1].cpuPoints[0].seconds, 0.0);
  EXPECT_DOUBLE_EQ(back.communication[1].cpuPoints[1].seconds, 7e-4);
  EXPECT_TRUE(back.communication[0].cpuPoints.empty());

  auto refused = [&](const std::function<void(std::vector<ProfilePoint> &)> &edit) {
    DeviceProfile bad = profile;
    edit(bad.communication[1].cpuPoints);
    return errorOf([&] { parseDeviceProfile(formatDeviceProfile(bad), "p.json"); });
  };
  EXPECT_NE(refused([](auto &cpu) { cpu.pop_back(); })
                .find("p.json: 'communication[1].cpu_points' must hold one measurement per "
                      "point (2), got 1"),
            std::string::npos);
  EXPECT_NE(refused([](auto &cpu) { cpu[1].size = 8192; })
                .find("'communication[1].cpu_points[1].size' must be the size of points[1]"),
            std::string::npos);
  EXPECT_NE(refused([](auto &cpu) { cpu[0].seconds = -1e-6; })
                .find("'communication[1].cpu_points[0].seconds' must be zero or positive"),
            std::string::npos);
}

TEST(DeviceProfile, StealWhileMeasuringRoundTripsAndIsChecked) {
  DeviceProfile profile = sampleProfile();
  EXPECT_EQ(formatDeviceProfile(profile).find("steal"), std::string::npos); // unknown: absent
  EXPECT_LT(parseDeviceProfile(formatDeviceProfile(profile), "p.json").machine.stealShare, 0);
  profile.machine.stealShare = 0.125;
  DeviceProfile back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  EXPECT_DOUBLE_EQ(back.machine.stealShare, 0.125);
  for (double bad : {1.5, -0.25}) {
    profile.machine.stealShare = 0.5;
    std::string text = formatDeviceProfile(profile);
    text.replace(text.find("0.5"), 3, std::to_string(bad));
    EXPECT_NE(errorOf([&] { parseDeviceProfile(text, "p.json"); })
                  .find("p.json: 'machine.steal' must be a share between 0 and 1"),
              std::string::npos)
        << bad;
  }
}

TEST(DeviceProfile, WaitsBetweenComputesRoundTripAndAreChecked) {
  DeviceProfile profile = sampleProfile();
  EXPECT_EQ(formatDeviceProfile(profile).find("waits_between_computes"),
            std::string::npos); // optional
  profile.waitsBetweenComputes.push_back({4, 16384, {{1.2e-4, 1.1e-3}, {2e-3, 4.5e-3}}});
  DeviceProfile back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  ASSERT_EQ(back.waitsBetweenComputes.size(), 1u);
  EXPECT_EQ(back.waitsBetweenComputes[0].ranks, 4);
  EXPECT_EQ(back.waitsBetweenComputes[0].bytes, 16384);
  EXPECT_DOUBLE_EQ(back.waitsBetweenComputes[0].points[1].size, 2e-3);
  EXPECT_DOUBLE_EQ(back.waitsBetweenComputes[0].points[1].seconds, 4.5e-3);

  auto refused = [&](const std::function<void(WaitBetweenComputesCurve &)> &edit) {
    DeviceProfile bad = profile;
    edit(bad.waitsBetweenComputes[0]);
    return errorOf([&] { parseDeviceProfile(formatDeviceProfile(bad), "p.json"); });
  };
  for (int64_t ranks : {0, 5})
    EXPECT_NE(refused([&](auto &c) { c.ranks = ranks; })
                  .find("p.json: 'waits_between_computes[0].ranks' must be an even job of at "
                        "least 2 ranks, not " + std::to_string(ranks)),
              std::string::npos)
        << ranks;
  EXPECT_NE(refused([](auto &c) { c.bytes = 0; })
                .find("'waits_between_computes[0].bytes' must be at least 1"),
            std::string::npos);
  EXPECT_NE(refused([](auto &c) { c.points[1].size = 1e-4; })
                .find("'waits_between_computes[0].points[1].size' must be larger than the "
                      "point before it"),
            std::string::npos);
  profile.waitsBetweenComputes.push_back(profile.waitsBetweenComputes[0]);
  EXPECT_NE(errorOf([&] { parseDeviceProfile(formatDeviceProfile(profile), "p.json"); })
                .find("'waits_between_computes[1]': 4 ranks are measured twice"),
            std::string::npos);
}

TEST(DeviceProfile, PipelineMessagesRoundTripAndAreChecked) {
  DeviceProfile profile = sampleProfile();
  EXPECT_EQ(formatDeviceProfile(profile).find("pipeline_messages"), std::string::npos);
  profile.pipelineMessages.push_back({2, 16384, {{1.3e-4, 9.8e-4}, {8e-3, 1.1e-3}}});
  DeviceProfile back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  ASSERT_EQ(back.pipelineMessages.size(), 1u);
  EXPECT_TRUE(back.waitsBetweenComputes.empty()); // its own list, not the waits'
  EXPECT_EQ(back.pipelineMessages[0].ranks, 2);
  EXPECT_EQ(back.pipelineMessages[0].bytes, 16384);
  EXPECT_DOUBLE_EQ(back.pipelineMessages[0].points[1].size, 8e-3);
  EXPECT_DOUBLE_EQ(back.pipelineMessages[0].points[1].seconds, 1.1e-3);
  EXPECT_TRUE(back.pipelineMessages[0].cpuPoints.empty()); // optional
  // The CPU a message took, at the points' sizes.
  profile.pipelineMessages[0].cpuPoints = {{1.3e-4, 5.5e-4}, {8e-3, 3.4e-4}};
  back = parseDeviceProfile(formatDeviceProfile(profile), "p.json");
  ASSERT_EQ(back.pipelineMessages[0].cpuPoints.size(), 2u);
  EXPECT_DOUBLE_EQ(back.pipelineMessages[0].cpuPoints[1].seconds, 3.4e-4);
  DeviceProfile misplaced = profile;
  misplaced.pipelineMessages[0].cpuPoints[0].size = 2e-4;
  EXPECT_NE(errorOf([&] { parseDeviceProfile(formatDeviceProfile(misplaced), "p.json"); })
                .find("'pipeline_messages[0].cpu_points[0].size' must be the size of points[0]"),
            std::string::npos);
  DeviceProfile bad = profile;
  bad.pipelineMessages[0].ranks = 3;
  EXPECT_NE(errorOf([&] { parseDeviceProfile(formatDeviceProfile(bad), "p.json"); })
                .find("p.json: 'pipeline_messages[0].ranks' must be an even job of at least "
                      "2 ranks, not 3"),
            std::string::npos);
  profile.pipelineMessages.push_back(profile.pipelineMessages[0]);
  EXPECT_NE(errorOf([&] { parseDeviceProfile(formatDeviceProfile(profile), "p.json"); })
                .find("'pipeline_messages[1]': 2 ranks are measured twice"),
            std::string::npos);
}

TEST(DeviceProfile, AnotherMachineIsToldApart) {
  MachineIdentity here = thisMachine();
  EXPECT_FALSE(here.cpu.empty());
  EXPECT_GE(here.logicalCpus, 1);
  EXPECT_EQ(machineDifference(here, here), "");
  MachineIdentity other = here;
  other.logicalCpus += 14;
  std::string difference = machineDifference(other, here);
  EXPECT_NE(difference.find("measured on '" + here.cpu + "' (" +
                            std::to_string(other.logicalCpus) + " CPUs), this machine is"),
            std::string::npos)
      << difference;
}
