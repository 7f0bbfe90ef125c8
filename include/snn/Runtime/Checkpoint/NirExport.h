//===- NirExport.h - A trained program as a NIR graph -----------*- C++ -*-===//
#ifndef SNN_RUNTIME_CHECKPOINT_NIREXPORT_H
#define SNN_RUNTIME_CHECKPOINT_NIREXPORT_H

#include "snn/Runtime/Execution/Graph.h"
#include "snn/Runtime/Execution/ParameterStore.h"

#include <string>

namespace snn::runtime {

/// Writes `program` (a whole model's program: not a tensor-parallel part or a pipeline stage)
/// with the current values of `store` to `outPath` as a NIR graph (docs/nir.md): linear as
/// Affine or Linear, conv2d as Conv2d (an all-ones depthwise one without bias as SumPool2d),
/// avg_pool2d, flatten, the named neurons and every description the NIR importer writes as
/// their primitive with its equations stepped by `dt`; add becomes two edges into one node.
/// Throws Error naming the node NIR cannot express; a failed write leaves no file.
void exportTrainedNir(const Graph &program, const ParameterStore &store, double dt,
                      const std::string &outPath);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_NIREXPORT_H
