//===- Topology.cpp - Parsing and naming a request's mesh dimensions ------===//
#include "snn/Planner/Topology.h"
#include "snn/Schema/MeshAxes.h"
#include "snn/Schema/UnitText.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::planner {

int64_t Topology::worldSize() const {
  int64_t world = 1;
  for (const auto &[name, size] : dims)
    if (name != meshaxis::kVirtualPipeline)
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

using schema::trimBlanks;

bool isIdentifier(const std::string &name) {
  if (name.empty() || !(std::isalpha((unsigned char)name[0]) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
}

int rankOf(const std::string &name) {
  const auto &order = meshaxis::kTopologyOrder;
  for (int i = 0; i < int(std::size(order)); ++i)
    if (name == order[i])
      return i;
  return int(std::size(order));
}

} // namespace

Result<Topology> parseTopology(const std::string &text) {
  Topology topology;
  if (trimBlanks(text).empty())
    return topology;
  if (trimBlanks(text).back() == ',')
    return makeError("topology '" + text + "' ends with ','");
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    part = trimBlanks(part);
    size_t eq = part.find('=');
    std::string name = trimBlanks(part.substr(0, eq));
    if (eq == std::string::npos || !isIdentifier(name))
      return makeError("topology '" + text + "': '" + part +
                       "' is not name=size (expected e.g. dp=2,tp=2)");
    std::string value = trimBlanks(part.substr(eq + 1));
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

} // namespace snn::planner
