//===- CostModel.cpp - FLOPs, bytes and communication ---------------------===//
//
// The conventions are listed in CostModel.h; every number here is a count of one of them.
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/CostModel.h"
#include "snn/Schema/CollectiveAlgorithms.h"
#include "snn/Schema/TrainingCommunication.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace snn::planner {

namespace {

int64_t product(const std::vector<int64_t> &values) {
  int64_t result = 1;
  for (int64_t v : values)
    result *= v;
  return result;
}

/// Forward FLOPs per output element (see the table in CostModel.h).
double flopsPerOutputElement(const ModelInfo &model, int opIndex, int64_t batch) {
  const OpInfo &op = model.ops[opIndex];
  double bias = op.hasBias ? 1.0 : 0.0;
  switch (op.kind) {
  case OpKind::Linear:
    return op.weightShape.size() == 2 ? 2.0 * double(op.weightShape[1]) + bias : 0.0;
  case OpKind::Conv2d:
    return op.weightShape.size() == 4
               ? 2.0 * double(op.weightShape[1] * op.weightShape[2] * op.weightShape[3]) + bias
               : 0.0;
  case OpKind::BatchNorm: return 6.0;
  case OpKind::MaxPool2d:
  case OpKind::AvgPool2d: return double(product(op.window));
  case OpKind::AdaptiveAvgPool2d: {
    int64_t out = elementsAt(op.outputShape, op.batchDim, batch);
    int64_t in = elementsAt(inputShapeOf(model, opIndex), inputBatchDimOf(model, opIndex), batch);
    return out > 0 ? double(in) / double(out) : 0.0;
  }
  case OpKind::Flatten: return 0.0;
  case OpKind::Dropout:
  case OpKind::Add:
  case OpKind::Mul: return 1.0;
  case OpKind::MeanTime: return double(model.timeSteps);
  case OpKind::IFNode: return 4.0;
  case OpKind::LIFNode:
  case OpKind::PLIFNode: return 7.0;
  case OpKind::SpikingAttention: {
    // Per head, (v k^T) q is two [D, L] x [L, D] / [D, D] x [D, L] products: 4 D^2 L FLOPs
    // for D L outputs.
    int64_t channels = op.outputShape.size() == 4 ? op.outputShape[2] : 0;
    return op.groups > 0 ? 4.0 * double(channels / op.groups) : 0.0;
  }
  case OpKind::Other: return 1.0;
  }
  return 1.0;
}

/// Whether `user` is the only reader of op `producer`'s output (the model's output reads too).
bool readsAlone(const ModelInfo &model, int producer, int user) {
  if (std::find(model.outputs.begin(), model.outputs.end(), producer) != model.outputs.end())
    return false;
  std::vector<int> users = usersOf(model, producer);
  const std::vector<int> &inputs = model.ops[size_t(user)].inputs;
  return users.size() == 1 && users.front() == user && !inputs.empty() &&
         inputs.front() == producer;
}

bool fusesWithNeuron(const ModelInfo &model, int norm, int neuron) {
  const OpInfo &op = model.ops[size_t(norm)];
  return op.kind == OpKind::BatchNorm && op.outputShape.size() == 5 &&
         isNeuron(model.ops[size_t(neuron)].kind) && readsAlone(model, norm, neuron);
}

int64_t inputElements(const ModelInfo &model, int opIndex, int64_t batch) {
  const OpInfo &op = model.ops[size_t(opIndex)];
  if (op.inputs.empty())
    return elementsAt(model.inputShape, model.inputBatchDim, batch);
  int64_t total = 0;
  for (int producer : op.inputs)
    total += producer < 0 ? elementsAt(model.inputShape, model.inputBatchDim, batch)
                          : elementsAt(model.ops[size_t(producer)].outputShape,
                                       model.ops[size_t(producer)].batchDim, batch);
  return total;
}

/// What the runtime's autograd keeps of op `opIndex` (Runtime/Autograd): linear, conv2d and
/// batch_norm their input (a conv2d's spike input as one bit per value), a neuron its
/// pre-fire potentials H (PLIF its input too; nothing inside a block after a BatchNorm,
/// whose input the block keeps and recomputes H from), max_pool2d a one-byte argmax per
/// output, mul its inputs, dropout its mask; pools by averaging, flatten, add and the mean
/// over time only shapes. Elsewhere the output.
int64_t keptBytes(const ModelInfo &model, int opIndex, int64_t batch, bool fused) {
  const OpInfo &op = model.ops[size_t(opIndex)];
  int64_t out = elementsAt(op.outputShape, op.batchDim, batch);
  int64_t in = inputElements(model, opIndex, batch);
  switch (op.kind) {
  case OpKind::Linear:
  case OpKind::BatchNorm:
  case OpKind::Mul: return in * kBytesPerElement;
  case OpKind::Conv2d:
    return !op.inputs.empty() && op.inputs.front() >= 0 &&
                   producesSpikes(model, op.inputs.front())
               ? (in + 7) / 8
               : in * kBytesPerElement;
  case OpKind::IFNode:
  case OpKind::LIFNode:
  case OpKind::PLIFNode:
    if (fused && !op.inputs.empty() && op.inputs.front() >= 0 &&
        fusesWithNeuron(model, op.inputs.front(), opIndex))
      return 0;
    return (op.kind == OpKind::PLIFNode ? out + in : out) * kBytesPerElement;
  case OpKind::MaxPool2d: return out;
  case OpKind::AvgPool2d:
  case OpKind::AdaptiveAvgPool2d:
  case OpKind::Flatten:
  case OpKind::Add:
  case OpKind::MeanTime: return 0;
  default: return out * kBytesPerElement;
  }
}

} // namespace

