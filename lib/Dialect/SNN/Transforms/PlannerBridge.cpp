//===- PlannerBridge.cpp - snn IR -> the planner's plain structs ----------===//
#include "snn/Dialect/SNN/Transforms/PlannerBridge.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Planner/PipelineUnits.h"

using namespace mlir;
namespace pl = snn::planner;

namespace snn {

namespace {

pl::OpKind kindOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, pl::OpKind>(op)
      .Case([](LinearOp) { return pl::OpKind::Linear; })
      .Case([](Conv2dOp) { return pl::OpKind::Conv2d; })
      .Case([](BatchNormOp) { return pl::OpKind::BatchNorm; })
      .Case([](MaxPool2dOp) { return pl::OpKind::MaxPool2d; })
      .Case([](AvgPool2dOp) { return pl::OpKind::AvgPool2d; })
      .Case([](AdaptiveAvgPool2dOp) { return pl::OpKind::AdaptiveAvgPool2d; })
      .Case([](FlattenOp) { return pl::OpKind::Flatten; })
      .Case([](ReshapeOp) { return pl::OpKind::Reshape; })
      .Case([](DropoutOp) { return pl::OpKind::Dropout; })
      .Case([](AddOp) { return pl::OpKind::Add; })
      .Case([](MulOp) { return pl::OpKind::Mul; })
      .Case([](MeanTimeOp) { return pl::OpKind::MeanTime; })
      .Case([](IFNodeOp) { return pl::OpKind::IFNode; })
      .Case([](LIFNodeOp) { return pl::OpKind::LIFNode; })
      .Case([](PLIFNodeOp) { return pl::OpKind::PLIFNode; })
      .Case([](NeuronOp) { return pl::OpKind::Neuron; })
      .Case([](RecurrentNeuronOp) { return pl::OpKind::RecurrentNeuron; })
      .Case([](ParallelNeuronOp) { return pl::OpKind::ParallelNeuron; })
      .Case([](SpikingAttentionOp) { return pl::OpKind::SpikingAttention; })
      .Default([](Operation *) { return pl::OpKind::Other; });
}

std::vector<int64_t> shapeOf(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  return ranked ? std::vector<int64_t>(ranked.getShape().begin(), ranked.getShape().end())
                : std::vector<int64_t>{};
}

/// Builds the ModelInfo and notes the first reason the sizes cannot be counted.
class Bridge {
public:
  Bridge(func::FuncOp main, const ModelAnalysis &analysis) : main(main), analysis(analysis) {}

  BridgedModel run();

private:
  void addInput();
  void addOp(Operation *op);
  void addOperand(pl::OpInfo &info, Value operand);
  void addLayerDetails(Operation *op, pl::OpInfo &info);
  /// Marks the batch dimension; any other dynamic dimension makes the model uncountable.
  void markBatch(std::vector<int64_t> &shape, int batchDim, Operation *op);
  void uncountable(const std::string &reason) {
    if (reason_.empty())
      reason_ = reason;
  }

  func::FuncOp main;
  const ModelAnalysis &analysis;
  pl::ModelInfo model;
  BridgedModel result;
  llvm::DenseMap<Operation *, int> index;
  llvm::DenseSet<Operation *> countedParams;
  std::string reason_;
};

void Bridge::markBatch(std::vector<int64_t> &shape, int batchDim, Operation *op) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (int(d) == batchDim)
      shape[d] = -1;
    else if (ShapedType::isDynamic(shape[d]))
      uncountable((op ? "op '" + displayName(op) + "'" : std::string("the model input")) +
                  " has a dynamic dimension " + std::to_string(d) + " other than the batch");
  }
}

void Bridge::addInput() {
  if (main.getNumArguments() != 1 || !isa<RankedTensorType>(main.getArgument(0).getType())) {
    uncountable("@main does not take one ranked time-major tensor");
    return;
  }
  model.inputShape = shapeOf(main.getArgument(0).getType());
  if (model.inputShape.size() < 2) {
    uncountable("the model input is not time-major [T, N, ...]");
    return;
  }
  markBatch(model.inputShape, 1, nullptr);
  model.timeSteps = model.inputShape[0] > 0 ? model.inputShape[0] : 1;
}

