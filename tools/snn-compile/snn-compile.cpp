// snn-compile: the user-facing driver. model.onnx -> import -> legalize -> artifact DIR.
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

#include "snn/Dialect/SNN/Transforms/Passes.h"
#include "snn/Export/ArtifactExporter.h"
#include "snn/Import/ONNX/ONNXImporter.h"
#include "snn/Support/ToolCommandLine.h"
#include "snn/Support/ToolDiagnostics.h"

using namespace llvm;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"));
static cl::opt<std::string> outputDir("o", cl::desc("Artifact directory to write"),
                                      cl::value_desc("DIR"));
static cl::opt<std::string> emitMLIR("emit-mlir",
                                     cl::desc("Also write the compiled snn IR to this file"),
                                     cl::value_desc("FILE"), cl::init(""));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerPassManagerCLOptions();
  if (!snn::parseToolCommandLine(argc, argv, "SpikeMesh compiler: ONNX SNN model -> runtime artifact\n"))
    return 1;
  if (inputFile.empty() || outputDir.empty()) {
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
  if (failed(pm.run(*module)))
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
  if (failed(snn::exportArtifact(*module, outputDir)))
    return 1;
  errs() << "snn-compile: wrote " << outputDir << "\n";
  return 0;
}
