//===- PipelineUnits.h - The blocks a pipeline's stages are made of -*- C++ -*-===//
//
// The stage units the compiler derives from module paths: a pipeline layout counts units
// per stage (Pipeline.h), never cuts one.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_PIPELINEUNITS_H
#define SNN_PLANNER_PIPELINEUNITS_H

#include "snn/Planner/ModelInfo.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snn::planner {

/// A stage unit: one top-level block of the model (ops in program order).
struct PipelineUnit {
  std::string name;
  std::vector<int> ops;
};

/// Groups ops into units by the first component of their module path, after dropping a
/// prefix every module op shares (a model wrapping everything in one Sequential). Ops that
/// are not modules (ONNX names of functional ops such as "add" or "mean": no dot, no
/// parameters, not a neuron) join the unit before them, or the first unit. With fewer than
/// `minUnits` such blocks, every block is split into its children (one path component
/// deeper), repeatedly, until there are enough or the paths end.
std::vector<PipelineUnit> pipelineUnits(const ModelInfo &model, int64_t minUnits = 0);


} // namespace snn::planner

#endif // SNN_PLANNER_PIPELINEUNITS_H
