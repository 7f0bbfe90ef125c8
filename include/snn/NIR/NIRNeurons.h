//===- NIRNeurons.h - NIR's neuron primitives as step programs --*- C++ -*-===//
//
// NIR gives each neuron as continuous-time equations. This is their forward-Euler
// discretisation with a time step dt, written as the description of an `snn.neuron`
// (docs/neuron-programs.md): the same step program the exporter's neurons use, so every NIR
// neuron trains with BPTT on the described-neuron kernels, and a LIF whose leak and reset
// potentials agree and whose r is 1 is SpikingJelly's LIF (the canonicalizer makes it
// snn.lif_node).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_NIR_NIRNEURONS_H
#define SNN_NIR_NIRNEURONS_H

#include "snn/NIR/NIRGraph.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::nir {

/// The parts of a described neuron (the attributes of `snn.neuron` of the same names).
struct NeuronParts {
  std::vector<std::string> states, constants, charge, update;
  std::optional<std::string> fire; // none: the neuron does not spike (LI, Integrator)
  std::string reset = "none";
  std::string output = "s";
  /// Parameters with one value per channel (dim 0 of the neurons' shape): operands `[C]` of
  /// the statements that name them, with their values.
  std::vector<std::string> operands;
  std::vector<std::vector<double>> operandValues;
};

/// Whether `type` is a NIR neuron primitive this file discretises.
bool isNeuronPrimitive(const std::string &type);

/// The step program of neuron node `node` whose neurons have the per-sample shape `shape`,
/// stepped by `dt` (none: the graph did not say and no --nir-dt was given), or a one-line
/// error (a parameter missing, of another shape, not finite, varying within a channel or, for
/// the membrane's starting value, between channels; a time step needed but unknown).
struct NeuronPartsResult {
  NeuronParts parts;
  std::string error;
};
/// `general`: the general forms of the charge even where the short ones would do (what a
/// description with per-channel operands holds, one channel of it).
NeuronPartsResult describeNeuronPrimitive(const NirNode &node, const std::vector<int64_t> &shape,
                                          std::optional<double> dt, bool general = false);

/// The NIR neuron node whose step program, stepped by `dt`, is `parts` (without operands:
/// a per-channel description is matched one channel at a time): the inverse of
/// describeNeuronPrimitive, for writing a compiled model back to NIR. Its parameters are
/// scalars (shape []); its name is empty. None when no primitive steps that way.
std::optional<NirNode> matchNeuronPrimitive(const NeuronParts &parts, double dt);

} // namespace snn::nir

#endif // SNN_NIR_NIRNEURONS_H
