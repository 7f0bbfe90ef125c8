//===- EnumNames.cpp - The spelling of an enum on the command line --------===//

#include "snn/Runtime/Support/EnumNames.h"
#include "snn/Runtime/Support/Error.h"

namespace snn::runtime {

std::string joinNames(const std::vector<std::string_view> &names) {
  std::string joined;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      joined += i + 1 == names.size() ? " or " : ", ";
    joined += names[i];
  }
  return joined;
}

void throwUnknownName(std::string_view flag, std::string_view noun,
                      const std::string &name,
                      const std::vector<std::string_view> &names) {
  throw Error(std::string(flag) + ": unknown " + std::string(noun) + " '" +
              name + "' (expected " + joinNames(names) + ")");
}

} // namespace snn::runtime
