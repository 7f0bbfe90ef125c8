//===- OnnxImportFuzzer.cpp - Fuzz target: ONNX import + legalization -----===//
//
// One input = the bytes of an ONNX file. It goes through what `snn-compile`
// does first: importONNXBuffer, then the import pipeline (--snn-legalize-onnx
// and the checks after it). Diagnostics are the expected outcome for most
// inputs and are dropped; a crash, an abort ("LLVM ERROR"), a sanitizer report
// or a hang is a finding.
//
//===----------------------------------------------------------------------===//

#include "snn/Conversion/ONNXToSNN/ONNXToSNN.h"
#include "snn/Dialect/SNN/Interfaces/ShardingInterfaceImpl.h"
#include "snn/Import/ONNX/ONNXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::DialectRegistry registry;
  snn::registerShardingInterfaceModels(registry);
  // A context per input: nothing one input uniqued or registered can mask a
  // bug in the next.
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      snn::importONNXBuffer(&context, bytes, "fuzz.onnx");
  if (!module)
    return 0;
  mlir::PassManager pm(&context);
  snn::buildImportPipeline(pm);
  (void)pm.run(*module);
  return 0;
}
