//===- LayerAttributes.h - Parsed attributes of fusable layers ---*- C++ -*-===//
//
// The attributes of batch_norm, the neurons and max_pool2d, validated once
// by the same code whether the op runs alone (LayerOps.cpp, NeuronOps.cpp) or
// inside a spiking block (SpikingBlockFusion.cpp). Each throws Error naming
// the attribute on a bad value.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_LAYERATTRIBUTES_H
#define SNN_RUNTIME_EXECUTION_LAYERATTRIBUTES_H

#include "snn/Runtime/Execution/Graph.h"
#include "snn/Runtime/Kernels/MaxPoolKernels.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <optional>

namespace snn::runtime {

struct BatchNormAttributes {
  double eps = 1e-5;
  double momentum = 0.1;
};

/// A batch_norm node's eps and momentum (PyTorch's defaults when absent).
BatchNormAttributes batchNormAttributesOf(const Node &node);

/// An if_node, lif_node or plif_node's configuration (SpikingJelly's
/// defaults when absent).
NeuronConfig neuronConfigOf(const Node &node);

/// A max_pool2d node's window when the runtime's pool kernel takes it
/// (MaxPoolKernels.h); nullopt for a padded, dilated or ceil-mode pool, which
/// ATen's max_pool2d runs.
std::optional<MaxPoolWindow> maxPoolKernelWindowOf(const Node &node);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_LAYERATTRIBUTES_H
