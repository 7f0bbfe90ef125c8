//===- Plan.cpp - --snn-plan ----------------------------------------------===//
//
// Options -> a planner request; IR -> the planner's model (the bridge); the planner's
// choice -> `snn.plan`, a `shard.grid` and per-tensor shardings. Every way the request can
// be wrong is a diagnostic: on the op it is about when there is one, else on the module.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "snn/Dialect/SNN/Transforms/ModelAnalysis.h"
#include "snn/Dialect/SNN/Transforms/PlanReport.h"
#include "snn/Dialect/SNN/Transforms/PlannerBridge.h"
#include "snn/Dialect/SNN/Transforms/ShardAnnotation.h"
#include "snn/Planner/DeviceCalibration.h"
#include "snn/Planner/Recommender.h"
#include "snn/Planner/Units.h"
#include "snn/Support/ShardAPI.h"

namespace snn {
#define GEN_PASS_DEF_PLANPARALLELISM
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"
} // namespace snn

using namespace mlir;
namespace pl = snn::planner;

namespace {

class PlanParallelismPass : public snn::impl::PlanParallelismBase<PlanParallelismPass> {
public:
  using PlanParallelismBase::PlanParallelismBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    PlanParallelismBase::getDependentDialects(registry);
    snn::shardapi::registerShardDialect(registry);
  }

  void runOnOperation() override;

  /// Every option of this pass shares one llvm::cl sub-command: reach it through one.
  const snn::CommandLineOptions &commandLineOptions() {
    return (*objective.Subs.begin())->OptionsMap;
  }

private:
  FailureOr<pl::PlanRequest> buildRequest();
  LogicalResult readDeviceProfile(pl::Hardware &hardware);
  FailureOr<snn::ModelAnalysis> currentAnalysis();
  LogicalResult writeOutputs();

  /// Emits a planner error on the op it names, or on the module.
  LogicalResult fail(const pl::Error &error, const snn::BridgedModel *bridged = nullptr) {
    if (bridged && error.opIndex >= 0 && error.opIndex < int(bridged->ops.size()))
      return bridged->ops[error.opIndex]->emitError(error.message);
    return getOperation().emitError(error.message);
  }

  template <typename T, typename Parse>
  LogicalResult parse(const std::string &text, Parse parser, T &out) {
    auto result = parser(text);
    if (!result)
      return fail(result.error());
    out = *result;
    return success();
  }
};

FailureOr<pl::PlanRequest> PlanParallelismPass::buildRequest() {
  pl::PlanRequest request;
  request.objective = objective;
  request.forced = pl::modeRequest(mode);
  if (failed(parse(topology, pl::parseTopology, request.topology)))
    return failure();
  if (!memoryBudget.empty() && failed(parse(memoryBudget, pl::parseByteSize,
                                            request.memoryBudget)))
    return failure();
  if (!ppSchedule.empty()) {
    pl::Schedule schedule;
    if (failed(parse(ppSchedule, pl::parseSchedule, schedule)))
      return failure();
    request.ppSchedule = schedule;
  }
  if (ppMicrobatches < 0 || worldSize < 0) {
    (void)fail(pl::makeError(ppMicrobatches < 0 ? "pipeline microbatches must not be negative"
                                                : "world size must not be negative"));
    return failure();
  }
  request.batchSize = batchSize;
  request.features = {experimentalConvTP, allowPipeline, allowZero};
  request.expectedWorldSize = worldSize;
  request.useCostModel = costModel;
  request.ppLayout = ppLayout;
  request.ppMicrobatches = ppMicrobatches;
  request.ppVirtualStages = ppVirtualStages;
  request.ppDelayWgrad = ppDelayWgrad;
  request.ppMemoptStages.assign(ppMemoptStages.begin(), ppMemoptStages.end());
  request.memoptRatio = memoptRatio;
  if (!(deviceGflops > 0) || !(linkGBps > 0) || !(latencyUs >= 0)) {
    (void)fail(pl::makeError("device-gflops and link-gbps must be positive and latency-us not "
                             "negative"));
    return failure();
  }
  request.hardware.flopsPerSecond = deviceGflops * 1e9;
  request.hardware.linkBytesPerSecond = linkGBps * 1e9;
  request.hardware.latencySeconds = latencyUs * 1e-6;
  if (optimizerStates < 0 || optimizerStates > 2) {
    (void)fail(pl::makeError("optimizer-states must be 0 (SGD), 1 (SGD with momentum) or 2 "
                             "(Adam, AdamW), got " + std::to_string(optimizerStates)));
    return failure();
  }
  request.hardware.optimizerStatesPerParam = int(optimizerStates);
  if (failed(readDeviceProfile(request.hardware)))
    return failure();
  return request;
}

