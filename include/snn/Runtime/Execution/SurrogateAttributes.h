//===- SurrogateAttributes.h - A neuron node's surrogate --------*- C++ -*-===//
#ifndef SNN_RUNTIME_EXECUTION_SURROGATEATTRIBUTES_H
#define SNN_RUNTIME_EXECUTION_SURROGATEATTRIBUTES_H

#include "snn/Runtime/Autograd/SurrogateSpikeAutograd.h"
#include "snn/Runtime/Execution/NodeAttributes.h"

namespace snn::runtime {

/// A neuron node's `surrogate` (`defaultName` when absent), `alpha` and `beta`
/// (the surrogate's defaults when absent), checked against the schema's surrogate
/// table; an unknown name or a parameter out of range fails naming the node.
SpikeSurrogate readSurrogate(const NodeAttributes &attributes, const char *defaultName);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_SURROGATEATTRIBUTES_H
