//===- ProgramParameters.cpp - A program's initializers against the manifest ===//

#include "snn/Runtime/Execution/ProgramParameters.h"
#include "snn/Runtime/Support/Error.h"

#include <set>

namespace snn::runtime {

void checkProgramParameters(const Manifest &manifest, const Graph &program, int64_t stage) {
  std::set<std::string> listed;
  for (const ParameterSpec &parameter : manifest.parameters) {
    if (parameter.stage != stage)
      continue;
    listed.insert(parameter.name);
    if (!program.initializers.count(parameter.name))
      throw Error(program.file + ": has no initializer '" + parameter.name +
                  "', which manifest.json lists" +
                  (stage >= 0 ? " for pipeline stage " + std::to_string(stage) : "") +
                  " (the program of another artifact or stage?)");
  }
  for (const auto &[name, tensor] : program.initializers)
    if (!listed.count(name))
      throw Error(program.file + ": initializer '" + name +
                  "' has no entry in manifest.json's parameters" +
                  (stage >= 0 ? " for pipeline stage " + std::to_string(stage) : "") +
                  " (a parameter the runtime does not know would never be trained, "
                  "sharded or saved)");
}

} // namespace snn::runtime
