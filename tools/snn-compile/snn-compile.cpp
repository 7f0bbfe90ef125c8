// snn-compile: the user-facing driver. model.onnx or model.nir -> import -> legalize [-> analyze ->
// plan
// -> partition (tp, fsdp_tp) or split into stages (pp)] -> artifact DIR. Without planning
// flags it behaves exactly as before planning existed.
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

#include <memory>

#include "snn/Conversion/ONNXToSNN/ONNXToSNN.h"
#include "snn/Dialect/SNN/Interfaces/ShardingInterfaceImpl.h"
#include "snn/Dialect/SNN/Transforms/Passes.h"
#include "snn/Dialect/SNN/Transforms/PlanReport.h"
#include "snn/Export/ArtifactExporter.h"
#include "snn/Import/Model/ImportModel.h"
#include "snn/Import/NIR/NIRFlags.h"
#include "snn/Schema/UserDeviceProfile.h"
#include "snn/Support/MirroredOptions.h"
#include "snn/Support/ToolCommandLine.h"
#include "snn/Support/ToolDiagnostics.h"

using namespace llvm;

static cl::OptionCategory general("Output");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx | model.nir>"),
                                      cl::cat(general));
static cl::opt<std::string> outputDir("o", cl::desc("Artifact directory to write"),
                                      cl::value_desc("DIR"), cl::cat(general));
static cl::opt<std::string> emitMLIR("emit-mlir",
                                     cl::desc("Also write the compiled snn IR to this file"),
                                     cl::value_desc("FILE"), cl::init(""), cl::cat(general));
static cl::OptionCategory nirInput("NIR input (a file with HDF5's signature, whatever its name)");
static snn::NIRFlags nirFlags(nirInput);

// Planning flags: the options of --snn-analyze and --snn-plan themselves (Passes.td), offered
// as top-level flags; any of them runs both passes (docs/planner.md). The passes' own report
// options give way to --explain / --explain-json, and the world size is the topology's.
static cl::OptionCategory planning("Planning (any of these runs analyze and plan)");
static cl::opt<bool> explain("explain",
                             cl::desc("Print the analysis, the plan and its rationale to stdout"),
                             cl::cat(planning));
static cl::opt<std::string> explainJSON("explain-json",
                                        cl::desc("Write the analysis and the plan as JSON"),
                                        cl::value_desc("FILE"), cl::cat(planning));

namespace {

/// The planning passes, created before the command line is parsed so that their options can
/// be offered as flags and set directly.
struct PlanningPasses {
  std::unique_ptr<mlir::Pass> analyze = snn::createAnalyzeModel();
  std::unique_ptr<mlir::Pass> plan = snn::createPlanParallelism();
  snn::MirroredOptions flags{planning};

  PlanningPasses() {
    flags.add(snn::analyzeModelOptions(*analyze), {"summary", "analysis-json"});
    flags.add(snn::planParallelismOptions(*plan), {"explain", "plan-json", "world-size"});
  }

  bool requested() const { return flags.anyGiven() || explain || !explainJSON.empty(); }

  /// Why the plan's times are not this machine's, said once the plan is made.
  std::string uncalibrated;

  /// Without --device-profile (or the constants it replaces) the plan uses this user's
  /// profile of this machine; without one it says once that its times are uncalibrated.
  bool useUserDeviceProfile() {
    for (const char *flag : {"device-profile", "device-gflops", "link-gbps", "latency-us"}) {
      cl::Option *option = cl::getRegisteredOptions().lookup(flag);
      if (option && option->getNumOccurrences())
        return true;
    }
    snn::schema::UserDeviceProfile user = snn::schema::userDeviceProfile();
    uncalibrated = user.warning;
    if (user.path.empty())
      return true;
    auto report = [&](const Twine &message) {
      errs() << "error: --device-profile " << user.path << ": " << message << "\n";
      return failure();
    };
    return succeeded(plan->initializeOptions("device-profile={" + user.path + "}", report));
  }

  /// --explain prints the analysis with the plan, not on its own. A tp or fsdp_tp plan is
  /// partitioned right away, so the explanation counts the partitioned program's collectives
  /// and the export writes its per-rank programs; a pp plan is split into its stages.
  bool addTo(mlir::PassManager &pm) {
    auto ignore = [](const Twine &) { return failure(); };
    if (!useUserDeviceProfile())
      return false;
    if (failed(analyze->initializeOptions("summary=none", ignore)))
      return false;
    pm.addPass(std::move(analyze));
    pm.addPass(std::move(plan));
    snn::buildPartitionPipeline(pm);
    return true;
  }
};

} // namespace

static bool writeExplanations(mlir::ModuleOp module) {
  if (explain)
    snn::printExplanation(module, outs());
  if (explainJSON.empty())
    return true;
  return succeeded(snn::writeReport(explainJSON, module.getLoc(), [&](raw_ostream &os) {
    os << formatv("{0:2}", snn::explanationJSON(module)) << "\n";
  }));
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerPassManagerCLOptions();
  PlanningPasses planningPasses;
  if (!snn::parseToolCommandLine(argc, argv,
                                 "SpikeMesh compiler: ONNX or NIR SNN model -> runtime artifact\n",
                                 {&general, &nirInput, &planning}))
    return 1;
  bool plan = planningPasses.requested();
  bool explainOnly = explain || !explainJSON.empty();
  if (inputFile.empty() || (outputDir.empty() && !explainOnly)) {
    errs() << "error: usage: snn-compile MODEL.onnx|MODEL.nir -o DIR (see --help)\n";
    return 1;
  }
  mlir::DialectRegistry registry;
  snn::registerShardingInterfaceModels(registry);
  mlir::MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  snn::ToolDiagnosticHandler diagnostics(&context);

  snn::NIRImportOptions nirOptions;
  std::string nirError;
  if (!nirFlags.read(nirOptions, nirError)) {
    errs() << "error: " << nirError << "\n";
    return 1;
  }
  auto module = snn::importModelFile(&context, inputFile, nirOptions);
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return 1;
  snn::buildImportPipeline(pm);
  if (plan && !planningPasses.addTo(pm))
    return 1;
  if (failed(pm.run(*module)))
    return 1;
  if (plan && !writeExplanations(*module))
    return 1;
  if (plan && !planningPasses.uncalibrated.empty()) {
    outs().flush(); // after the explanation, as on a terminal
    errs() << "snn-compile: warning: " << planningPasses.uncalibrated << "\n";
  }

  if (!emitMLIR.empty()) {
    std::string error;
    auto output = mlir::openOutputFile(emitMLIR, &error);
    if (!output) {
      errs() << "error: " << error << "\n";
      return 1;
    }
    module->print(output->os());
    output->keep();
  }
  if (outputDir.empty())
    return 0; // --explain without -o: nothing to export
  if (failed(snn::exportArtifact(*module, outputDir)))
    return 1;
  outs().flush(); // the --explain text (stdout) before the status line (stderr)
  errs() << "snn-compile: wrote " << outputDir << "\n";
  return 0;
}
