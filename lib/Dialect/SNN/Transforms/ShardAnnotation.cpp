//===- ShardAnnotation.cpp - A plan's shardings on the IR -----------------===//
//
// Every tensor gets an explicit annotation (not just the function boundary) so the plan
// is readable in the IR and a later partitioning pass need not re-derive what the planner
// decided; upstream sharding propagation would agree on the dp and fsdp cases but cannot
// know the Megatron pairing or that neuron state must follow its input.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/ShardAnnotation.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <map>

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Dialect/SNN/Transforms/AttentionHeadLayout.h"
#include "snn/Support/ShardAPI.h"

using namespace mlir;
namespace pl = snn::planner;
using snn::shardapi::SplitAxes;

namespace snn {

namespace {

class Annotator {
public:
  Annotator(ModuleOp module, const BridgedModel &bridged, pl::Plan &plan)
      : module(module), main(bridged.main), bridged(bridged), plan(plan),
        builder(module.getContext()) {}

  LogicalResult run();

private:
  Value sharding(SplitAxes axes);
  void annotate(Value value, const SplitAxes &axes, Operation *after);
  SplitAxes activationAxes(Value value, int batchDim, int splitDim) const;
  SplitAxes parameterAxes(ParameterOp param, Operation *user, int userIndex);
  void annotateActivations();
  void gatherReturnedSplits();
  void annotateParameters();
  LogicalResult relayoutSplitAttention();
  void setStages();
  /// The first model op (in program order) that reads `param`, and its index; -1 if none.
  int userIndex(ParameterOp param, Operation *&user) const;

