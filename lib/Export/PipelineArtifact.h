//===- PipelineArtifact.h - A split pp module as stage programs ---*- C++ -*-===//
//
// Private to lib/Export. A pp plan's module after --snn-split-pipeline-stages holds one
// function per logical stage (`@stage_<k>`, `snn.pp_stage = k`); its artifact is one program
// per stage, run by the ranks whose pp coordinate is k mod the pp size
// (docs/artifact-format.md, "Pipeline programs").
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_EXPORT_PIPELINEARTIFACT_H
#define SNN_LIB_EXPORT_PIPELINEARTIFACT_H

#include "mlir/IR/BuiltinOps.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/Manifest.h"

#include "onnx/onnx_pb.h"

#include <vector>

namespace snn {

/// Every rank whose row-major coordinate on mesh dimension `dim` is `coordinate`.
std::vector<int> ranksAt(const schema::MeshSpec &mesh, int64_t dim, int64_t coordinate);

/// The stage programs of `module` (a pp plan) and the manifest's programs, parameters (each
/// with its stage), boundary, mesh and plan. A module whose @main is not split yet, stage
/// functions that do not match the plan's logical stages, and a mesh without a pp axis
/// are errors.
mlir::LogicalResult buildPipelineArtifact(mlir::ModuleOp module, PlanAttr plan,
                                          std::vector<onnx::ModelProto> &programs,
                                          schema::Manifest &manifest);

} // namespace snn

#endif
