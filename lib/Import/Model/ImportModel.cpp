//===- ImportModel.cpp - A model file of either format as snn IR ----------===//
#include "snn/Import/Model/ImportModel.h"

#include "snn/Import/ONNX/ONNXImporter.h"
#include "snn/NIR/NIRGraph.h"

mlir::OwningOpRef<mlir::ModuleOp> snn::importModelFile(mlir::MLIRContext *context,
                                                       llvm::StringRef path,
                                                       const NIRImportOptions &nir) {
  if (nir::isHDF5File(path.str()))
    return importNIRFile(context, path, nir);
  return importONNXFile(context, path);
}
