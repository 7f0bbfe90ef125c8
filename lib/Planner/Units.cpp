//===- Units.cpp - Bytes, FLOPs and seconds as text -----------------------===//
#include "snn/Planner/Units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace snn::planner {

using schema::trimBlanks;

Result<int64_t> parseByteSize(const std::string &text) {
  std::string value = trimBlanks(text);
  size_t digits = value.find_first_not_of("0123456789.");
  std::string number = value.substr(0, digits);
  std::string unit = digits == std::string::npos ? "" : trimBlanks(value.substr(digits));
  double scale = 0;
  static const std::pair<const char *, double> units[] = {
      {"", 1},         {"B", 1},          {"K", 1e3},  {"KB", 1e3},         {"M", 1e6},
      {"MB", 1e6},     {"G", 1e9},        {"GB", 1e9}, {"T", 1e12},         {"TB", 1e12},
      {"Ki", 1024.0},  {"KiB", 1024.0},   {"Mi", 1048576.0}, {"MiB", 1048576.0},
      {"Gi", 1073741824.0}, {"GiB", 1073741824.0}, {"Ti", 1099511627776.0},
      {"TiB", 1099511627776.0}};
  for (const auto &[name, factor] : units)
    if (unit == name)
      scale = factor;
  char *end = nullptr;
  double amount = number.empty() ? -1 : std::strtod(number.c_str(), &end);
  if (scale == 0 || number.empty() || *end != '\0' || !std::isfinite(amount) || amount <= 0 ||
      amount * scale >= 9.0e18)
    return makeError("memory budget '" + text +
                     "' is not a positive size (expected e.g. 16GiB, 512MB or 1000000)");
  return int64_t(amount * scale);
}

std::string formatFlops(double flops) {
  static const char *units[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  int unit = 0;
  while (flops >= 1000.0 && unit < 5) {
    flops /= 1000.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g %s", flops, units[unit]);
  return buffer;
}

} // namespace snn::planner
