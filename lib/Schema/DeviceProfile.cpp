//===- DeviceProfile.cpp - The device profile's reader and writer ---------===//

#include "snn/Schema/DeviceProfile.h"
#include "JsonFieldReader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <sys/stat.h>
#include <thread>

namespace snn::schema {

using nlohmann::json;

namespace {

using FieldReader = JsonFieldReader<DeviceProfileError>;

namespace key {
constexpr const char *kFormat = "format", *kVersion = "version", *kCreatedBy = "created_by",
                     *kMachine = "machine", *kCpu = "cpu", *kLogicalCpus = "logical_cpus",
                     *kThreads = "threads", *kBackend = "backend", *kCompute = "compute",
                     *kCommunication = "communication", *kKind = "kind", *kRanks = "ranks",
                     *kPoints = "points", *kSize = "size", *kSeconds = "seconds",
                     *kModelSteps = "model_steps", *kModel = "model",
                     *kParameters = "parameters", *kInput = "input",
                     *kNodeByNodePoints = "node_by_node_points", *kColdPoints = "cold_points",
                     *kReplicated = "replicated", *kCpuPoints = "cpu_points",
                     *kSteal = "steal", *kWaitsBetweenComputes = "waits_between_computes",
                     *kPipelineMessages = "pipeline_messages", *kBytes = "bytes";
} // namespace key

bool known(const std::string &kind, const char *const *begin, const char *const *end) {
  return std::any_of(begin, end, [&](const char *k) { return kind == k; });
}

std::vector<ProfilePoint> parsePoints(const FieldReader &curve, const std::string &path,
                                      const char *field = key::kPoints) {
  const json &array = curve.getArray(field);
  if (array.empty())
    curve.fail("'" + path + "." + field + "' must hold at least one measurement");
  std::vector<ProfilePoint> points;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string at = path + "." + field + "[" + std::to_string(i) + "]";
    FieldReader point(array[i], at, curve.fileName());
    ProfilePoint p{point.getDouble(key::kSize), point.getDouble(key::kSeconds)};
    if (!(p.size > 0) || !std::isfinite(p.size) || !(p.seconds > 0) || !std::isfinite(p.seconds))
      point.fail("'" + at + "': size and seconds must be positive and finite");
    if (!points.empty() && !(p.size > points.back().size))
      point.fail("'" + at + ".size' must be larger than the point before it");
    points.push_back(p);
  }
  return points;
}

/// CPU seconds at exactly the sizes of `points`; zero is a measurement (a call
/// whose CPU the clock did not see), not a missing one.
std::vector<ProfilePoint> parseCpuPoints(const FieldReader &curve, const std::string &path,
                                         const std::vector<ProfilePoint> &points) {
  const json &array = curve.getArray(key::kCpuPoints);
  if (array.size() != points.size())
    curve.fail("'" + path + "." + key::kCpuPoints + "' must hold one measurement per point (" +
               std::to_string(points.size()) + "), got " + std::to_string(array.size()));
  std::vector<ProfilePoint> cpu;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string at = path + "." + key::kCpuPoints + "[" + std::to_string(i) + "]";
    FieldReader point(array[i], at, curve.fileName());
    ProfilePoint p{point.getDouble(key::kSize), point.getDouble(key::kSeconds)};
    if (p.size != points[i].size)
      point.fail("'" + at + ".size' must be the size of points[" + std::to_string(i) + "]");
    if (!(p.seconds >= 0) || !std::isfinite(p.seconds))
      point.fail("'" + at + ".seconds' must be zero or positive and finite");
    cpu.push_back(p);
  }
  return cpu;
}

void parseCompute(const FieldReader &top, DeviceProfile &profile) {
  const json &array = top.getArray(key::kCompute);
  std::set<std::string> seen;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string at = "compute[" + std::to_string(i) + "]";
    FieldReader curve(array[i], at, top.fileName());
    ComputeCurve c{curve.getString(key::kKind), {}};
    if (!known(c.kind, std::begin(kComputeKinds), std::end(kComputeKinds)))
      curve.fail("'" + at + ".kind': unknown compute kind '" + c.kind + "'");
    if (!seen.insert(c.kind).second)
      curve.fail("'" + at + ".kind': '" + c.kind + "' is measured twice");
    c.points = parsePoints(curve, at);
    profile.compute.push_back(std::move(c));
  }
  for (const char *kind : kComputeKinds)
    if (!seen.count(kind))
      top.fail("'compute' has no '" + std::string(kind) +
               "' curve (rerun snn-run calibrate to measure it)");
}

