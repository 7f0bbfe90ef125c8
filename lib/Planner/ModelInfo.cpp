//===- ModelInfo.cpp - Shapes and dataflow of the planner's model ---------===//
#include "snn/Planner/ModelInfo.h"

#include <algorithm>

namespace snn::planner {

const char *opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::Linear: return "linear";
  case OpKind::Conv2d: return "conv2d";
  case OpKind::BatchNorm: return "batch_norm";
  case OpKind::MaxPool2d: return "max_pool2d";
  case OpKind::AvgPool2d: return "avg_pool2d";
  case OpKind::AdaptiveAvgPool2d: return "adaptive_avg_pool2d";
  case OpKind::Flatten: return "flatten";
  case OpKind::Reshape: return "reshape";
  case OpKind::Dropout: return "dropout";
  case OpKind::Add: return "add";
  case OpKind::Mul: return "mul";
  case OpKind::MeanTime: return "mean_time";
  case OpKind::IFNode: return "if_node";
  case OpKind::LIFNode: return "lif_node";
  case OpKind::PLIFNode: return "plif_node";
  case OpKind::Neuron: return "neuron";
  case OpKind::RecurrentNeuron: return "recurrent_neuron";
  case OpKind::ParallelNeuron: return "parallel_neuron";
  case OpKind::SpikingAttention: return "spiking_attention";
  case OpKind::Other: return "other";
  }
  return "other";
}

bool isNeuron(OpKind kind) {
  return kind == OpKind::IFNode || kind == OpKind::LIFNode || kind == OpKind::PLIFNode ||
         kind == OpKind::Neuron || kind == OpKind::RecurrentNeuron ||
         kind == OpKind::ParallelNeuron;
}

int64_t elementsAt(const std::vector<int64_t> &shape, int batchDim, int64_t batch) {
  int64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    elements *= (int(i) == batchDim) ? batch : std::max<int64_t>(shape[i], 0);
  return elements;
}

const std::vector<int64_t> &inputShapeOf(const ModelInfo &model, int opIndex) {
  const OpInfo &op = model.ops[opIndex];
  if (op.inputs.empty() || op.inputs.front() < 0)
    return model.inputShape;
  return model.ops[op.inputs.front()].outputShape;
}

int inputBatchDimOf(const ModelInfo &model, int opIndex) {
  const OpInfo &op = model.ops[opIndex];
  if (op.inputs.empty() || op.inputs.front() < 0)
    return model.inputBatchDim;
  return model.ops[op.inputs.front()].batchDim;
}

std::vector<int> usersOf(const ModelInfo &model, int opIndex) {
  std::vector<int> users;
  for (size_t i = 0; i < model.ops.size(); ++i)
    if (std::find(model.ops[i].inputs.begin(), model.ops[i].inputs.end(), opIndex) !=
        model.ops[i].inputs.end())
      users.push_back(int(i));
  return users;
}

} // namespace snn::planner
