#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

void snn::buildImportPipeline(mlir::OpPassManager &pm) {
  pm.addNestedPass<mlir::func::FuncOp>(createLegalizeONNX());
  // Shape constants of the folds and the Dropout ratio are dead after legalization.
  pm.addPass(mlir::createCanonicalizerPass());
}

void snn::buildPartitionPipeline(mlir::OpPassManager &pm) {
  // Each does nothing unless the plan is its kind (tp or fsdp_tp for the first two, pp for
  // the split), so any plan can run them all.
  pm.addPass(createPartitionTensorParallel());
  pm.addPass(createInsertBackwardCollectives());
  pm.addPass(createSplitPipelineStages());
}
