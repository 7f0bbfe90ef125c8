#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

void snn::buildPartitionPipeline(mlir::OpPassManager &pm) {
  // Each does nothing unless the plan is its kind (tp or fsdp_tp for the first two, pp for
  // the split), so any plan can run them all.
  pm.addPass(createPartitionTensorParallel());
  pm.addPass(createInsertBackwardCollectives());
  pm.addPass(createSplitPipelineStages());
}