void parseCommunication(const FieldReader &top, DeviceProfile &profile) {
  const json &array = top.getArray(key::kCommunication);
  std::set<std::pair<std::string, int64_t>> seen;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string at = "communication[" + std::to_string(i) + "]";
    FieldReader curve(array[i], at, top.fileName());
    CommunicationCurve c{curve.getString(key::kKind), curve.getInt(key::kRanks), {}};
    if (!known(c.kind, std::begin(kCommunicationKinds), std::end(kCommunicationKinds)))
      curve.fail("'" + at + ".kind': unknown collective '" + c.kind + "'");
    if (c.ranks < 2)
      curve.fail("'" + at + ".ranks' must be at least 2");
    if (!seen.insert({c.kind, c.ranks}).second)
      curve.fail("'" + at + "': " + c.kind + " over " + std::to_string(c.ranks) +
                 " ranks is measured twice");
    c.points = parsePoints(curve, at);
    if (curve.find(key::kCpuPoints))
      c.cpuPoints = parseCpuPoints(curve, at, c.points);
    profile.communication.push_back(std::move(c));
  }
}

std::vector<ReplicatedStepCurve> parseReplicated(const FieldReader &step,
                                                 const std::string &path) {
  std::vector<ReplicatedStepCurve> curves;
  if (!step.find(key::kReplicated))
    return curves;
  const json &array = step.getArray(key::kReplicated);
  for (size_t i = 0; i < array.size(); ++i) {
    std::string at = path + "." + key::kReplicated + "[" + std::to_string(i) + "]";
    FieldReader curve(array[i], at, step.fileName());
    ReplicatedStepCurve c{curve.getInt(key::kRanks), {}};
    if (c.ranks < 2)
      curve.fail("'" + at + ".ranks' must be at least 2");
    if (!curves.empty() && !(c.ranks > curves.back().ranks))
      curve.fail("'" + at + ".ranks' must be larger than the curve's before it");
    c.points = parsePoints(curve, at);
    curves.push_back(std::move(c));
  }
  return curves;
}

void parseModelSteps(const FieldReader &top, DeviceProfile &profile) {
  if (!top.find(key::kModelSteps))
    return;
  const json &array = top.getArray(key::kModelSteps);
  std::set<std::pair<int64_t, std::vector<int64_t>>> seen;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string at = "model_steps[" + std::to_string(i) + "]";
    FieldReader curve(array[i], at, top.fileName());
    ModelStepCurve c{curve.getString(key::kModel, ""), curve.getInt(key::kParameters),
                     curve.getInts(key::kInput, -1), {}};
    if (c.parameters < 1)
      curve.fail("'" + at + ".parameters' must be at least 1");
    if (std::count(c.input.begin(), c.input.end(), -1) != 1 ||
        std::count(c.input.begin(), c.input.end(), 0) != 0)
      curve.fail("'" + at + ".input' must be a shape of positive sizes with one -1 (the batch)");
    if (!seen.insert({c.parameters, c.input}).second)
      curve.fail("'" + at + "': the same model (parameters and input) is measured twice");
    c.points = parsePoints(curve, at);
    if (curve.find(key::kNodeByNodePoints))
      c.nodeByNodePoints = parsePoints(curve, at, key::kNodeByNodePoints);
    if (curve.find(key::kColdPoints))
      c.coldPoints = parsePoints(curve, at, key::kColdPoints);
    c.replicated = parseReplicated(curve, at);
    profile.modelSteps.push_back(std::move(c));
  }
}

