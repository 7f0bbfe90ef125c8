//===- SplitPipelineStages.cpp - --snn-split-pipeline-stages --------------===//
//
// A pp plan's @main, every op annotated with its logical stage (`snn.pp_stage`, set by
// --snn-plan), -> one function per logical stage, as the runtime runs them: each stage is a
// program of its own, and the tensors that cross a stage boundary become explicit
// `snn.send` / `snn.recv` pairs (docs/artifact-format.md, "Pipeline programs"). Only adjacent
// stages talk, so a value read several stages later (a SEW-ResNet shortcut) is received and
// sent on by every stage in between: the runtime's schedule then needs no routing, and each
// hop carries the value's gradient back in training.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringExtras.h"

#include <optional>

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Support/ShardAPI.h"

namespace snn {
#define GEN_PASS_DEF_SPLITPIPELINESTAGES
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"
} // namespace snn

using namespace mlir;
namespace schema = snn::schema;

namespace {

/// Where every op of @main goes and what each stage boundary carries.
struct StageAssignment {
  int64_t count = 0; ///< logical stages K
  llvm::DenseMap<Operation *, int64_t> stageOf;
  /// crossing[k]: the values stage k sends to stage k + 1, in slot order (the order @main
  /// defines them).
  std::vector<SmallVector<Value>> crossing;
};

std::string layoutText(ArrayRef<int64_t> layout) {
  return "[" + llvm::join(llvm::map_range(layout, [](int64_t n) { return std::to_string(n); }),
                          ", ") +
         "]";
}

class PipelineStageSplitter
    : public snn::impl::SplitPipelineStagesBase<PipelineStageSplitter> {
public:
  using SplitPipelineStagesBase::SplitPipelineStagesBase;

  void runOnOperation() override;

private:
  LogicalResult assignOps(func::FuncOp main, StageAssignment &stages, bool partitioned);
  LogicalResult assignParameter(snn::ParameterOp param, StageAssignment &stages);
  LogicalResult findCrossings(func::FuncOp main, StageAssignment &stages);
  void buildStage(func::FuncOp main, const StageAssignment &stages, int64_t k);
};

/// The stage of an op that the tp partition made (a collective, a bias add after a partial
/// sum), when it reads a computed value: the latest stage among the ops that make what it
/// reads, so it runs where its input is made and never before it. None when it reads only
/// parameters (the slice of a split weight): it goes where its value is used.
std::optional<int64_t> stageFromInputs(Operation &op, const StageAssignment &stages) {
  std::optional<int64_t> stage;
  for (Value operand : op.getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (def && isa<snn::ParameterOp>(def))
      continue;
    stage = std::max(stage.value_or(0), def ? stages.stageOf.lookup(def) : 0);
  }
  return stage;
}

/// Every op but the parameters carries its stage; parameters follow their users. In a
/// module partitioned over tp, the ops the partition added have none and get one.
LogicalResult PipelineStageSplitter::assignOps(func::FuncOp main, StageAssignment &stages,
                                               bool partitioned) {
  Block &body = main.getBody().front();
  SmallVector<Operation *> readParametersOnly;
  for (Operation &op : body.without_terminator()) {
    if (isa<snn::ParameterOp>(op))
      continue;
    auto stage = op.getAttrOfType<IntegerAttr>(snn::kStageAttrName);
    if (!stage && partitioned) {
      if (std::optional<int64_t> derived = stageFromInputs(op, stages))
        stages.stageOf[&op] = *derived;
      else
        readParametersOnly.push_back(&op);
      continue;
    }
    if (!stage)
      return op.emitError("'") << op.getName() << "' has no " << snn::kStageAttrName
                               << ": every op of a pp plan's @main needs its logical stage "
                                  "(--snn-plan sets it)";
    if (stage.getInt() < 0 || stage.getInt() >= stages.count)
      return op.emitError("'") << op.getName() << "' has " << snn::kStageAttrName << " "
                               << stage.getInt() << ", outside the plan's logical stages 0 to "
                               << stages.count - 1;
    stages.stageOf[&op] = stage.getInt();
  }
  // Later ops first, so a chain of them takes its last user's stage.
  for (Operation *op : llvm::reverse(readParametersOnly)) {
    int64_t stage = stages.count - 1;
    for (Operation *user : op->getUsers())
      stage = std::min(stage, isa<func::ReturnOp>(user) ? stages.count - 1
                                                          : stages.stageOf.lookup(user));
    stages.stageOf[op] = stage;
  }
  for (auto param : llvm::to_vector(body.getOps<snn::ParameterOp>()))
    if (failed(assignParameter(param, stages)))
      return failure();
  return success();
}

/// A stage's program holds its parameters, so a parameter read by two stages (tied
/// weights) cannot be placed; one nobody reads keeps its annotation (stage 0 without one).
LogicalResult PipelineStageSplitter::assignParameter(snn::ParameterOp param,
                                                     StageAssignment &stages) {
  std::optional<int64_t> stage;
  for (Operation *user : param->getUsers()) {
    int64_t used = isa<func::ReturnOp>(user) ? stages.count - 1 : stages.stageOf.lookup(user);
    if (stage && *stage != used)
      return param.emitError("parameter '")
             << param.getName() << "' is used by logical stages " << std::min(*stage, used)
             << " and " << std::max(*stage, used)
             << ": each stage's program holds its own parameters, so one cannot be shared";
    stage = used;
  }
  if (!stage) {
    auto annotated = param->getAttrOfType<IntegerAttr>(snn::kStageAttrName);
    stage = annotated && annotated.getInt() >= 0 && annotated.getInt() < stages.count
                ? annotated.getInt()
                : 0;
  }
  stages.stageOf[param] = *stage;
  return success();
}

/// Checks that no value is read by an earlier stage than its own, and lists every value on
/// each boundary it crosses: defined in stage i and last read in stage j > i, it is carried
/// over the edges i..j-1. @main's arguments belong to stage 0, its results to the last.
LogicalResult PipelineStageSplitter::findCrossings(func::FuncOp main, StageAssignment &stages) {
  stages.crossing.assign(size_t(stages.count - 1), {});
  auto carry = [&](Value value, int64_t defined) -> LogicalResult {
    int64_t last = defined;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      int64_t reader = isa<func::ReturnOp>(user) ? stages.count - 1 : stages.stageOf.lookup(user);
      if (reader < defined)
        return user->emitError("'")
               << user->getName() << "' in logical stage " << reader
               << " reads a value computed in stage " << defined
               << ": a stage may only read values of its own or earlier stages";
      last = std::max(last, reader);
    }
    for (int64_t k = defined; k < last; ++k)
      stages.crossing[k].push_back(value);
    return success();
  };
  for (BlockArgument arg : main.getArguments())
    if (failed(carry(arg, 0)))
      return failure();
  for (Operation &op : main.getBody().front().without_terminator())
    for (Value result : op.getResults())
      if (failed(carry(result, stages.stageOf.lookup(&op))))
        return failure();
  return success();
}

