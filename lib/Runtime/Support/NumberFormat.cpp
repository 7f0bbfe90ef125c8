//===- NumberFormat.cpp - Numbers as text for messages and logs -----------===//

#include "snn/Runtime/Support/NumberFormat.h"

#include <cstdio>
#include <cstdlib>

namespace snn::runtime {

std::string formatDouble(double value) {
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

} // namespace snn::runtime
