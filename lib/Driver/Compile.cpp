//===- Compile.cpp - The compile pipeline as a library call ---------------===//
#include "snn/Driver/Compile.h"

#include "snn/Conversion/ONNXToSNN/ONNXToSNN.h"
#include "snn/Dialect/SNN/Interfaces/ShardingInterfaceImpl.h"
#include "snn/Dialect/SNN/Transforms/Passes.h"
#include "snn/Dialect/SNN/Transforms/PlanReport.h"
#include "snn/Export/ArtifactExporter.h"
#include "snn/Import/Model/ImportModel.h"
#include "snn/Support/ToolDiagnostics.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace snn;
using namespace snn::driver;

namespace {

/// Sets a pass's options from their text; a bad option becomes a diagnostic line.
bool initializePass(mlir::Pass &pass, const std::string &options, const char *flag,
                    std::vector<std::string> &diagnostics) {
  std::string message;
  auto report = [&](const llvm::Twine &text) {
    message = text.str();
    return mlir::failure();
  };
  if (succeeded(pass.initializeOptions(options, report)))
    return true;
  diagnostics.push_back(std::string("error: ") + flag + " options '" + options +
                        "': " + (message.empty() ? "not understood" : message));
  return false;
}

/// The import pipeline, and with `request.plan` the planning passes and what follows a plan
/// (partition, stage split), as snn-compile runs them.
bool buildPipeline(mlir::PassManager &pm, const CompileRequest &request,
                   std::vector<std::string> &diagnostics) {
  buildImportPipeline(pm);
  if (!request.plan)
    return true;
  std::unique_ptr<mlir::Pass> analyze = createAnalyzeModel();
  std::unique_ptr<mlir::Pass> plan = createPlanParallelism();
  std::string analyzeOptions = "summary=none " + request.analyzeOptions;
  if (!initializePass(*analyze, analyzeOptions, "snn-analyze", diagnostics) ||
      !initializePass(*plan, request.planOptions, "snn-plan", diagnostics))
    return false;
  pm.addPass(std::move(analyze));
  pm.addPass(std::move(plan));
  buildPartitionPipeline(pm);
  return true;
}

void explain(mlir::ModuleOp module, CompileResult &result) {
  llvm::raw_string_ostream text(result.explanationText);
  printExplanation(module, text);
  result.explanationJSON = llvm::formatv("{0:2}", explanationJSON(module)).str();
}

} // namespace

CompileResult snn::driver::compileModel(const CompileRequest &request) {
  CompileResult result;
  mlir::DialectRegistry registry;
  registerShardingInterfaceModels(registry);
  mlir::MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    result.diagnostics.push_back(formatToolDiagnostic(diag));
    return mlir::success();
  });

  NIRImportOptions nir;
  nir.dt = request.nirDt;
  nir.steps = request.nirSteps;
  auto module = importModelFile(&context, request.modelPath, nir);
  if (!module)
    return result;
  mlir::PassManager pm(&context);
  if (!buildPipeline(pm, request, result.diagnostics) || failed(pm.run(*module)))
    return result;
  if (request.plan)
    explain(*module, result);
  if (!request.artifactDir.empty() && failed(exportArtifact(*module, request.artifactDir)))
    return result;
  result.succeeded = true;
  return result;
}
