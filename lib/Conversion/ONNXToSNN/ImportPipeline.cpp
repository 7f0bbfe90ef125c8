#include "snn/Conversion/ONNXToSNN/ONNXToSNN.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

void snn::buildImportPipeline(mlir::OpPassManager &pm) {
  pm.addNestedPass<mlir::func::FuncOp>(createLegalizeONNX());
  // Shape constants of the folds and the Dropout ratio are dead after legalization.
  pm.addPass(mlir::createCanonicalizerPass());
}
