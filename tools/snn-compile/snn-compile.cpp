// snn-compile: the user-facing driver. model.onnx -> import -> legalize [-> analyze -> plan]
// -> artifact DIR. Without planning flags it behaves exactly as before planning existed.
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

#include <memory>

#include "snn/Dialect/SNN/Transforms/PlanReport.h"
#include "snn/Dialect/SNN/Transforms/Passes.h"
#include "snn/Export/ArtifactExporter.h"
#include "snn/Import/ONNX/ONNXImporter.h"
#include "snn/Support/ToolCommandLine.h"
#include "snn/Support/ToolDiagnostics.h"

using namespace llvm;

static cl::OptionCategory general("Output");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"), cl::cat(general));
static cl::opt<std::string> outputDir("o", cl::desc("Artifact directory to write"),
                                      cl::value_desc("DIR"), cl::cat(general));
static cl::opt<std::string> emitMLIR("emit-mlir",
                                     cl::desc("Also write the compiled snn IR to this file"),
                                     cl::value_desc("FILE"), cl::init(""), cl::cat(general));

// Planning flags: any of them runs --snn-analyze and --snn-plan (docs/planner.md).
static cl::OptionCategory planning("Planning (any of these runs analyze and plan)");
static cl::opt<std::string> topology("topology",
                                     cl::desc("Mesh dims, e.g. dp=2,tp=2 (product = world size)"),
                                     cl::value_desc("dims"), cl::cat(planning));
static cl::opt<std::string> objective("objective", cl::desc("speed, memory or capacity"),
                                      cl::init("speed"), cl::cat(planning));
static cl::opt<int64_t> batchSize("batch-size", cl::desc("Global batch size to plan for"),
                                  cl::init(0), cl::cat(planning));
static cl::opt<std::string> mode("mode",
                                 cl::desc("Force a mode: none, dp, zero, fsdp, tp, fsdp_tp, pp"),
                                 cl::cat(planning));
static cl::list<std::string> roots("roots",
                                   cl::desc("Module paths to search for tensor-parallel "
                                            "candidates (comma-separated)"),
                                   cl::CommaSeparated, cl::cat(planning));
static cl::opt<bool> experimentalConvTP("experimental-conv-tp",
                                        cl::desc("Allow conv2d channel splits"),
                                        cl::cat(planning));
static cl::opt<bool> allowPipeline("allow-pipeline",
                                   cl::desc("Let the planner choose pipeline parallelism"),
                                   cl::cat(planning));
static cl::opt<bool> allowZero("allow-zero",
                               cl::desc("Let the planner choose ZeRO-1 optimizer sharding"),
                               cl::cat(planning));
static cl::opt<std::string> memoryBudget("memory-budget",
                                         cl::desc("Per-rank memory budget, e.g. 16GiB"),
                                         cl::value_desc("size"), cl::cat(planning));
static cl::opt<std::string> ppLayout("pp-layout",
                                     cl::desc("Explicit pipeline layout a|b|c (units per stage)"),
                                     cl::value_desc("layout"), cl::cat(planning));
static cl::opt<bool> explain("explain",
                             cl::desc("Print the analysis, the plan and its rationale to stdout"),
                             cl::cat(planning));
static cl::opt<std::string> explainJSON("explain-json",
                                        cl::desc("Write the analysis and the plan as JSON"),
                                        cl::value_desc("FILE"), cl::cat(planning));

static bool planningRequested() {
  // cl::list overloads unary &, hence std::addressof.
  const cl::Option *flags[] = {&topology,      &objective,     &batchSize, &mode,
                               std::addressof(roots), &experimentalConvTP, &allowPipeline,
                               &allowZero,     &memoryBudget,  &ppLayout,  &explain,
                               &explainJSON};
  for (const cl::Option *flag : flags)
    if (flag->getNumOccurrences() > 0)
      return true;
  return false;
}

static void addPlanningPasses(mlir::PassManager &pm) {
  snn::AnalyzeModelOptions analyze;
  analyze.roots.assign(roots.begin(), roots.end());
  analyze.experimentalConvTP = experimentalConvTP;
  analyze.summary = "none"; // --explain prints it with the plan
  snn::PlanParallelismOptions plan;
  plan.objective = objective;
  plan.topology = topology;
  plan.batchSize = batchSize;
  plan.mode = mode;
  plan.experimentalConvTP = experimentalConvTP;
  plan.allowPipeline = allowPipeline;
  plan.allowZero = allowZero;
  plan.memoryBudget = memoryBudget;
  plan.ppLayout = ppLayout;
  snn::buildPlanningPipeline(pm, analyze, plan);
}

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
  if (!snn::parseToolCommandLine(argc, argv, "SpikeMesh compiler: ONNX SNN model -> runtime artifact\n",
                                 {&general, &planning}))
    return 1;
  bool plan = planningRequested();
  bool explainOnly = explain || !explainJSON.empty();
  if (inputFile.empty() || (outputDir.empty() && !explainOnly)) {
    errs() << "error: usage: snn-compile MODEL.onnx -o DIR (see --help)\n";
    return 1;
  }
  mlir::MLIRContext context;
  context.printOpOnDiagnostic(false);
  snn::ToolDiagnosticHandler diagnostics(&context);

  auto module = snn::importONNXFile(&context, inputFile);
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return 1;
  snn::buildImportPipeline(pm);
  if (plan)
    addPlanningPasses(pm);
  if (failed(pm.run(*module)))
    return 1;
  if (plan && !writeExplanations(*module))
    return 1;

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
  errs() << "snn-compile: wrote " << outputDir << "\n";
  return 0;
}