  ModuleOp module;
  func::FuncOp main;
  const BridgedModel &bridged;
  pl::Plan &plan;
  OpBuilder builder;
  llvm::DenseMap<Operation *, int> indexOf;
  std::map<std::string, Value> shardings;
  Operation *lastSharding = nullptr;
  int dpAxis = -1, tpAxis = -1;
};

std::string keyOf(const SplitAxes &axes) {
  std::string key;
  for (const auto &dim : axes) {
    key += "[";
    for (int16_t axis : dim)
      key += std::to_string(axis) + ",";
    key += "]";
  }
  return key;
}

/// Shardings are created once each, at the top of @main, so they dominate every use.
Value Annotator::sharding(SplitAxes axes) {
  while (!axes.empty() && axes.back().empty())
    axes.pop_back();
  std::string key = keyOf(axes);
  if (auto it = shardings.find(key); it != shardings.end())
    return it->second;
  Block &entry = main.getBody().front();
  if (lastSharding)
    builder.setInsertionPointAfter(lastSharding);
  else
    builder.setInsertionPointToStart(&entry);
  Value value = shardapi::createSharding(builder, main.getLoc(), kGridName, axes);
  lastSharding = value.getDefiningOp();
  shardings[key] = value;
  return value;
}

void Annotator::annotate(Value value, const SplitAxes &axes, Operation *after) {
  if (!isa<RankedTensorType>(value.getType()))
    return;
  Value s = sharding(axes);
  builder.setInsertionPointAfter(after ? after : lastSharding);
  Location loc = after ? after->getLoc() : main.getLoc();
  Value annotated = shardapi::annotate(builder, loc, value, s);
  value.replaceAllUsesExcept(annotated, annotated.getDefiningOp());
}

SplitAxes Annotator::activationAxes(Value value, int batchDim, int splitDim) const {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  SplitAxes axes(type ? type.getRank() : 0);
  if (dpAxis >= 0 && batchDim >= 0 && batchDim < int(axes.size()))
    axes[batchDim].push_back(int16_t(dpAxis));
  if (tpAxis >= 0 && splitDim >= 0 && splitDim < int(axes.size()))
    axes[splitDim].push_back(int16_t(tpAxis));
  return axes;
}

void Annotator::annotateActivations() {
  const pl::ModelInfo &model = *bridged.input.structure;
  for (BlockArgument arg : main.getArguments())
    annotate(arg, activationAxes(arg, 1, -1), nullptr);
  for (size_t i = 0; i < bridged.ops.size(); ++i) {
    Operation *op = bridged.ops[i];
    if (op->getNumResults() != 1)
      continue;
    int split = plan.tensorParallel.splitDims.empty() ? -1 : plan.tensorParallel.splitDims[i];
    annotate(op->getResult(0), activationAxes(op->getResult(0), model.ops[i].batchDim, split),
             op);
  }
  gatherReturnedSplits();
}

/// An unpaired colwise layer gathered after the model's last op (a neuron the function
/// returns): the return takes that op's result whole over tp.
void Annotator::gatherReturnedSplits() {
  const pl::ModelInfo &model = *bridged.input.structure;
  Operation *ret = main.getBody().front().getTerminator();
  for (OpOperand &operand : ret->getOpOperands()) {
    Operation *annotation = operand.get().getDefiningOp();
    Value source = annotation ? shardapi::annotatedSource(annotation) : Value();
    Operation *op = source ? source.getDefiningOp() : nullptr;
    auto it = op ? indexOf.find(op) : indexOf.end();
    if (it == indexOf.end() || plan.tensorParallel.splitDims.empty() ||
        plan.tensorParallel.splitDims[it->second] < 0)
      continue;
    Value whole = sharding(activationAxes(source, model.ops[it->second].batchDim, -1));
    builder.setInsertionPoint(ret);
    operand.set(shardapi::annotate(builder, ret->getLoc(), operand.get(), whole,
                                   /*forUsers=*/true));
  }
}

int Annotator::userIndex(ParameterOp param, Operation *&user) const {
  int best = -1;
  for (Operation *candidate : param->getUsers()) {
    auto it = indexOf.find(candidate);
    if (it != indexOf.end() && (best < 0 || it->second < best)) {
      best = it->second;
      user = candidate;
    }
  }
  return best;
}

/// The TP split of a parameter follows its layer's role; FSDP then splits dim 0 over dp.
SplitAxes Annotator::parameterAxes(ParameterOp param, Operation *user, int index) {
  auto type = cast<RankedTensorType>(param.getType());
  SplitAxes axes(type.getRank());
  Value value = param.getResult();
  pl::TPRole role = (index >= 0 && tpAxis >= 0) ? plan.tensorParallel.roles[index]
                                                 : pl::TPRole::Replicated;
  bool isWeight = user && ((isa<LinearOp>(user) && cast<LinearOp>(user).getWeight() == value) ||
                           (isa<Conv2dOp>(user) && cast<Conv2dOp>(user).getWeight() == value));
  if (role == pl::TPRole::Colwise && type.getRank() >= 1)
    axes[0].push_back(int16_t(tpAxis)); // weight rows and bias: the output features
  else if (role == pl::TPRole::Rowwise && isWeight && type.getRank() >= 2)
    axes[1].push_back(int16_t(tpAxis)); // the input features; the bias stays whole
  else if (role == pl::TPRole::Sharded && isa<BatchNormOp>(user) && type.getRank() == 1)
    axes[0].push_back(int16_t(tpAxis)); // per-channel statistics follow the channels

  bool fsdp = plan.mode == pl::Mode::FSDP || plan.mode == pl::Mode::FSDP_TP;
  if (!fsdp || param.getBuffer() || type.getRank() == 0)
    return axes;
  int64_t parts = plan.meshShape[dpAxis];
  for (int16_t axis : axes[0])
    parts *= plan.meshShape[axis];
  if (!type.isDynamicDim(0) && type.getDimSize(0) % parts == 0)
    axes[0].push_back(int16_t(dpAxis));
  else
    plan.notes.push_back("fsdp keeps parameter '" + param.getName().str() +
                         "' whole: its dimension 0 (" + std::to_string(type.getDimSize(0)) +
                         ") does not divide into " + std::to_string(parts) + " shards");
  return axes;
}

void Annotator::annotateParameters() {
  for (Operation &op : llvm::make_early_inc_range(main.getBody().front())) {
    auto param = dyn_cast<ParameterOp>(op);
    if (!param)
      continue;
    Operation *user = nullptr;
    int index = userIndex(param, user);
    annotate(param.getResult(), parameterAxes(param, user, index), param);
  }
}

/// Every attention the plan splits gets whole heads per rank (AttentionHeadLayout.h).
LogicalResult Annotator::relayoutSplitAttention() {
  if (tpAxis < 0 || plan.tensorParallel.roles.size() != bridged.ops.size())
    return success();
  for (size_t i = 0; i < bridged.ops.size(); ++i)
    if (auto attention = dyn_cast<SpikingAttentionOp>(bridged.ops[i]);
        attention && plan.tensorParallel.roles[i] == pl::TPRole::Sharded &&
        failed(relayoutAttentionHeads(attention, plan.meshShape[tpAxis])))
      return failure();
  return success();
}

void Annotator::setStages() {
  if (plan.opStage.size() != bridged.ops.size())
    return;
  for (size_t i = 0; i < bridged.ops.size(); ++i)
    bridged.ops[i]->setAttr(kStageAttrName, builder.getI64IntegerAttr(plan.opStage[i]));
  for (Operation &op : main.getBody().front())
    if (auto param = dyn_cast<ParameterOp>(op)) {
      Operation *user = nullptr;
      int index = userIndex(param, user);
      param->setAttr(kStageAttrName,
                     builder.getI64IntegerAttr(index >= 0 ? plan.opStage[index] : 0));
    }
}

LogicalResult Annotator::run() {
  if (plan.mode == pl::Mode::None)
    return success();
  if (module.lookupSymbol(kGridName))
    return module.emitError("cannot create the plan's grid: symbol @")
           << kGridName << " already exists";
  for (size_t i = 0; i < bridged.ops.size(); ++i)
    indexOf[bridged.ops[i]] = int(i);
  builder.setInsertionPointToStart(module.getBody());
  shardapi::createGrid(builder, module.getLoc(), kGridName, plan.meshShape);
  if (plan.mode == pl::Mode::PP) {
    setStages();
    // A pipeline whose stages are tensor-parallel is partitioned over tp before the split.
    if (plan.tpMeshDim < 0)
      return success();
  }
  dpAxis = plan.dpMeshDim;
  tpAxis = plan.tpMeshDim;
  if (failed(relayoutSplitAttention()))
    return failure();
  annotateParameters();
  annotateActivations();
  return success();
}

} // namespace

LogicalResult annotatePlan(ModuleOp module, const BridgedModel &bridged, pl::Plan &plan) {
  return Annotator(module, bridged, plan).run();
}

} // namespace snn
