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

std::string formatBytes(int64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  if (unit == 0)
    std::snprintf(buffer, sizeof(buffer), "%lld B", (long long)bytes);
  else
    std::snprintf(buffer, sizeof(buffer), "%.3g %s", value, units[unit]);
  return buffer;
}

std::string formatSeconds(double seconds) {
  char buffer[32];
  if (seconds >= 1.0)
    std::snprintf(buffer, sizeof(buffer), "%.3g s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(buffer, sizeof(buffer), "%.3g ms", seconds * 1e3);
  else if (seconds >= 1e-6)
    std::snprintf(buffer, sizeof(buffer), "%.3g us", seconds * 1e6);
  else
    std::snprintf(buffer, sizeof(buffer), "%.3g ns", seconds * 1e9);
  return buffer;
}

} // namespace snn::runtime