void Bridge::addOperand(pl::OpInfo &info, Value operand) {
  if (auto param = operand.getDefiningOp<ParameterOp>()) {
    if (!countedParams.insert(param).second)
      return; // a shared parameter is counted at its first use
    auto type = cast<RankedTensorType>(param.getType());
    int64_t elements = type.hasStaticShape() ? type.getNumElements() : 0;
    (param.getBuffer() ? info.bufferElements : info.paramElements) += elements;
    if (!param.getBuffer())
      info.largestParamElements = std::max(info.largestParamElements, elements);
    if (!param.getBuffer() && elements > 0)
      result.input.hasTrainableParams = true;
    return;
  }
  if (isa<BlockArgument>(operand)) {
    info.inputs.push_back(-1);
    return;
  }
  auto it = index.find(operand.getDefiningOp());
  if (it != index.end())
    info.inputs.push_back(it->second);
}

void Bridge::addLayerDetails(Operation *op, pl::OpInfo &info) {
  if (auto linear = dyn_cast<LinearOp>(op)) {
    info.weightShape = shapeOf(linear.getWeight().getType());
    info.hasBias = bool(linear.getBias());
  } else if (auto conv = dyn_cast<Conv2dOp>(op)) {
    info.weightShape = shapeOf(conv.getWeight().getType());
    info.hasBias = bool(conv.getBias());
    info.groups = int64_t(conv.getGroups());
  } else if (auto recurrent = dyn_cast<RecurrentNeuronOp>(op)) {
    info.weightShape = shapeOf(recurrent.getRecurrentWeight().getType());
    info.hasBias = true;
  } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    auto in = cast<RankedTensorType>(reshape.getInput().getType());
    auto out = cast<RankedTensorType>(reshape.getResult().getType());
    info.keepsChannels =
        in.getRank() >= 3 && out.getRank() >= 3 && in.getDimSize(2) == out.getDimSize(2);
  } else if (auto attention = dyn_cast<SpikingAttentionOp>(op)) {
    info.groups = int64_t(attention.getNumHeads());
  } else if (auto pool = dyn_cast<MaxPool2dOp>(op)) {
    info.window.assign(pool.getKernelSize().begin(), pool.getKernelSize().end());
  } else if (auto pool = dyn_cast<AvgPool2dOp>(op)) {
    info.window.assign(pool.getKernelSize().begin(), pool.getKernelSize().end());
  }
}

void Bridge::addOp(Operation *op) {
  pl::OpInfo info;
  info.name = sourceName(op);
  info.kind = kindOf(op);
  if (isa<ONNXNodeOp>(op))
    uncountable("ONNX node '" + displayName(op) + "' is not legalized");
  if (op->getNumResults() == 1 && isa<RankedTensorType>(op->getResult(0).getType())) {
    info.outputShape = shapeOf(op->getResult(0).getType());
    info.batchDim = isa<MeanTimeOp, SumTimeOp>(op) ? 0 : 1; // the readouts drop T
    markBatch(info.outputShape, info.batchDim, op);
  } else {
    uncountable("op '" + displayName(op) + "' does not have one ranked tensor result");
  }
  for (Value operand : op->getOperands())
    addOperand(info, operand);
  addLayerDetails(op, info);
  info.tpCandidate = analysis.isCandidate(op);
  index[op] = int(model.ops.size());
  model.ops.push_back(std::move(info));
  result.ops.push_back(op);
}

BridgedModel Bridge::run() {
  result.main = main;
  result.input.hasTrainableParams = false;
  addInput();
  for (Operation &op : main.getBody().front()) {
    if (isa<ParameterOp>(op) || op.hasTrait<OpTrait::IsTerminator>() || !op.getDialect() ||
        !isa<SNNDialect>(op.getDialect()))
      continue;
    addOp(&op);
  }
  for (Value returned : main.getBody().front().getTerminator()->getOperands())
    if (auto it = index.find(returned.getDefiningOp()); it != index.end())
      model.outputs.push_back(it->second);
  result.input.tpCandidates = int64_t(analysis.tpCandidates.size());
  result.input.pipelineUnits = int64_t(pl::pipelineUnits(model).size());
  result.input.structure = model;
  if (reason_.empty())
    result.input.model = model;
  else
    result.input.missingReason = reason_;
  return std::move(result);
}

} // namespace

FailureOr<BridgedModel> bridgeModel(ModuleOp module, const ModelAnalysis &analysis) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal())
    return module.emitError("module has no @main function to plan");
  return Bridge(main, analysis).run();
}

} // namespace snn
