//===- CostModel.cpp - FLOPs, bytes and time of a model's ops -------------===//
//
// The conventions are listed in CostModel.h; every number here is a count of one of them.
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/CostModel.h"

#include <algorithm>

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
  case OpKind::Flatten:
  case OpKind::Reshape: return 0.0;
  case OpKind::Dropout:
  case OpKind::Add:
  case OpKind::Mul: return 1.0;
  case OpKind::MeanTime: return double(model.timeSteps);
  case OpKind::IFNode: return 4.0;
  case OpKind::LIFNode:
  case OpKind::PLIFNode: return 7.0;
  case OpKind::Neuron: return 12.0; // a step program of about a dozen instructions
  // The fed-back product over F features, its bias, and the step program.
  case OpKind::RecurrentNeuron:
    return op.weightShape.size() == 2 ? 2.0 * double(op.weightShape[1]) + 13.0 : 13.0;
  // Each output is a dot product over the T steps (2 T), plus the bias and the fire.
  case OpKind::ParallelNeuron: return 2.0 * double(model.timeSteps) + 2.0;
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

/// A neuron the runtime may fuse with a BatchNorm before it or a max pool after it: not a
/// parallel neuron, which needs all T steps of its input at once.
bool fusesInBlock(OpKind kind) {
  return isNeuron(kind) && kind != OpKind::ParallelNeuron && kind != OpKind::RecurrentNeuron;
}

bool fusesWithNeuron(const ModelInfo &model, int norm, int neuron) {
  const OpInfo &op = model.ops[size_t(norm)];
  return op.kind == OpKind::BatchNorm && op.outputShape.size() == 5 &&
         fusesInBlock(model.ops[size_t(neuron)].kind) && readsAlone(model, norm, neuron);
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

/// Elements of the D x D products v k^T of every step and head that an attention over
/// `out` output elements ([T, N, C, L...]: D = C / heads) keeps for its backward.
int64_t attentionKeyValueElements(const OpInfo &op, int64_t out) {
  if (op.outputShape.size() < 4 || op.groups < 1)
    return 0;
  int64_t positions = 1;
  for (size_t d = 3; d < op.outputShape.size(); ++d)
    positions *= op.outputShape[d];
  return positions > 0 ? out / positions * (op.outputShape[2] / op.groups) : 0;
}

/// What the runtime's autograd keeps of op `opIndex` (Runtime/Autograd): linear, conv2d and
/// batch_norm their input (a conv2d's spike input as one bit per value), a neuron its
/// pre-fire potentials H (PLIF its input too; nothing inside a block after a BatchNorm,
/// whose input the block keeps and recomputes H from), max_pool2d a one-byte argmax per
/// output, mul its inputs, dropout its mask, spiking_attention its input and v k^T, pools by
/// averaging their input (but a global one); flatten, reshape (a view: a conv after it still
/// keeps spikes as bits), add and the mean over time only shapes. Elsewhere the output.
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
  case OpKind::RecurrentNeuron: // autograd keeps each step's intermediates (about six for a
    return (in + 6 * out) * kBytesPerElement; // CubaLIF step) and the input
  case OpKind::Neuron: // the states of every step and the input
  case OpKind::ParallelNeuron: // H for the surrogate and the input for the weight's gradient
    return (out + in) * kBytesPerElement;
  case OpKind::MaxPool2d: return out;
  case OpKind::SpikingAttention: // its qkv spikes and each step and head's D x D (v k^T)
    return (in + attentionKeyValueElements(op, out)) * kBytesPerElement;
  case OpKind::AvgPool2d: return in * kBytesPerElement; // ATen's backward reads its input
  case OpKind::AdaptiveAvgPool2d: // to 1 x 1 ATen takes the mean, which keeps only shapes
    return op.outputShape.size() == 5 && op.outputShape[3] * op.outputShape[4] == 1
               ? 0
               : in * kBytesPerElement;
  case OpKind::Flatten:
  case OpKind::Reshape:
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
  if ((op.kind == OpKind::MaxPool2d || op.kind == OpKind::Flatten ||
       op.kind == OpKind::Reshape) && !op.inputs.empty() &&
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
  if (fusesInBlock(op.kind)) {
    if (producer >= 0 && fusesWithNeuron(model, producer, opIndex))
      return producer;
    std::vector<int> users = usersOf(model, opIndex);
    return users.size() == 1 && model.ops[size_t(users.front())].kind == OpKind::MaxPool2d &&
                   readsAlone(model, opIndex, users.front())
               ? opIndex
               : -1;
  }
  if (op.kind == OpKind::MaxPool2d && producer >= 0 &&
      fusesInBlock(model.ops[size_t(producer)].kind) && readsAlone(model, producer, opIndex)) {
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

std::pair<WorkKind, double> opWork(const ModelInfo &model, int opIndex, int64_t batch) {
  const OpInfo &op = model.ops[opIndex];
  double output = double(elementsAt(op.outputShape, op.batchDim, batch));
  double input = double(elementsAt(inputShapeOf(model, opIndex), inputBatchDimOf(model, opIndex),
                                   batch));
  switch (op.kind) {
  case OpKind::Linear:
  case OpKind::SpikingAttention:
  case OpKind::ParallelNeuron: // its [T, T] x [T, N ...] product dominates
  case OpKind::RecurrentNeuron: // its [N, F] x [F, F] product each step
    return {WorkKind::Gemm, output * flopsPerOutputElement(model, opIndex, batch)};
  case OpKind::Conv2d:
    return {WorkKind::Conv2d, output * flopsPerOutputElement(model, opIndex, batch)};
  case OpKind::IFNode:
  case OpKind::LIFNode:
  case OpKind::PLIFNode:
  case OpKind::Neuron:
    return {WorkKind::Neuron, input};
  case OpKind::BatchNorm:
    return {WorkKind::BatchNorm, input};
  case OpKind::MaxPool2d:
  case OpKind::AvgPool2d:
  case OpKind::AdaptiveAvgPool2d:
    return {WorkKind::Pool, input};
  case OpKind::Flatten:
  case OpKind::Reshape:
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
