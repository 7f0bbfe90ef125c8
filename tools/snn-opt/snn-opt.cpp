// snn-opt: runs snn passes on MLIR files (the developer tool lit tests drive).
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "snn/Conversion/Passes.h"
#include "snn/Dialect/SNN/IR/SNNDialect.h"
#include "snn/Dialect/SNN/Interfaces/ShardingInterfaceImpl.h"
#include "snn/Dialect/SNN/Transforms/Passes.h"
#include "snn/Support/ShardAPI.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<snn::SNNDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  // Planned IR carries shard.grid / shard.sharding / shard.shard annotations.
  snn::shardapi::registerShardDialect(registry);
  // ...which upstream's --sharding-propagation / --shard-partition can take further.
  snn::registerShardingInterfaceModels(registry);
  snn::shardapi::registerShardPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  snn::registerSNNConversionPasses();
  snn::registerSNNPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "SpikeMesh optimizer driver\n", registry));
}