bool producesSpikes(const ModelInfo &model, int opIndex) {
  const OpInfo &op = model.ops[size_t(opIndex)];
  if (isNeuron(op.kind))
    return true;
  if ((op.kind == OpKind::MaxPool2d || op.kind == OpKind::Flatten) && !op.inputs.empty() &&
      op.inputs.front() >= 0)
    return producesSpikes(model, op.inputs.front());
  return false;
}

int spikingBlockStart(const ModelInfo &model, int opIndex) {
  const OpInfo &op = model.ops[size_t(opIndex)];
  int producer = op.inputs.empty() ? -1 : op.inputs.front();
  if (op.kind == OpKind::BatchNorm) {
    std::vector<int> users = usersOf(model, opIndex);
    return users.size() == 1 && fusesWithNeuron(model, opIndex, users.front()) ? opIndex : -1;
  }
  if (isNeuron(op.kind)) {
    if (producer >= 0 && fusesWithNeuron(model, producer, opIndex))
      return producer;
    std::vector<int> users = usersOf(model, opIndex);
    return users.size() == 1 && model.ops[size_t(users.front())].kind == OpKind::MaxPool2d &&
                   readsAlone(model, opIndex, users.front())
               ? opIndex
               : -1;
  }
  if (op.kind == OpKind::MaxPool2d && producer >= 0 && isNeuron(model.ops[size_t(producer)].kind) &&
      readsAlone(model, producer, opIndex)) {
    int neuronStart = producer;
    const OpInfo &neuron = model.ops[size_t(producer)];
    if (!neuron.inputs.empty() && neuron.inputs.front() >= 0 &&
        fusesWithNeuron(model, neuron.inputs.front(), producer))
      neuronStart = neuron.inputs.front();
    return neuronStart;
  }
  return -1;
}

OpCost opCost(const ModelInfo &model, int opIndex, int64_t batch) {
  const OpInfo &op = model.ops[opIndex];
  OpCost cost;
  int64_t outputElements = elementsAt(op.outputShape, op.batchDim, batch);
  cost.forwardFlops = double(outputElements) * flopsPerOutputElement(model, opIndex, batch);
  cost.backwardFlops = 2.0 * cost.forwardFlops;
  cost.paramBytes = op.paramElements * kBytesPerElement;
  cost.bufferBytes = op.bufferElements * kBytesPerElement;
  cost.outputBytes = outputElements * kBytesPerElement;
  cost.inputBytes = inputElements(model, opIndex, batch) * kBytesPerElement;
  cost.activationBytes = keptBytes(model, opIndex, batch, /*fused=*/false);
  cost.fusedActivationBytes = keptBytes(model, opIndex, batch, /*fused=*/true);
  return cost;
}

