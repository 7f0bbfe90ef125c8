#include "TestModels.h"

namespace snn::planner::test {

ModelBuilder::ModelBuilder(std::vector<int64_t> inputShape, int64_t timeSteps) {
  model_.inputShape = std::move(inputShape);
  model_.timeSteps = timeSteps;
}

const std::vector<int64_t> &ModelBuilder::shapeOf(int op) const {
  return op < 0 ? model_.inputShape : model_.ops[op].outputShape;
}

int ModelBuilder::add(OpInfo op) {
  model_.ops.push_back(std::move(op));
  return int(model_.ops.size()) - 1;
}

int ModelBuilder::linear(int input, int64_t out, bool bias, const std::string &name,
                         bool candidate) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::Linear;
  op.inputs = {input};
  op.outputShape = shapeOf(input);
  int64_t in = op.outputShape.back();
  op.outputShape.back() = out;
  op.weightShape = {out, in};
  op.hasBias = bias;
  op.paramElements = out * in + (bias ? out : 0);
  op.largestParamElements = out * in;
  op.tpCandidate = candidate;
  return add(op);
}

int ModelBuilder::conv(int input, int64_t out, int64_t kernel, int64_t padding,
                       const std::string &name, bool candidate) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::Conv2d;
  op.inputs = {input};
  std::vector<int64_t> in = shapeOf(input); // [T, N, C, H, W]
  op.outputShape = {in[0], -1, out, in[3] + 2 * padding - kernel + 1,
                    in[4] + 2 * padding - kernel + 1};
  op.weightShape = {out, in[2], kernel, kernel};
  op.paramElements = out * in[2] * kernel * kernel;
  op.largestParamElements = op.paramElements;
  op.tpCandidate = candidate;
  return add(op);
}

int ModelBuilder::spikingAttention(int input, int64_t heads, const std::string &name) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::SpikingAttention;
  op.inputs = {input};
  op.outputShape = shapeOf(input);
  op.outputShape[2] /= 3;
  op.groups = heads;
  return add(op);
}

int ModelBuilder::residualAdd(int left, int right, const std::string &name) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::Add;
  op.inputs = {left, right};
  op.outputShape = shapeOf(left);
  return add(op);
}

int ModelBuilder::batchNorm(int input, const std::string &name) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::BatchNorm;
  op.inputs = {input};
  op.outputShape = shapeOf(input);
  op.paramElements = 2 * op.outputShape[2];
  op.bufferElements = 2 * op.outputShape[2];
  op.largestParamElements = op.outputShape[2];
  return add(op);
}

int ModelBuilder::neuron(int input, OpKind kind, const std::string &name) {
  OpInfo op;
  op.name = name;
  op.kind = kind;
  op.inputs = {input};
  op.outputShape = shapeOf(input);
  if (kind == OpKind::PLIFNode)
    op.paramElements = op.largestParamElements = 1;
  return add(op);
}

int ModelBuilder::maxPool(int input, int64_t kernel, const std::string &name) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::MaxPool2d;
  op.inputs = {input};
  op.outputShape = shapeOf(input);
  op.outputShape[3] /= kernel;
  op.outputShape[4] /= kernel;
  op.window = {kernel, kernel};
  return add(op);
}

int ModelBuilder::avgPool(int input, int64_t kernel, const std::string &name) {
  int pool = maxPool(input, kernel, name);
  model_.ops[size_t(pool)].kind = OpKind::AvgPool2d;
  return pool;
}

int ModelBuilder::reshape(int input, std::vector<int64_t> shape, const std::string &name) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::Reshape;
  op.inputs = {input};
  op.outputShape = std::move(shape);
  return add(op);
}

int ModelBuilder::flatten(int input, const std::string &name) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::Flatten;
  op.inputs = {input};
  const std::vector<int64_t> &in = shapeOf(input);
  int64_t features = 1;
  for (size_t i = 2; i < in.size(); ++i)
    features *= in[i];
  op.outputShape = {in[0], -1, features};
  return add(op);
}

int ModelBuilder::meanTime(int input, const std::string &name) {
  OpInfo op;
  op.name = name;
  op.kind = OpKind::MeanTime;
  op.inputs = {input};
  const std::vector<int64_t> &in = shapeOf(input);
  op.outputShape.assign(in.begin() + 1, in.end());
  op.batchDim = 0;
  return add(op);
}

ModelInfo ModelBuilder::build(int output) {
  model_.outputs = {output};
  return model_;
}

ModelInfo spikingMlp(int64_t in, int64_t hidden, int64_t classes, int64_t timeSteps) {
  ModelBuilder b({timeSteps, -1, in}, timeSteps);
  int x = b.flatten(-1, "0");
  x = b.linear(x, hidden, true, "1");
  x = b.neuron(x, OpKind::LIFNode, "2");
  x = b.linear(x, classes, true, "3");
  x = b.neuron(x, OpKind::LIFNode, "4");
  return b.build(x);
}

ModelInfo csnn(int64_t c, int64_t timeSteps, bool convCandidates) {
  ModelBuilder b({timeSteps, -1, 1, 28, 28}, timeSteps);
  int x = b.conv(-1, c, 3, 1, "conv_fc.0", convCandidates);
  x = b.batchNorm(x, "conv_fc.1");
  x = b.neuron(x, OpKind::IFNode, "conv_fc.2");
  x = b.maxPool(x, 2, "conv_fc.3");
  x = b.conv(x, c, 3, 1, "conv_fc.4", convCandidates);
  x = b.batchNorm(x, "conv_fc.5");
  x = b.neuron(x, OpKind::IFNode, "conv_fc.6");
  x = b.maxPool(x, 2, "conv_fc.7");
  x = b.flatten(x, "conv_fc.8");
  x = b.linear(x, c * 4 * 4, false, "conv_fc.9");
  x = b.neuron(x, OpKind::IFNode, "conv_fc.10");
  x = b.linear(x, 10, false, "conv_fc.11");
  x = b.neuron(x, OpKind::IFNode, "conv_fc.12");
  x = b.meanTime(x, "mean");
  return b.build(x);
}

} // namespace snn::planner::test
