//===- Options.cpp - Parsing objectives, modes, topologies and sizes ------===//
#include "snn/Planner/Recommender.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace snn::planner {

Result<Objective> parseObjective(const std::string &text) {
  if (std::optional<Objective> objective = schema::parseEnum<Objective>(text))
    return *objective;
  return makeError(schema::unknownSpellingMessage<Objective>(text));
}

std::optional<ModeRequest> modeRequest(schema::RequestedMode requested) {
  std::optional<schema::ResolvedMode> resolved = schema::resolveRequestedMode(requested);
  if (!resolved)
    return std::nullopt;
  return ModeRequest{resolved->mode, resolved->optimizer};
}

Result<ModeRequest> parseMode(const std::string &text) {
  std::optional<schema::RequestedMode> requested = schema::parseEnum<schema::RequestedMode>(text);
  std::optional<ModeRequest> forced =
      requested ? modeRequest(*requested) : std::optional<ModeRequest>();
  if (!requested)
    return makeError(schema::unknownSpellingMessage<schema::RequestedMode>(text));
  if (!forced)
    return makeError("mode '" + text + "' chooses a mode; it does not force one");
  return *forced;
}

int64_t Topology::worldSize() const {
  int64_t world = 1;
  for (const auto &[name, size] : dims)
    if (name != "vpp")
      world *= size;
  return world;
}

int64_t Topology::size(const std::string &name) const {
  for (const auto &[dim, size] : dims)
    if (dim == name)
      return size;
  return 0;
}

std::string Topology::str() const {
  std::string text;
  for (const auto &[name, size] : dims)
    text += (text.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return text.empty() ? "single process" : text;
}

namespace {

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

bool isIdentifier(const std::string &name) {
  if (name.empty() || !(std::isalpha((unsigned char)name[0]) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
}

int rankOf(const std::string &name) {
  static const char *order[] = {"dp", "tp", "pp", "vpp"};
  for (int i = 0; i < 4; ++i)
    if (name == order[i])
      return i;
  return 4;
}

} // namespace

Result<Topology> parseTopology(const std::string &text) {
  Topology topology;
  if (trim(text).empty())
    return topology;
  if (trim(text).back() == ',')
    return makeError("topology '" + text + "' ends with ','");
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    part = trim(part);
    size_t eq = part.find('=');
    std::string name = trim(part.substr(0, eq));
    if (eq == std::string::npos || !isIdentifier(name))
      return makeError("topology '" + text + "': '" + part +
                       "' is not name=size (expected e.g. dp=2,tp=2)");
    std::string value = trim(part.substr(eq + 1));
    if (value.empty() || value.size() > 9 ||
        value.find_first_not_of("0123456789") != std::string::npos || std::stoll(value) <= 0)
      return makeError("topology '" + text + "': size of '" + name +
                       "' must be a positive integer, got '" + value + "'");
    if (topology.has(name))
      return makeError("topology '" + text + "': '" + name + "' is given twice");
    topology.dims.emplace_back(name, std::stoll(value));
  }
  // dp, tp, pp, vpp first, then the others in the order given.
  std::stable_sort(topology.dims.begin(), topology.dims.end(),
                   [](const auto &a, const auto &b) { return rankOf(a.first) < rankOf(b.first); });
  return topology;
}

Result<int64_t> parseByteSize(const std::string &text) {
  std::string value = trim(text);
  size_t digits = value.find_first_not_of("0123456789.");
  std::string number = value.substr(0, digits);
  std::string unit = digits == std::string::npos ? "" : trim(value.substr(digits));
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

} // namespace snn::planner
