//===- Analyze.cpp - --snn-analyze ----------------------------------------===//
//
// Reports what the planner will work with before it plans: neurons, TP candidates under
// the roots, layers that cannot be split. The findings live on the module as
// `snn.analysis` so --snn-plan and the exporter read the same thing the user saw.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "snn/Dialect/SNN/Transforms/ModelAnalysis.h"
#include "snn/Dialect/SNN/Transforms/PlanReport.h"

namespace snn {
#define GEN_PASS_DEF_ANALYZEMODEL
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"
} // namespace snn

using namespace mlir;

namespace {

class AnalyzeModelPass : public snn::impl::AnalyzeModelBase<AnalyzeModelPass> {
public:
  using AnalyzeModelBase::AnalyzeModelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::vector<std::string> rootList(roots.begin(), roots.end());
    FailureOr<snn::ModelAnalysis> analysis =
        snn::analyzeModel(module, rootList, experimentalConvTP);
    if (failed(analysis))
      return signalPassFailure();
    snn::AnalysisAttr attr = snn::analysisToAttribute(&getContext(), *analysis);
    module->setAttr(snn::kAnalysisAttrName, attr);
    if (failed(report(attr, module.getLoc())))
      return signalPassFailure();
  }

  /// Every option of this pass shares one llvm::cl sub-command: reach it through one.
  const snn::CommandLineOptions &commandLineOptions() {
    return (*roots.Subs.begin())->OptionsMap;
  }

private:
  LogicalResult report(snn::AnalysisAttr attr, Location loc) {
    if (summary == "stderr")
      snn::printAnalysis(attr, llvm::errs());
    else if (summary != "none" &&
             failed(snn::writeReport(summary, loc, [&](llvm::raw_ostream &os) {
               snn::printAnalysis(attr, os);
             })))
      return failure();
    if (analysisJSON.empty())
      return success();
    return snn::writeReport(analysisJSON, loc, [&](llvm::raw_ostream &os) {
      os << llvm::formatv("{0:2}", snn::analysisToJSON(attr)) << "\n";
    });
  }
};

} // namespace

const snn::CommandLineOptions &snn::analyzeModelOptions(Pass &pass) {
  return static_cast<AnalyzeModelPass &>(pass).commandLineOptions();
}
