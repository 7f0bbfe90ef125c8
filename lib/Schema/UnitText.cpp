//===- UnitText.cpp - Sizes and durations as text -------------------------===//
#include "snn/Schema/UnitText.h"

#include <cstdio>

namespace snn::schema {

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

std::string trimBlanks(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

} // namespace snn::schema