/// device-profile: the measured machine replaces the constants. A profile of another
/// machine would mislead the choice, so it is refused unless asked for.
LogicalResult PlanParallelismPass::readDeviceProfile(pl::Hardware &hardware) {
  if (deviceProfile.empty())
    return success();
  std::string error;
  std::optional<snn::schema::DeviceProfile> profile =
      snn::schema::tryReadDeviceProfile(deviceProfile, error);
  if (!profile)
    return fail(pl::makeError(error));
  // The built-in profile is the reference machine kind's by design (docs/planner.md).
  bool builtin = deviceProfile == snn::schema::kBuiltinDeviceProfile;
  std::string difference =
      snn::schema::machineDifference(profile->machine, snn::schema::thisMachine());
  if (!difference.empty() && !deviceProfileAnyMachine && !builtin)
    return fail(pl::makeError(
        deviceProfile + ": " + difference +
        "; its times describe that machine (rerun snn-run calibrate here, or pass "
        "--device-profile-any-machine to plan for the machine it measured)"));
  hardware.calibration = pl::calibrationFromProfile(*profile, deviceProfile);
  return success();
}

/// The stored analysis (re-derived from its roots), or a fresh one over the whole model.
/// Conv TP asked of the plan extends the analysis, so candidates and plan agree.
FailureOr<snn::ModelAnalysis> PlanParallelismPass::currentAnalysis() {
  ModuleOp module = getOperation();
  snn::AnalysisOptions options;
  auto stored = module->getAttrOfType<snn::AnalysisAttr>(snn::kAnalysisAttrName);
  if (stored)
    options = snn::storedAnalysisOptions(stored);
  bool convTP = options.experimentalConvTP || experimentalConvTP;
  FailureOr<snn::ModelAnalysis> analysis = snn::analyzeModel(module, options.roots, convTP);
  if (failed(analysis))
    return failure();
  if (!stored || convTP != options.experimentalConvTP)
    module->setAttr(snn::kAnalysisAttrName, snn::analysisToAttribute(&getContext(), *analysis));
  return analysis;
}

LogicalResult PlanParallelismPass::writeOutputs() {
  ModuleOp module = getOperation();
  if (!explain.empty() &&
      failed(snn::writeReport(explain, module.getLoc(), [&](llvm::raw_ostream &os) {
        snn::printExplanation(module, os);
      })))
    return failure();
  if (!planJSON.empty())
    return snn::writeReport(planJSON, module.getLoc(), [&](llvm::raw_ostream &os) {
      os << llvm::formatv("{0:2}", snn::explanationJSON(module)) << "\n";
    });
  return success();
}

void PlanParallelismPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (module->hasAttr(snn::kPlanAttrName)) {
    module.emitError("module already has a plan (snn.plan): plan the unplanned IR");
    return signalPassFailure();
  }
  FailureOr<pl::PlanRequest> request = buildRequest();
  if (failed(request))
    return signalPassFailure();
  FailureOr<snn::ModelAnalysis> analysis = currentAnalysis();
  if (failed(analysis))
    return signalPassFailure();
  request->features.experimentalConvTP = analysis->experimentalConvTP;
  FailureOr<snn::BridgedModel> bridged = snn::bridgeModel(module, *analysis);
  if (failed(bridged))
    return signalPassFailure();
  pl::Result<pl::Plan> plan = pl::recommend(bridged->input, *request);
  if (!plan) {
    (void)fail(plan.error(), &*bridged);
    return signalPassFailure();
  }
  if (failed(snn::annotatePlan(module, *bridged, plan.value())))
    return signalPassFailure();
  module->setAttr(snn::kPlanAttrName, snn::planToAttribute(&getContext(), *plan, *request,
                                                           *analysis, *bridged));
  if (failed(writeOutputs()))
    return signalPassFailure();
}

} // namespace

const snn::CommandLineOptions &snn::planParallelismOptions(Pass &pass) {
  return static_cast<PlanParallelismPass &>(pass).commandLineOptions();
}
