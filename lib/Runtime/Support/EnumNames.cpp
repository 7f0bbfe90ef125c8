//===- EnumNames.cpp - The spelling of an enum on the command line --------===//

#include "snn/Runtime/Support/EnumNames.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/Enums.h"

namespace snn::runtime {

void throwUnknownName(std::string_view flag, std::string_view noun,
                      const std::string &name,
                      const std::vector<std::string_view> &names) {
  throw Error(std::string(flag) + ": unknown " + std::string(noun) + " '" +
              name + "' (expected " + schema::joinAlternatives(names) + ")");
}

} // namespace snn::runtime