ModelCost modelCost(const ModelInfo &model, int64_t batch) {
  ModelCost total;
  for (size_t i = 0; i < model.ops.size(); ++i) {
    OpCost cost = opCost(model, int(i), batch);
    total.forwardFlops += cost.forwardFlops;
    total.backwardFlops += cost.backwardFlops;
    total.paramBytes += cost.paramBytes;
    total.bufferBytes += cost.bufferBytes;
    total.activationBytes += cost.activationBytes;
    total.largestOpParamBytes = std::max(total.largestOpParamBytes, cost.paramBytes);
    if (cost.paramBytes > 0)
      ++total.paramOps;
  }
  return total;
}

int64_t allReduceBytes(int64_t bytes, int64_t ranks) {
  return schema::allReduceSentBytes(ranks, bytes);
}
int64_t allGatherBytes(int64_t bytes, int64_t ranks) {
  return ranks <= 1 ? 0 : (ranks - 1) * bytes / ranks;
}
int64_t reduceScatterBytes(int64_t bytes, int64_t ranks) { return allGatherBytes(bytes, ranks); }

Communication allReduce(int64_t bytes, int64_t ranks) {
  if (ranks <= 1)
    return {};
  return {allReduceBytes(bytes, ranks), 1, schema::allReduceSteps(ranks, bytes),
          {{CollectiveKind::AllReduce, ranks, bytes, 1}}};
}
Communication allGather(int64_t bytes, int64_t ranks) {
  if (ranks <= 1)
    return {};
  return {allGatherBytes(bytes, ranks), 1, ranks - 1,
          {{CollectiveKind::AllGather, ranks, bytes, 1}}};
}
Communication reduceScatter(int64_t bytes, int64_t ranks) {
  if (ranks <= 1)
    return {};
  return {reduceScatterBytes(bytes, ranks), 1, ranks - 1,
          {{CollectiveKind::ReduceScatter, ranks, bytes, 1}}};
}

Communication dataParallelCommunication(const ModelCost &cost, int64_t dp) {
  if (cost.paramBytes == 0 || dp <= 1)
    return {};
  // The runtime reduces the gradients in buckets of kGradientBucketBytes, one all-reduce
  // each: on a latency-bound link the count matters more than the bytes.
  int64_t bucket = int64_t(schema::kGradientBucketBytes);
  int64_t buckets = std::max<int64_t>(1, (cost.paramBytes + bucket - 1) / bucket);
  Communication total = allReduce(cost.paramBytes, dp);
  total.collectives = buckets;
  total.latencySteps *= buckets;
  total.calls.front().tensorBytes = cost.paramBytes / buckets;
  total.calls.front().count = buckets;
  return total;
}

Communication syncBatchNormCommunication(const ModelInfo &model, int64_t dp,
                                         const std::vector<double> &channelShare) {
  Communication total;
  if (dp <= 1)
    return total;
  for (size_t i = 0; i < model.ops.size(); ++i) {
    const OpInfo &op = model.ops[i];
    if (op.kind != OpKind::BatchNorm || size_t(op.batchDim + 1) >= op.outputShape.size())
      continue;
    double share = i < channelShare.size() ? channelShare[i] : 1.0;
    int64_t channels = std::max<int64_t>(
        1, int64_t(double(op.outputShape[size_t(op.batchDim + 1)]) * share));
    total += allReduce(schema::syncBatchNormForwardElements(channels) *
                           schema::kSyncBatchNormElementBytes, dp);
    total += allReduce(schema::syncBatchNormBackwardElements(channels) *
                           schema::kSyncBatchNormElementBytes, dp);
  }
  return total;
}

Communication stepMetricsCommunication(int64_t dp) {
  return allReduce(schema::kStepMetricsElements * schema::kStepMetricsElementBytes, dp);
}

Communication pipelineStepCommunication(int64_t pp, int64_t dp, int64_t gradientBytes,
                                        int64_t batchNormChannels, int64_t bufferBytes) {
  constexpr int64_t metrics = schema::kStepMetricsElements * schema::kStepMetricsElementBytes;
  Communication total = allGather(metrics, pp);
  if (dp <= 1)
    return total;
  total += allReduce(metrics, dp);
  if (gradientBytes > 0)
    total += allReduce(gradientBytes, dp);
  if (batchNormChannels > 0)
    total += allGather(batchNormChannels * schema::kRunningStatisticsPerChannel *
                           schema::kRunningStatisticElementBytes * dp,
                       dp);
  if (bufferBytes > 0)
    total += allGather(bufferBytes, dp);
  return total;
}

