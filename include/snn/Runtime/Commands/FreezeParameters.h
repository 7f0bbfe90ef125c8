//===- FreezeParameters.h - snn-run train --freeze ---------------*- C++ -*-===//
//
// Marks named parameters of a loaded artifact frozen before a model is built
// from it, so training holds them like buffers (docs/snn-run.md, --freeze).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_COMMANDS_FREEZEPARAMETERS_H
#define SNN_RUNTIME_COMMANDS_FREEZEPARAMETERS_H

#include "snn/Runtime/Execution/Manifest.h"

#include <string>
#include <vector>

namespace snn::runtime {

/// Sets `frozen` on every parameter of `manifest` named in `names`. Throws
/// Error naming the culprit for a name the artifact lacks or a buffer.
void freezeParameters(Manifest &manifest, const std::vector<std::string> &names);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_FREEZEPARAMETERS_H
