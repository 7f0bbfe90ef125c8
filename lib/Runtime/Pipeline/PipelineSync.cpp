//===- PipelineSync.cpp - What a pipeline's ranks agree on after a step ---===//

#include "snn/Runtime/Pipeline/PipelineSync.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/ParameterStore.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/TrainingCommunication.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace snn::runtime {

namespace {

bool communicates(const dist::Group *group) {
  return group && group->valid() && group->size() > 1;
}

int lastStageMember(const PipelinePlace &place) {
  return int(place.layout.coordinateOf(place.layout.stageCount - 1));
}

/// The tensors flattened end to end, and written back after a collective.
at::Tensor flatten(const std::vector<at::Tensor> &tensors) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor &t : tensors)
    flat.push_back(t.detach().reshape({-1}));
  return at::cat(flat);
}

void unflatten(const at::Tensor &flat, const std::vector<at::Tensor> &tensors) {
  int64_t offset = 0;
  for (const at::Tensor &t : tensors) {
    t.detach().copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}


bool manyMembers(const dist::Group *group) {
  return group && group->valid() && group->size() > 1;
}

/// The stage of `model` whose program has a node named `layer` (-1: none of them).
int64_t stageOfLayer(const Model *model, const std::string &layer) {
  if (!model)
    return -1;
  for (int64_t stage : model->stages())
    for (const Node &node : model->stageNodes(stage))
      if (node.name == layer)
        return stage;
  return model->stages().empty() ? -1 : model->stages().front();
}

/// "stage\tlayer\tkernel\n" per layer of `mine`.
std::string describeLayers(const Model *model, const FiringCounts &mine) {
  std::string text;
  for (const LayerFiring &layer : mine.layers())
    text += std::to_string(stageOfLayer(model, layer.layer)) + '\t' + layer.layer + '\t' +
            layer.kernel + '\n';
  return text;
}

/// Every member's describeLayers() text, concatenated in member order: one int64 per
/// character, padded with zeros to the longest member's text.
std::string gatherText(const dist::Group &group, const std::string &text) {
  at::Tensor longest = at::full({1}, int64_t(text.size()), at::kLong);
  dist::allReduce(group, longest, dist::ReduceOp::Max);
  const int64_t width = longest.item<int64_t>();
  if (width == 0)
    return "";
  at::Tensor chars = at::zeros({width}, at::kLong);
  for (size_t i = 0; i < text.size(); ++i)
    chars.data_ptr<int64_t>()[i] = static_cast<unsigned char>(text[i]);
  at::Tensor all = dist::allGather(group, chars);
  std::string out;
  for (int64_t i = 0; i < all.numel(); ++i)
    if (int64_t c = all.data_ptr<int64_t>()[i]; c != 0)
      out += char(c);
  return out;
}

} // namespace

std::vector<double> shareLastStageValues(const std::vector<double> &values,
                                         const PipelinePlace &place,
                                         const dist::Group *dp) {
  c10::InferenceMode normal(false); // Gloo writes on its own threads
  at::Tensor buffer = at::empty({int64_t(values.size())}, at::kDouble);
  std::memcpy(buffer.data_ptr<double>(), values.data(), values.size() * sizeof(double));
  if (communicates(place.group))
    dist::broadcast(*place.group, buffer, lastStageMember(place));
  if (communicates(dp))
    dist::allReduce(*dp, buffer, dist::ReduceOp::Sum);
  const double *shared = buffer.data_ptr<double>();
  return std::vector<double>(shared, shared + values.size());
}

void averageGradients(const dist::Group &group, const ParameterStore &store) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor &param : store.parameters()) {
    at::Tensor &grad = param.mutable_grad();
    if (!grad.defined())
      grad = at::zeros_like(param);
    grads.push_back(grad);
  }
  if (grads.empty() || !communicates(&group))
    return;
  at::Tensor flat = flatten(grads);
  dist::allReduce(group, flat, dist::ReduceOp::Avg);
  unflatten(flat, grads);
}

void broadcastBuffers(const dist::Group &group, const ParameterStore &store) {
  std::vector<at::Tensor> buffers = store.buffers();
  if (buffers.empty() || !communicates(&group))
    return;
  at::Tensor flat = flatten(buffers);
  dist::broadcast(group, flat, 0);
  unflatten(flat, buffers);
}

std::vector<RunningStatistic> snapshotRunningStatistics(const Model &model) {
  std::vector<RunningStatistic> stats;
  for (int64_t stage : model.stages())
    for (const Node &node : model.stageNodes(stage)) {
      if (node.opType != schema::op::kBatchNorm)
        continue;
      // The kernel's momentum (LayerOps.cpp), range-checked there.
      double momentum = decimalValue(NodeAttributes(node).getFloat(schema::attr::kMomentum, 0.1f));
      // The running mean and variance (the planner counts them: TrainingCommunication.h).
      static_assert(schema::kRunningStatisticsPerChannel == 2);
      for (size_t input : {size_t(3), size_t(4)})
        if (input < node.inputs.size() && model.params().contains(node.inputs[input]))
          stats.push_back({node.inputs[input], momentum,
                           model.params().get(node.inputs[input]).detach().clone()});
    }
  return stats;
}

