//===- SurrogateAttributes.cpp - A neuron node's surrogate ----------------===//
#include "snn/Runtime/Execution/SurrogateAttributes.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/Surrogates.h"

namespace snn::runtime {

SpikeSurrogate readSurrogate(const NodeAttributes &attributes, const char *defaultName) {
  namespace attr = schema::attr;
  std::string name = attributes.getString(attr::kSurrogate, defaultName);
  const schema::SurrogateSpec *spec = schema::findSurrogate(name);
  if (!spec)
    attributes.fail("unknown surrogate '" + name + "' (expected one of " +
                    schema::surrogateNames() + ")");
  SpikeSurrogate surrogate;
  surrogate.kind = Surrogate(spec - schema::surrogateSpecs().data());
  surrogate.alpha = attributes.getFloat(attr::kAlpha, spec->alpha.defaultValue);
  surrogate.beta = attributes.getFloat(attr::kBeta, spec->beta.defaultValue);
  if (std::string error = schema::surrogateParameterError(*spec, surrogate.alpha, surrogate.beta);
      !error.empty())
    attributes.fail(error);
  return surrogate;
}

} // namespace snn::runtime
