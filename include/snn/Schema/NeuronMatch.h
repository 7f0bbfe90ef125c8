//===- NeuronMatch.h - Described neurons that are IF, LIF or PLIF -*- C++ -*-===//
//
// IF, LIF and ParametricLIF are instances of the described neuron: each is a
// description with its parameters as placeholders. A description that
// compiles to the same step program as one of them, with constants where the
// placeholders are, is that neuron, and runs on its hand-written kernels.
// The match is structural (the same operations in the same order on the same
// values), so the matched neuron computes the description's bits.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_NEURONMATCH_H
#define SNN_SCHEMA_NEURONMATCH_H

#include "snn/Schema/NeuronProgram.h"

#include <optional>

namespace snn::schema {

enum class KnownNeuronKind { IF, LIF, PLIF };

/// The named neuron a description is, with its parameters.
struct KnownNeuron {
  KnownNeuronKind kind = KnownNeuronKind::IF;
  bool decayInput = true; ///< LIF, PLIF
  bool detachReset = false;
  double vThreshold = 1.0;
  std::optional<double> vReset; ///< absent: soft reset
  double tau = 2.0;             ///< LIF
};

/// The description of `neuron`, its parameters as constants (PLIF's w the
/// operand `w`), in SpikingJelly's expressions.
NeuronDescription describeKnownNeuron(const KnownNeuron &neuron);

/// The IF, LIF or PLIF that `description` is, if any: one state (the membrane,
/// starting at v_reset, or 0 for a soft reset), the spike as output, and a
/// step program equal to that neuron's. A LIF needs tau > 1 and finite values.
std::optional<KnownNeuron> matchKnownNeuron(const NeuronDescription &description);

} // namespace snn::schema

#endif // SNN_SCHEMA_NEURONMATCH_H