/// A list of per-job-size curves under `name` (waits_between_computes, pipeline_messages).
std::vector<WaitBetweenComputesCurve> parseWaitCurves(const FieldReader &top, const char *name) {
  std::vector<WaitBetweenComputesCurve> curves;
  if (!top.find(name))
    return curves;
  const json &array = top.getArray(name);
  std::set<int64_t> seen;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string at = std::string(name) + "[" + std::to_string(i) + "]";
    FieldReader curve(array[i], at, top.fileName());
    WaitBetweenComputesCurve c{curve.getInt(key::kRanks), curve.getInt(key::kBytes), {}};
    if (c.ranks < 2 || c.ranks % 2 != 0)
      curve.fail("'" + at + ".ranks' must be an even job of at least 2 ranks, not " +
                 std::to_string(c.ranks));
    if (c.bytes < 1)
      curve.fail("'" + at + ".bytes' must be at least 1");
    if (!seen.insert(c.ranks).second)
      curve.fail("'" + at + "': " + std::to_string(c.ranks) + " ranks are measured twice");
    c.points = parsePoints(curve, at);
    if (curve.find(key::kCpuPoints))
      c.cpuPoints = parseCpuPoints(curve, at, c.points);
    curves.push_back(std::move(c));
  }
  return curves;
}

MachineIdentity parseMachine(const FieldReader &top) {
  FieldReader machine(top.get(key::kMachine), key::kMachine, top.fileName());
  MachineIdentity m{machine.getString(key::kCpu), machine.getInt(key::kLogicalCpus),
                    machine.getInt(key::kThreads), machine.getString(key::kBackend)};
  if (m.logicalCpus < 1 || m.threads < 1)
    machine.fail("'machine.logical_cpus' and 'machine.threads' must be at least 1");
  if (machine.find(key::kSteal)) {
    m.stealShare = machine.getDouble(key::kSteal);
    if (!(m.stealShare >= 0 && m.stealShare <= 1))
      machine.fail("'machine.steal' must be a share between 0 and 1");
  }
  return m;
}

json pointsJson(const std::vector<ProfilePoint> &points) {
  json array = json::array();
  for (const ProfilePoint &p : points)
    array.push_back({{key::kSize, p.size}, {key::kSeconds, p.seconds}});
  return array;
}

} // namespace

const ComputeCurve *DeviceProfile::computeCurve(const std::string &kind) const {
  for (const ComputeCurve &curve : compute)
    if (curve.kind == kind)
      return &curve;
  return nullptr;
}

DeviceProfile parseDeviceProfile(const std::string &text, const std::string &name) {
  json document;
  try {
    document = json::parse(text, [&](int depth, json::parse_event_t, json &) {
      if (depth > 8) // a profile is four levels deep
        throw DeviceProfileError(name + ": nested deeper than a device profile");
      return true;
    });
  } catch (const json::exception &e) {
    throw DeviceProfileError(name + ": invalid JSON: " + e.what());
  }
  FieldReader top(document, "", name);
  DeviceProfile profile;
  profile.format = top.getString(key::kFormat);
  if (profile.format != kDeviceProfileFormat)
    top.fail("not a device profile (format '" + profile.format + "', expected '" +
             kDeviceProfileFormat + "')");
  int64_t version = top.getInt(key::kVersion);
  if (version != kDeviceProfileVersion)
    top.fail("device profile version " + std::to_string(version) + ", this tool reads " +
             std::to_string(kDeviceProfileVersion) + " (rerun snn-run calibrate)");
  profile.version = int(version);
  profile.createdBy = top.getString(key::kCreatedBy, "");
  profile.machine = parseMachine(top);
  parseCompute(top, profile);
  parseCommunication(top, profile);
  parseModelSteps(top, profile);
  profile.waitsBetweenComputes = parseWaitCurves(top, key::kWaitsBetweenComputes);
  profile.pipelineMessages = parseWaitCurves(top, key::kPipelineMessages);
  return profile;
}

DeviceProfile readDeviceProfile(const std::string &path) {
  if (path == kBuiltinDeviceProfile)
    return parseDeviceProfile(builtinDeviceProfileText(), "the built-in device profile");
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    throw DeviceProfileError(path + ": no such device profile (write one with `snn-run "
                                    "calibrate --out " + path + "`)");
  if (!S_ISREG(info.st_mode))
    throw DeviceProfileError(path + ": not a regular file");
  if (size_t(info.st_size) > kMaxDeviceProfileBytes)
    throw DeviceProfileError(path + ": larger than a device profile");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DeviceProfileError(path + ": cannot open");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    throw DeviceProfileError(path + ": cannot read");
  return parseDeviceProfile(text, path);
}

