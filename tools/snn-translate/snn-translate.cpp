// snn-translate: ONNX -> snn IR (--import-onnx), NIR -> snn IR (--import-nir) and snn IR ->
// runtime artifact (--export-artifact). Developer tool; users normally run snn-compile.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include "snn/Dialect/SNN/IR/SNNDialect.h"
#include "snn/Export/ArtifactExporter.h"
#include "snn/Import/NIR/NIRFlags.h"
#include "snn/Import/ONNX/ONNXImporter.h"
#include "snn/Support/ShardAPI.h"
#include "snn/Support/ToolCommandLine.h"
#include "snn/Support/ToolDiagnostics.h"

using namespace llvm;

namespace {
enum class Mode { ImportONNX, ImportNIR, ExportArtifact };

cl::OptionCategory toolOptions("snn-translate options");

cl::opt<Mode> mode(cl::desc("Translation:"), cl::cat(toolOptions),
                   cl::values(clEnumValN(Mode::ImportONNX, "import-onnx",
                                         "ONNX model -> snn IR (generic, before legalization)"),
                              clEnumValN(Mode::ImportNIR, "import-nir",
                                         "NIR graph -> snn IR (legal snn ops)"),
                              clEnumValN(Mode::ExportArtifact, "export-artifact",
                                         "legal snn IR -> artifact directory (-o DIR)")));
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input file>"), cl::cat(toolOptions));
cl::opt<std::string> outputFile("o", cl::desc("Output file (import) or directory (export)"),
                                cl::value_desc("path"), cl::init("-"), cl::cat(toolOptions));
cl::opt<bool> verifyDiagnostics("verify-diagnostics",
                                cl::desc("Check expected-* diagnostics in the MLIR input"),
                                cl::init(false), cl::cat(toolOptions));
snn::NIRFlags nirFlags(toolOptions);

int import(mlir::MLIRContext &context) {
  snn::ToolDiagnosticHandler diagnostics(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (mode == Mode::ImportNIR) {
    snn::NIRImportOptions options;
    std::string error;
    if (!nirFlags.read(options, error)) {
      errs() << "error: " << error << "\n";
      return 1;
    }
    module = snn::importNIRFile(&context, inputFile, options);
  } else {
    module = snn::importONNXFile(&context, inputFile);
  }
  if (!module)
    return 1;
  std::string error;
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output) {
    errs() << "error: " << error << "\n";
    return 1;
  }
  module->print(output->os());
  output->keep();
  return 0;
}

int exportArtifact(mlir::MLIRContext &context) {
  if (outputFile == "-") {
    errs() << "error: --export-artifact needs -o DIR\n";
    return 1;
  }
  std::string error;
  auto input = mlir::openInputFile(inputFile, &error);
  if (!input) {
    errs() << "error: " << error << "\n";
    return 1;
  }
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  if (verifyDiagnostics) {
    mlir::SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context);
    auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (module)
      (void)snn::exportArtifact(*module, outputFile);
    return failed(handler.verify()) ? 1 : 0;
  }
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  return failed(snn::exportArtifact(*module, outputFile)) ? 1 : 0;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  if (!snn::parseToolCommandLine(argc, argv, "SpikeMesh translation tool\n", {&toolOptions}))
    return 1;
  if (mode.getNumOccurrences() == 0 || inputFile.empty()) {
    errs() << "error: usage: snn-translate --import-onnx|--import-nir|--export-artifact INPUT [-o "
              "OUTPUT] "
              "(see --help)\n";
    return 1;
  }
  mlir::MLIRContext context;
  context.printOpOnDiagnostic(false);
  context.loadDialect<snn::SNNDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  // Planned IR (snn-opt --snn-plan) carries shard annotations; the exporter skips them.
  mlir::DialectRegistry registry;
  snn::shardapi::registerShardDialect(registry);
  context.appendDialectRegistry(registry);
  return mode == Mode::ExportArtifact ? exportArtifact(context) : import(context);
}
