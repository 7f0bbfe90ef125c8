//===- FreezeParameters.cpp - snn-run train --freeze ----------------------===//
//
// PyTorch's requires_grad=False, chosen at training time: a frozen parameter
// gets no gradient and joins no optimizer group (ParameterStore holds it like
// a buffer), so neither a step nor weight decay moves it. The artifact's own
// frozen parameters (exported from requires_grad=False) are frozen already.
//
//===----------------------------------------------------------------------===//
#include "snn/Runtime/Commands/FreezeParameters.h"
#include "snn/Runtime/Support/Error.h"

#include <algorithm>

namespace snn::runtime {

void freezeParameters(Manifest &manifest, const std::vector<std::string> &names) {
  for (const std::string &name : names) {
    auto it = std::find_if(manifest.parameters.begin(), manifest.parameters.end(),
                           [&](const ParameterSpec &spec) { return spec.name == name; });
    if (it == manifest.parameters.end())
      throw Error("--freeze: the artifact has no parameter '" + name + "'");
    if (it->kind == ParameterKind::Buffer)
      throw Error("--freeze: '" + name +
                  "' is a buffer (BatchNorm statistics), which no optimizer step changes");
    // A pipeline stage's parameter is listed by every rank's manifest; freezing
    // it on each is what keeps the stages consistent.
    it->frozen = true;
  }
}

} // namespace snn::runtime
