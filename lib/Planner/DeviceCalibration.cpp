//===- DeviceCalibration.cpp - A device profile as the cost model's machine ===//

#include "snn/Planner/DeviceCalibration.h"

#include <cmath>
#include <algorithm>
#include <optional>

namespace snn::planner {

namespace {

std::optional<WorkKind> workKindOf(const std::string &kind) {
  if (kind == "gemm")
    return WorkKind::Gemm;
  if (kind == "conv2d")
    return WorkKind::Conv2d;
  if (kind == "neuron")
    return WorkKind::Neuron;
  if (kind == "batch_norm")
    return WorkKind::BatchNorm;
  if (kind == "max_pool")
    return WorkKind::Pool;
  if (kind == "elementwise")
    return WorkKind::Elementwise;
  return std::nullopt;
}

std::optional<CollectiveKind> collectiveKindOf(const std::string &kind) {
  if (kind == "all_reduce")
    return CollectiveKind::AllReduce;
  if (kind == "all_gather")
    return CollectiveKind::AllGather;
  if (kind == "reduce_scatter")
    return CollectiveKind::ReduceScatter;
  if (kind == "send_recv")
    return CollectiveKind::SendRecv;
  return std::nullopt;
}

MeasuredCurve curveOf(const std::vector<schema::ProfilePoint> &points) {
  MeasuredCurve curve;
  for (const schema::ProfilePoint &p : points)
    curve.points.emplace_back(p.size, p.seconds);
  return curve;
}

/// curveOf, each time at least 1 ns: the curves interpolate in log space, and a CPU time
/// the clock saw as zero is the smallest one it could have missed.
MeasuredCurve positiveCurveOf(const std::vector<schema::ProfilePoint> &points) {
  MeasuredCurve curve = curveOf(points);
  for (auto &[size, seconds] : curve.points)
    seconds = std::max(seconds, 1e-9);
  return curve;
}

/// A communication curve as a non-decreasing function of the bytes: more
/// bytes never take less time, so a point under a smaller size's time is
/// measurement noise (the 4-rank send_recv of a loaded 2-CPU machine gave
/// 1.2 ms at 256 KiB and 0.47 ms at 1 MiB) and takes that time instead.
MeasuredCurve nonDecreasingCurveOf(const std::vector<schema::ProfilePoint> &points) {
  MeasuredCurve curve = positiveCurveOf(points);
  for (size_t i = 1; i < curve.points.size(); ++i)
    curve.points[i].second = std::max(curve.points[i].second, curve.points[i - 1].second);
  return curve;
}

/// A curve that grows with its size where timing noise only ever adds time: a point above
/// one measured at a larger size is noise and takes that smaller time (the lower envelope
/// from the right). For the waits between computes (a peer's lag, and so the wait, grows
/// with the compute before the call), raising the later points instead let one slow sample
/// at 0.125 ms of compute (1.57 ms, where 0.5-8 ms of compute measured 0.62-0.78 ms) price
/// every 2-rank pipeline message at 1.5 ms. For replicas' steps (more samples a rank, more
/// compute), one slow sample at 16 samples (16.6 ms, where 32 measured 10.0) had a small
/// conv model's dp=2 predicted at 2.1x its step.
MeasuredCurve lowerEnvelopeCurveOf(const std::vector<schema::ProfilePoint> &points) {
  MeasuredCurve curve = positiveCurveOf(points);
  for (size_t i = curve.points.size(); i-- > 1;)
    curve.points[i - 1].second = std::min(curve.points[i - 1].second, curve.points[i].second);
  return curve;
}

} // namespace

std::shared_ptr<const Calibration> calibrationFromProfile(const schema::DeviceProfile &profile,
                                                          const std::string &path) {
  auto calibration = std::make_shared<Calibration>();
  const schema::MachineIdentity &m = profile.machine;
  std::string machine = m.cpu + ", " + std::to_string(m.threads) + " thread" +
                        (m.threads == 1 ? "" : "s") + " per rank, " + m.backend;
  calibration->source = "device profile " + path + " (" + machine + ")";
  calibration->builtin = path == schema::kBuiltinDeviceProfile;
  if (calibration->builtin)
    calibration->source = "the built-in device profile of this project's reference machine "
                          "kind (" + machine + ", " + std::to_string(m.logicalCpus) + " CPUs)";
  if (m.stealShare > schema::kDisturbingStealShare)
    calibration->source += ", measured while the hypervisor gave " +
                           std::to_string(int(std::lround(m.stealShare * 100))) +
                           " % of its CPU time to other tenants (its times are a slow spell's)";
  calibration->logicalCpus = m.logicalCpus;
  calibration->threadsPerRank = m.threads;
  for (const schema::ComputeCurve &curve : profile.compute)
    if (std::optional<WorkKind> kind = workKindOf(curve.kind))
      calibration->compute[size_t(*kind)] = curveOf(curve.points);
  for (const schema::CommunicationCurve &curve : profile.communication) {
    std::optional<CollectiveKind> kind = collectiveKindOf(curve.kind);
    if (!kind)
      continue;
    calibration->collectives[{*kind, curve.ranks}] = nonDecreasingCurveOf(curve.points);
    if (*kind == CollectiveKind::AllReduce && curve.ranks >= 2)
      for (const schema::ProfilePoint &point : curve.points) {
        double step = allReduceStepSeconds(curve.ranks, point.size, point.seconds);
        auto [floor, fresh] = calibration->allReduceStepFloor.emplace(curve.ranks, step);
        if (!fresh)
          floor->second = std::min(floor->second, step);
      }
    if (!curve.cpuPoints.empty())
      calibration->cpu[{*kind, curve.ranks}] = nonDecreasingCurveOf(curve.cpuPoints);
  }
  for (const schema::WaitBetweenComputesCurve &curve : profile.waitsBetweenComputes)
    calibration->waitsBetweenComputes[curve.ranks] = {double(curve.bytes),
                                                      lowerEnvelopeCurveOf(curve.points)};
  for (const schema::WaitBetweenComputesCurve &curve : profile.pipelineMessages)
    calibration->pipelineMessages[curve.ranks] = {double(curve.bytes), curveOf(curve.points),
                                                  positiveCurveOf(curve.cpuPoints)};
  for (const schema::ModelStepCurve &curve : profile.modelSteps) {
    ModelStepTimes times{curve.model, curve.parameters, curve.input, curveOf(curve.points),
                         curve.nodeByNodePoints.empty() ? MeasuredCurve{}
                                                        : curveOf(curve.nodeByNodePoints),
                         {}};
    for (const schema::ReplicatedStepCurve &replicas : curve.replicated)
      times.replicated[replicas.ranks] = lowerEnvelopeCurveOf(replicas.points);
    if (!curve.coldPoints.empty())
      times.cold = curveOf(curve.coldPoints);
    calibration->modelSteps.push_back(std::move(times));
  }
  return calibration;
}

std::string timesSource(const Hardware &hardware, const ModelInfo &model) {
  if (!hardware.calibration)
    return "default constants";
  std::string source = hardware.calibration->source;
  if (hardware.calibration->modelStepOf(model))
    source += ", scaled to this model's measured training step";
  return source;
}

} // namespace snn::planner
