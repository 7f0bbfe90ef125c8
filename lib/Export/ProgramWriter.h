//===- ProgramWriter.h - @main as an ONNX program ----------------*- C++ -*-===//
//
// The exporter's ONNX side (private to lib/Export): @main's ops as nodes of the `spikemesh`
// domain, its parameters as initializers. A partitioned @main is one program per coordinate
// of the mesh axis it is partitioned over; the programs differ only in the initializers of
// the parameters it slices (`snn.all_slice` of an `snn.parameter` is no node: the program of
// coordinate i holds part i as that parameter).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_EXPORT_PROGRAMWRITER_H
#define SNN_LIB_EXPORT_PROGRAMWRITER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/Manifest.h"

#include "onnx/onnx_pb.h"

namespace snn {

/// A parameter that the program of each coordinate holds a part of. (Op handles are
/// mutable: their accessors are not const.)
struct SlicedParameter {
  mutable ParameterOp parameter;
  mutable AllSliceOp slice;
};

/// The programs of a partitioned @main: which parameters are sliced, over which axis.
struct Partitioning {
  /// The mesh axis the programs are per coordinate of, and its size; "" and 1 when the
  /// module is not partitioned (one program).
  std::string meshAxis;
  int64_t parts = 1;
  llvm::DenseMap<mlir::Operation *, SlicedParameter> slicedBy; ///< keyed by the all_slice
};

/// Finds the sliced parameters of `func`. A parameter sliced over another axis than
/// `meshAxis`, sliced twice, or used both sliced and whole is an error on it.
mlir::FailureOr<Partitioning> findSlicedParameters(mlir::func::FuncOp func,
                                                   llvm::StringRef meshAxis, int64_t parts);

/// Writes the program of coordinate 0 into `model` and the boundary and parameters into
/// `manifest`.
mlir::LogicalResult writeProgram(mlir::func::FuncOp func, const Partitioning &partitioning,
                                 onnx::ModelProto &model, schema::Manifest &manifest);

/// `model` (coordinate 0's program) with the initializers of the sliced parameters replaced
/// by their parts for coordinate `part`.
onnx::ModelProto programForPart(const onnx::ModelProto &model, const Partitioning &partitioning,
                                int64_t part);

/// Writes the mesh coordinate of the ranks that run `model` into its metadata
/// (schema::kMeshCoordinateKey): `coordinate` holds (axis name, index) pairs in mesh order.
void setMeshCoordinate(onnx::ModelProto &model,
                       const std::vector<std::pair<std::string, int64_t>> &coordinate);

} // namespace snn

#endif