void combineReplicaRunningStatistics(const dist::Group &group, const ParameterStore &store,
                                     const std::vector<RunningStatistic> &stats,
                                     int64_t microbatches) {
  if (stats.empty() || !communicates(&group))
    return;
  c10::InferenceMode normal(false);
  std::vector<at::Tensor> now;
  for (const RunningStatistic &stat : stats)
    now.push_back(store.get(stat.name));
  at::Tensor all = dist::allGather(group, flatten(now)).view({group.size(), -1});
  int64_t offset = 0, replicas = group.size();
  for (size_t i = 0; i < stats.size(); ++i) {
    int64_t size = now[i].numel();
    at::Tensor start = stats[i].before.reshape({-1}).to(at::kDouble);
    double decay = std::pow(1.0 - stats[i].momentum, double(microbatches)); // a replica's
    at::Tensor combined = start.mul(std::pow(decay, double(replicas)));
    for (int64_t d = 0; d < replicas; ++d) {
      at::Tensor mine = all[d].narrow(0, offset, size).to(at::kDouble);
      combined.add_(mine.sub(start.mul(decay)).mul(std::pow(decay, double(replicas - 1 - d))));
    }
    now[i].view({-1}).copy_(combined.to(at::kFloat));
    offset += size;
  }
}

at::Tensor broadcastFromLastStage(const at::Tensor &tensor, const PipelinePlace &place) {
  if (!communicates(place.group))
    return tensor;
  c10::InferenceMode normal(false);
  constexpr int64_t kMaxRank = 16;
  at::Tensor shape = at::full({kMaxRank + 1}, 0, at::kLong);
  if (tensor.defined()) {
    shape.data_ptr<int64_t>()[0] = tensor.dim();
    for (int64_t d = 0; d < tensor.dim() && d < kMaxRank; ++d)
      shape.data_ptr<int64_t>()[d + 1] = tensor.size(d);
  }
  dist::broadcast(*place.group, shape, lastStageMember(place));
  const int64_t *sizes = shape.data_ptr<int64_t>();
  at::Tensor value = tensor.defined()
                         ? tensor.to(at::kFloat).contiguous().clone()
                         : at::empty(std::vector<int64_t>(sizes + 1, sizes + 1 + sizes[0]),
                                     at::kFloat);
  dist::broadcast(*place.group, value, lastStageMember(place));
  return value;
}

ReplicatedPipelineStep trainPipelineReplicas(PipelineEngine &engine, Model &model,
                                             const at::Tensor &input,
                                             const at::Tensor &labels,
                                             const dist::Group *replicas) {
  if (replicas && !replicas->valid())
    replicas = nullptr;
  std::vector<RunningStatistic> before =
      replicas ? snapshotRunningStatistics(model) : std::vector<RunningStatistic>{};
  ReplicatedPipelineStep step;
  step.result = engine.trainStep(input, labels);
  static_assert(schema::kStepMetricsElements == 2); // loss and correct count
  std::vector<double> totals = shareLastStageValues(
      {step.result.lossSum, double(step.result.correct)}, engine.place(), replicas);
  step.lossSum = totals[0];
  step.correct = totals[1];
  if (replicas) {
    averageGradients(*replicas, model.params());
    combineReplicaRunningStatistics(*replicas, model.params(), before,
                                    engine.place().layout.microbatches);
    broadcastBuffers(*replicas, model.params()); // any other buffer: replica 0's
  }
  return step;
}

std::vector<LayerFiring> pipelineFiringLayers(const dist::Group *group, const Model *model,
                                              const FiringCounts &mine) {
  std::string text = describeLayers(model, mine);
  if (manyMembers(group))
    text = gatherText(*group, text);
  std::vector<std::pair<int64_t, LayerFiring>> keyed;
  std::istringstream lines(text);
  for (std::string stage, name, kernel; std::getline(lines, stage, '\t') &&
                                        std::getline(lines, name, '\t') &&
                                        std::getline(lines, kernel, '\n');) {
    auto same = [&](const auto &entry) { return entry.second.layer == name; };
    auto it = std::find_if(keyed.begin(), keyed.end(), same);
    if (it == keyed.end())
      keyed.push_back({std::stoll(stage), LayerFiring{name, 0, 0, kernel}});
    else if (it->second.kernel.empty())
      it->second.kernel = kernel;
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<LayerFiring> layers;
  for (auto &entry : keyed)
    layers.push_back(std::move(entry.second));
  return layers;
}

void sumPipelineFiring(const dist::Group *group, const std::vector<LayerFiring> &layers,
                       FiringCounts &counts) {
  at::Tensor sums = at::zeros({2 * int64_t(layers.size())}, at::kDouble);
  double *data = sums.data_ptr<double>();
  for (const LayerFiring &mine : counts.layers()) {
    auto same = [&](const LayerFiring &layer) { return layer.layer == mine.layer; };
    size_t i = size_t(std::find_if(layers.begin(), layers.end(), same) - layers.begin());
    if (i < layers.size()) {
      data[2 * i] = mine.spikes;
      data[2 * i + 1] = mine.elements;
    }
  }
  if (manyMembers(group))
    dist::allReduce(*group, sums, dist::ReduceOp::Sum);
  counts.clear();
  for (const LayerFiring &layer : layers)
    counts.add(layer.layer, 0, 0, layer.kernel.c_str());
  counts.unpack(data);
}

} // namespace snn::runtime