Location locationOf(Value value, func::FuncOp main) {
  Operation *def = value.getDefiningOp();
  return def ? def->getLoc() : main.getLoc();
}

/// `@stage_<k>`: the values of the incoming edge received, stage k's ops cloned in @main's
/// order, the values of the outgoing edge sent; the first stage takes @main's arguments and
/// the last returns its results.
void PipelineStageSplitter::buildStage(func::FuncOp main, const StageAssignment &stages,
                                       int64_t k) {
  bool first = k == 0, last = k + 1 == stages.count;
  OpBuilder builder(main);
  FunctionType type = builder.getFunctionType(first ? main.getArgumentTypes() : TypeRange{},
                                              last ? main.getResultTypes() : TypeRange{});
  auto func = func::FuncOp::create(builder, main.getLoc(), "stage_" + std::to_string(k), type);
  func->setAttr(snn::kStageAttrName, builder.getI64IntegerAttr(k));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  IRMapping mapping;
  if (first)
    mapping.map(main.getArguments(), body->getArguments());
  else
    for (auto [slot, value] : llvm::enumerate(stages.crossing[k - 1]))
      mapping.map(value, snn::RecvOp::create(builder, locationOf(value, main), value.getType(),
                                             k - 1, slot));
  for (Operation &op : main.getBody().front().without_terminator()) {
    if (stages.stageOf.lookup(&op) != k)
      continue;
    Operation *clone = builder.clone(op, mapping);
    clone->removeAttr(snn::kStageAttrName); // the function says it
  }
  if (!last)
    for (auto [slot, value] : llvm::enumerate(stages.crossing[k]))
      snn::SendOp::create(builder, locationOf(value, main), mapping.lookup(value), k + 1, slot);
  SmallVector<Value> results;
  if (last)
    for (Value value : main.getBody().front().getTerminator()->getOperands())
      results.push_back(mapping.lookup(value));
  func::ReturnOp::create(builder, main.getLoc(), results);
}

void PipelineStageSplitter::runOnOperation() {
  ModuleOp module = getOperation();
  auto plan = module->getAttrOfType<snn::PlanAttr>(snn::kPlanAttrName);
  if (!plan || plan.getMode() != schema::ParallelMode::PP)
    return;
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main) {
    // A second run finds the stage functions; anything else is a module without a model.
    if (!module.lookupSymbol("stage_0"))
      module.emitError("module has no @main function to split into pipeline stages");
    return module.lookupSymbol("stage_0") ? void() : signalPassFailure();
  }
  StageAssignment stages;
  stages.count = int64_t(plan.getPpLayout().size());
  if (stages.count == 0 || main.getBody().empty()) {
    module.emitError("plan mode 'pp' has no pipeline layout (pp_layout is empty)");
    return signalPassFailure();
  }
  for (int64_t k = 0; k < stages.count; ++k)
    if (module.lookupSymbol("stage_" + std::to_string(k))) {
      module.emitError("cannot split @main: symbol @stage_") << k << " already exists";
      return signalPassFailure();
    }
  if (failed(assignOps(main, stages, plan.getPartitioned())) ||
      failed(findCrossings(main, stages)))
    return signalPassFailure();
  std::vector<bool> used(size_t(stages.count), false);
  for (auto [op, stage] : stages.stageOf)
    used[stage] = used[stage] || !isa<snn::ParameterOp>(op);
  for (int64_t k = 0; k < stages.count; ++k)
    if (!used[k]) {
      main.emitError("logical stage ")
          << k << " has no ops: the pipeline layout " << layoutText(plan.getPpLayout())
          << " leaves it empty";
      return signalPassFailure();
    }
  for (int64_t k = 0; k < stages.count; ++k)
    buildStage(main, stages, k);
  main.erase();
  snn::shardapi::eraseAnnotations(module); // the grid: the mesh lives in #snn.plan
}

} // namespace
