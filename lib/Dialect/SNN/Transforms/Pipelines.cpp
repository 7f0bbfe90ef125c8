#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

void snn::buildImportPipeline(mlir::OpPassManager &pm) {
  pm.addNestedPass<mlir::func::FuncOp>(createLegalizeONNX());
  // Shape constants of the folds and the Dropout ratio are dead after legalization.
  pm.addPass(mlir::createCanonicalizerPass());
}

void snn::buildPartitionPipeline(mlir::OpPassManager &pm) {
  // Both do nothing unless the plan is tp or fsdp_tp (partitioned), so any plan can run them.
  pm.addPass(createPartitionTensorParallel());
  pm.addPass(createInsertBackwardCollectives());
}