std::optional<DeviceProfile> tryReadDeviceProfile(const std::string &path, std::string &error) {
  try {
    return readDeviceProfile(path);
  } catch (const DeviceProfileError &e) {
    error = e.what();
  }
  return std::nullopt;
}

std::string formatDeviceProfile(const DeviceProfile &profile) {
  json compute = json::array(), communication = json::array();
  for (const ComputeCurve &c : profile.compute)
    compute.push_back({{key::kKind, c.kind}, {key::kPoints, pointsJson(c.points)}});
  for (const CommunicationCurve &c : profile.communication) {
    json curve = {
        {key::kKind, c.kind}, {key::kRanks, c.ranks}, {key::kPoints, pointsJson(c.points)}};
    if (!c.cpuPoints.empty())
      curve[key::kCpuPoints] = pointsJson(c.cpuPoints);
    communication.push_back(std::move(curve));
  }
  const MachineIdentity &m = profile.machine;
  json machine = {{key::kCpu, m.cpu}, {key::kLogicalCpus, m.logicalCpus},
                  {key::kThreads, m.threads}, {key::kBackend, m.backend}};
  if (m.stealShare >= 0)
    machine[key::kSteal] = m.stealShare;
  json document = {
      {key::kFormat, profile.format},
      {key::kVersion, profile.version},
      {key::kCreatedBy, profile.createdBy},
      {key::kMachine, machine},
      {key::kCompute, compute},
      {key::kCommunication, communication}};
  if (!profile.modelSteps.empty()) {
    json steps = json::array();
    for (const ModelStepCurve &c : profile.modelSteps) {
      json step = {{key::kModel, c.model},
                   {key::kParameters, c.parameters},
                   {key::kInput, c.input},
                   {key::kPoints, pointsJson(c.points)}};
      if (!c.nodeByNodePoints.empty())
        step[key::kNodeByNodePoints] = pointsJson(c.nodeByNodePoints);
      if (!c.coldPoints.empty())
        step[key::kColdPoints] = pointsJson(c.coldPoints);
      if (!c.replicated.empty()) {
        json replicated = json::array();
        for (const ReplicatedStepCurve &r : c.replicated)
          replicated.push_back({{key::kRanks, r.ranks}, {key::kPoints, pointsJson(r.points)}});
        step[key::kReplicated] = replicated;
      }
      steps.push_back(step);
    }
    document[key::kModelSteps] = steps;
  }
  for (auto [name, curves] : {std::pair{key::kWaitsBetweenComputes, &profile.waitsBetweenComputes},
                               std::pair{key::kPipelineMessages, &profile.pipelineMessages}}) {
    if (curves->empty())
      continue;
    json waits = json::array();
    for (const WaitBetweenComputesCurve &c : *curves) {
      json curve = {{key::kRanks, c.ranks}, {key::kBytes, c.bytes},
                    {key::kPoints, pointsJson(c.points)}};
      if (!c.cpuPoints.empty())
        curve[key::kCpuPoints] = pointsJson(c.cpuPoints);
      waits.push_back(curve);
    }
    document[name] = waits;
  }
  return document.dump(2) + "\n";
}

MachineIdentity thisMachine() {
  MachineIdentity m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      m.cpu = colon == std::string::npos ? "" : line.substr(colon + 1);
      m.cpu.erase(0, m.cpu.find_first_not_of(" \t"));
      break;
    }
  if (m.cpu.empty())
    m.cpu = "unknown CPU";
  m.logicalCpus = std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
  return m;
}

std::string machineDifference(const MachineIdentity &measured, const MachineIdentity &here) {
  if (measured.cpu == here.cpu && measured.logicalCpus == here.logicalCpus)
    return "";
  auto describe = [](const MachineIdentity &m) {
    return "'" + m.cpu + "' (" + std::to_string(m.logicalCpus) + " CPUs)";
  };
  return "measured on " + describe(measured) + ", this machine is " + describe(here);
}

} // namespace snn::schema