Communication fsdpCommunication(const ModelCost &cost, int64_t dp) {
  Communication total;
  if (dp <= 1 || cost.paramBytes == 0)
    return total;
  total += allGather(cost.paramBytes, dp);     // forward
  total += allGather(cost.paramBytes, dp);     // backward re-gather
  total += reduceScatter(cost.paramBytes, dp); // gradients
  // One collective of each kind per parameter-holding op, not one for the whole model.
  total.collectives = 3 * cost.paramOps;
  total.latencySteps = 3 * cost.paramOps * (dp - 1);
  int64_t ops = std::max<int64_t>(cost.paramOps, 1);
  for (CollectiveCall &call : total.calls) {
    call.tensorBytes = cost.paramBytes / ops; // the layers' average
    call.count = ops;
  }
  return total;
}

double MeasuredCurve::secondsAt(double size) const {
  if (points.empty() || !(size > 0))
    return 0.0;
  const auto &[firstSize, firstSeconds] = points.front();
  const auto &[lastSize, lastSeconds] = points.back();
  // A call never costs less than the smallest one measured: its fixed cost (dispatch,
  // autograd, a collective's latency) is what dominates there.
  if (size <= firstSize)
    return firstSeconds;
  if (size >= lastSize)
    return lastSeconds * size / lastSize;
  auto upper = std::upper_bound(points.begin(), points.end(), size,
                                [](double v, const auto &p) { return v < p.first; });
  auto lower = upper - 1;
  double t = std::log(size / lower->first) / std::log(upper->first / lower->first);
  return std::exp(std::log(lower->second) + t * std::log(upper->second / lower->second));
}

using CurvesByGroup = std::map<std::pair<CollectiveKind, int64_t>, MeasuredCurve>;

/// The curve of `kind` in `curves` whose group size is nearest `ranks` (among those `usable`
/// accepts), and that size; {nullptr, 0} without one.
template <typename Usable>
static std::pair<const MeasuredCurve *, int64_t>
nearestOf(const CurvesByGroup &curves, CollectiveKind kind, int64_t ranks, Usable usable) {
  const MeasuredCurve *nearest = nullptr;
  int64_t nearestRanks = 0;
  for (const auto &[key, curve] : curves)
    if (key.first == kind && !curve.points.empty() && usable(key) &&
        (!nearest || std::llabs(key.second - ranks) < std::llabs(nearestRanks - ranks))) {
      nearest = &curve;
      nearestRanks = key.second;
    }
  return {nearest, nearestRanks};
}

std::pair<const MeasuredCurve *, int64_t> Calibration::nearestCurve(CollectiveKind kind,
                                                                    int64_t ranks) const {
  return nearestOf(collectives, kind, ranks, [](const auto &) { return true; });
}

/// The messages a collective of `bytes` over `ranks` waits for in turn, as the runtime runs
/// it: all_reduce by recursive doubling or a ring (schema/CollectiveAlgorithms.h), the
/// gathers and scatters around a ring, a message alone.
static double collectiveSteps(CollectiveKind kind, int64_t ranks, double bytes) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return double(schema::allReduceSteps(ranks, int64_t(bytes)));
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    return double(ranks - 1);
  case CollectiveKind::SendRecv:
    return 1.0;
  }
  return 1.0;
}

double Calibration::collectiveSeconds(CollectiveKind kind, int64_t ranks, double bytes) const {
  auto [nearest, nearestRanks] = nearestCurve(kind, ranks);
  if (!nearest)
    return 0.0;
  double seconds = nearest->secondsAt(bytes);
  if (kind == CollectiveKind::SendRecv || nearestRanks == ranks)
    return seconds;
  return seconds * collectiveSteps(kind, ranks, bytes) /
         collectiveSteps(kind, nearestRanks, bytes);
}

