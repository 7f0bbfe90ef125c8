//===- Surrogates.h - The surrogate functions of the neurons ----*- C++ -*-===//
//
// A spiking neuron fires with the Heaviside step of x = H - v_threshold; in the
// backward, the step's derivative is replaced by a surrogate function of x.
// This table names every surrogate the neurons take (the `surrogate`
// attribute of the ONNX profile and of the artifact's neuron nodes, and the
// snn dialect's SurrogateKind), with SpikingJelly's class and the meaning,
// default and valid range of its one or two parameters, which every neuron
// carries as `alpha` and `beta` (docs/semantics.md gives the formulas).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_SURROGATES_H
#define SNN_SCHEMA_SURROGATES_H

#include <string>
#include <string_view>
#include <vector>

namespace snn::schema {

/// The values a surrogate parameter may take.
enum class ParameterRange {
  Finite,         ///< any finite number
  Positive,       ///< finite and > 0
  AboveOne,       ///< finite and > 1
  PositiveInteger ///< a whole number >= 1
};

/// One parameter of a surrogate: SpikingJelly's name for it, its default, its range.
struct SurrogateParameter {
  const char *name;
  float defaultValue;
  ParameterRange range;
};

/// One surrogate function.
struct SurrogateSpec {
  const char *name;      ///< the `surrogate` attribute's value
  const char *className; ///< SpikingJelly's class (activation_based.surrogate)
  SurrogateParameter alpha;
  /// The second parameter; its `name` is null for the surrogates with one.
  SurrogateParameter beta;

  bool hasBeta() const { return beta.name != nullptr; }
};

/// Every surrogate, Sigmoid (the neurons' default) first.
const std::vector<SurrogateSpec> &surrogateSpecs();

/// The surrogate named `name`, or null.
const SurrogateSpec *findSurrogate(std::string_view name);

/// The surrogates' names, comma-separated, for error messages.
std::string surrogateNames();

/// Why `alpha` and `beta` are not parameters `spec` takes (naming the
/// parameter by SpikingJelly's name and its range), or "" when they are.
/// `beta` is ignored for a surrogate with one parameter.
std::string surrogateParameterError(const SurrogateSpec &spec, float alpha, float beta);

} // namespace snn::schema

#endif // SNN_SCHEMA_SURROGATES_H