double Calibration::concurrentCollectiveSeconds(CollectiveKind kind, int64_t ranks,
                                                int64_t jobRanks, double bytes) const {
  double alone = collectiveSeconds(kind, ranks, bytes);
  if (jobRanks <= ranks || ranks < 2 || oversubscription(jobRanks) <= 1.0 ||
      !collectives.count({kind, jobRanks}))
    return alone;
  double contended = collectiveSeconds(kind, jobRanks, bytes) *
                     collectiveSteps(kind, ranks, bytes) /
                     collectiveSteps(kind, jobRanks, bytes);
  return std::max(alone, contended);
}

std::optional<double> Calibration::busyCollectiveSeconds(CollectiveKind kind, int64_t ranks,
                                                        int64_t jobRanks, double bytes,
                                                        double computeSeconds) const {
  auto nearest = nearestByRanks(waitsBetweenComputes, jobRanks);
  if (nearest == waitsBetweenComputes.end() || nearest->second.waits.points.empty())
    return std::nullopt;
  // The wait stops growing once a peer's lag is a whole share of the CPUs (7-9 ms after 8
  // ms of compute on 4 ranks of 2 CPUs, 7.3 after 35 ms): beyond the curve, its last wait.
  const WaitCurve &curve = nearest->second;
  const auto &points = curve.waits.points;
  double compute = std::clamp(computeSeconds, points.front().first, points.back().first);
  double wait = curve.waits.secondsAt(compute) -
                collectiveSeconds(CollectiveKind::AllReduce, 2, curve.bytes);
  return collectiveSeconds(kind, ranks, bytes) + std::max(0.0, wait);
}

const ModelStepTimes *Calibration::modelStepOf(const ModelInfo &model) const {
  int64_t parameters = 0;
  for (const OpInfo &op : model.ops)
    parameters += op.paramElements;
  for (const ModelStepTimes &step : modelSteps)
    if (step.parameters == parameters && step.input == model.inputShape &&
        !step.curve.points.empty())
      return &step;
  return nullptr;
}

double Calibration::oversubscription(int64_t ranks) const {
  if (logicalCpus <= 0)
    return 1.0;
  return std::max(1.0, double(ranks * threadsPerRank) / double(logicalCpus));
}

double Calibration::messageLatency(int64_t ranks) const {
  if (ranks < 2)
    return 0.0;
  auto [nearest, nearestRanks] = nearestCurve(CollectiveKind::AllReduce, ranks);
  if (!nearest || nearestRanks < 2)
    return 0.0;
  const auto &[bytes, seconds] = nearest->points.front();
  return seconds / collectiveSteps(CollectiveKind::AllReduce, nearestRanks, bytes);
}

std::optional<double> Calibration::cpuSeconds(CollectiveKind kind, int64_t ranks,
                                              double bytes) const {
  auto [nearest, nearestRanks] = nearestOf(cpu, kind, ranks, [](const auto &) { return true; });
  if (!nearest)
    return std::nullopt;
  return nearest->secondsAt(bytes);
}

std::optional<double> Calibration::cpuShare(CollectiveKind kind, int64_t ranks,
                                            double bytes) const {
  auto [nearest, nearestRanks] =
      nearestOf(cpu, kind, ranks, [&](const auto &key) { return collectives.count(key) > 0; });
  if (!nearest)
    return std::nullopt;
  double time = collectives.at({kind, nearestRanks}).secondsAt(bytes) * double(nearestRanks);
  return time > 0 ? std::min(1.0, nearest->secondsAt(bytes) / time) : 1.0;
}

double Hardware::messageCpuSeconds(int64_t bytes, int64_t jobRanks, bool allPairs) const {
  // As sendSeconds: the job's pairs all exchanging at once, else one pair at a time. The
  // CPU differs as much as the time (a 128 KiB message of the VGG's dp=2 x pp=2 took 1.15
  // ms of its ranks' CPU, of its pp=4 0.22 ms; the 4-rank and 2-rank curves 0.9 and 0.25).
  if (calibration)
    if (std::optional<double> measured = calibration->cpuSeconds(
            CollectiveKind::SendRecv, allPairs ? jobRanks : 2, double(bytes)))
      return *measured;
  return 2.0 * sendSeconds(bytes, jobRanks, allPairs);
}

double Hardware::sendSeconds(int64_t bytes, int64_t jobRanks, bool allPairs) const {
  if (!calibration)
    return double(bytes) / linkBytesPerSecond + latencySeconds;
  // The job size's pairs exchanging at once if they do and were measured, else the two-rank
  // ping-pong, which misses the wait for a descheduled receiver: then, and whenever the job
  // oversubscribes the CPUs, at least one ring step of the job's all-reduce. (On 4 ranks of 2 CPUs the
  // all-pairs ping-pong is bimodal: 0.14 and 1.25 ms for 4 KiB in two calibrations minutes
  // apart, where the ring steps took 0.90 and 0.97 ms.)
  bool measured =
      allPairs && calibration->collectives.count({CollectiveKind::SendRecv, jobRanks}) > 0;
  double seconds = calibration->collectiveSeconds(CollectiveKind::SendRecv,
                                                  measured ? jobRanks : 2, double(bytes));
  if (!measured || calibration->oversubscription(jobRanks) > 1.0)
    seconds = std::max(seconds, calibration->messageLatency(jobRanks));
  return seconds;
}

double Communication::seconds(const Hardware &hw, int64_t jobRanks) const {
  if (!hw.calibration)
    return double(bytes) / hw.linkBytesPerSecond + double(latencySteps) * hw.latencySeconds;
  double total = 0;
  for (const CollectiveCall &call : calls)
    total += double(call.count) * hw.calibration->concurrentCollectiveSeconds(
                                      call.kind, call.ranks, jobRanks, double(call.tensorBytes));
  return total;
}

double Communication::rankCpuSeconds(const Hardware &hw, int64_t jobRanks) const {
  if (!hw.calibration) { // the constants' time is the calls' together
    int64_t ranks = 1;
    for (const CollectiveCall &call : calls)
      ranks = std::max(ranks, call.ranks);
    return 2.0 * seconds(hw, jobRanks) / double(ranks);
  }
  double total = 0;
  for (const CollectiveCall &call : calls) {
    double ranks = double(std::max<int64_t>(call.ranks, 1));
    double time = hw.calibration->concurrentCollectiveSeconds(call.kind, call.ranks, jobRanks,
                                                              double(call.tensorBytes));
    std::optional<double> share =
        hw.calibration->cpuShare(call.kind, std::max(jobRanks, call.ranks),
                                 double(call.tensorBytes));
    total += double(call.count) * (share ? *share * time : 2.0 * time / ranks);
  }
  return total;
}

std::pair<WorkKind, double> opWork(const ModelInfo &model, int opIndex, int64_t batch) {
  const OpInfo &op = model.ops[opIndex];
  double output = double(elementsAt(op.outputShape, op.batchDim, batch));
  double input = double(elementsAt(inputShapeOf(model, opIndex), inputBatchDimOf(model, opIndex),
                                   batch));
  switch (op.kind) {
  case OpKind::Linear:
  case OpKind::SpikingAttention:
    return {WorkKind::Gemm, output * flopsPerOutputElement(model, opIndex, batch)};
  case OpKind::Conv2d:
    return {WorkKind::Conv2d, output * flopsPerOutputElement(model, opIndex, batch)};
  case OpKind::IFNode:
  case OpKind::LIFNode:
  case OpKind::PLIFNode:
    return {WorkKind::Neuron, input};
  case OpKind::BatchNorm:
    return {WorkKind::BatchNorm, input};
  case OpKind::MaxPool2d:
  case OpKind::AvgPool2d:
  case OpKind::AdaptiveAvgPool2d:
    return {WorkKind::Pool, input};
  case OpKind::Flatten:
    return {WorkKind::Elementwise, 0.0}; // a view
  default:
    return {WorkKind::Elementwise, output};
  }
}

double opTrainingSeconds(const ModelInfo &model, int opIndex, int64_t batch, double scale,
                         const Hardware &hw) {
  if (!hw.calibration) {
    OpCost cost = opCost(model, opIndex, batch);
    return (cost.forwardFlops + cost.backwardFlops) * scale / hw.flopsPerSecond;
  }
  auto [kind, work] = opWork(model, opIndex, batch);
  return hw.calibration->compute[size_t(kind)].secondsAt(work * scale);
}

} // namespace snn::planner
