//===- NodeAttributes.cpp - Typed access to a node's attributes -----------===//

#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/ArtifactOps.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace snn::runtime {

namespace {

/// The shortest text that reads back as `value` (0.1, not 0.100000001).
template <typename Number> std::string formatNumber(Number value) {
  char text[32];
  auto result = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, result.ptr);
}

} // namespace

const char *attributeKindName(Attribute::Kind kind) {
  switch (kind) {
  case Attribute::Kind::Float:
    return "float";
  case Attribute::Kind::Int:
    return "int";
  case Attribute::Kind::String:
    return "string";
  case Attribute::Kind::Floats:
    return "floats";
  case Attribute::Kind::Ints:
    return "ints";
  case Attribute::Kind::Strings:
    return "strings";
  }
  return "unknown";
}

std::string formatAttributeValue(const Attribute &attribute) {
  auto list = [](const auto &values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i)
      text += (i ? ", " : "") + formatNumber(values[i]);
    return text + "]";
  };
  switch (attribute.kind) {
  case Attribute::Kind::Float:
    return formatNumber(attribute.f);
  case Attribute::Kind::Int:
    return std::to_string(attribute.i);
  case Attribute::Kind::String:
    return attribute.s;
  case Attribute::Kind::Floats:
    return list(attribute.floats);
  case Attribute::Kind::Ints:
    return list(attribute.ints);
  case Attribute::Kind::Strings: {
    std::string text = "[";
    for (size_t i = 0; i < attribute.strings.size(); ++i)
      text += (i ? ", '" : "'") + attribute.strings[i] + "'";
    return text + "]";
  }
  }
  return "";
}

std::string Node::describe() const {
  return "node '" + name + "' (" + opType + ")";
}

void NodeAttributes::fail(const std::string &message) const {
  throw Error(node.describe() + ": " + message);
}

void NodeAttributes::failKind(const std::string &name, const char *want) const {
  const Attribute *attribute = find(name);
  fail("attribute '" + name + "' must be " + want + ", not " +
       (attribute ? attributeKindName(attribute->kind) : "missing"));
}

const Attribute *NodeAttributes::find(const std::string &name) const {
  auto it = node.attributes.find(name);
  return it == node.attributes.end() ? nullptr : &it->second;
}

std::optional<float> NodeAttributes::findFloat(const std::string &name) const {
  const Attribute *attribute = find(name);
  if (!attribute)
    return std::nullopt;
  if (attribute->kind == Attribute::Kind::Float)
    return attribute->f;
  if (attribute->kind == Attribute::Kind::Int)
    return float(attribute->i);
  failKind(name, "a float");
}

float NodeAttributes::getFloat(const std::string &name) const {
  std::optional<float> value = findFloat(name);
  if (!value)
    fail("missing attribute '" + name + "'");
  return *value;
}

float NodeAttributes::getFloat(const std::string &name, float fallback) const {
  return findFloat(name).value_or(fallback);
}

int64_t NodeAttributes::getInt(const std::string &name) const {
  const Attribute *attribute = find(name);
  if (!attribute)
    fail("missing attribute '" + name + "'");
  if (attribute->kind != Attribute::Kind::Int)
    failKind(name, "an int");
  return attribute->i;
}

int64_t NodeAttributes::getInt(const std::string &name,
                               int64_t fallback) const {
  return find(name) ? getInt(name) : fallback;
}

bool NodeAttributes::getBool(const std::string &name, bool fallback) const {
  int64_t value = getInt(name, fallback ? 1 : 0);
  if (value != 0 && value != 1)
    fail("attribute '" + name + "' must be 0 or 1");
  return value == 1;
}

std::string NodeAttributes::getString(const std::string &name,
                                      const std::string &fallback) const {
  const Attribute *attribute = find(name);
  if (!attribute)
    return fallback;
  if (attribute->kind != Attribute::Kind::String)
    failKind(name, "a string");
  return attribute->s;
}

std::vector<std::string> NodeAttributes::getStrings(const std::string &name) const {
  const Attribute *attribute = find(name);
  if (!attribute)
    return {};
  if (attribute->kind != Attribute::Kind::Strings)
    failKind(name, "a list of strings");
  return attribute->strings;
}

std::array<int64_t, 2> NodeAttributes::getPair(const std::string &name) const {
  const Attribute *attribute = find(name);
  if (!attribute)
    fail("missing attribute '" + name + "'");
  if (attribute->kind == Attribute::Kind::Int)
    return {attribute->i, attribute->i};
  if (attribute->kind != Attribute::Kind::Ints ||
      (attribute->ints.size() != 1 && attribute->ints.size() != 2))
    fail("attribute '" + name + "' must be 1 or 2 ints");
  const std::vector<int64_t> &ints = attribute->ints;
  return {ints.front(), ints.back()};
}

std::array<int64_t, 2>
NodeAttributes::getPair(const std::string &name,
                        std::array<int64_t, 2> fallback) const {
  return find(name) ? getPair(name) : fallback;
}

float NodeAttributes::getFloatIn(const std::string &name, float fallback, float min,
                                 float max, bool minOpen) const {
  float value = getFloat(name, fallback);
  bool aboveMin = minOpen ? value > min : value >= min;
  if (std::isfinite(value) && aboveMin && value <= max)
    return value;
  std::string range = std::isinf(max) ? std::string(minOpen ? "> " : ">= ") + formatNumber(min)
                                      : std::string(minOpen ? "in (" : "in [") +
                                            formatNumber(min) + ", " + formatNumber(max) + "]";
  fail("attribute '" + name + "' must be finite and " + range + ", got " + formatNumber(value));
}

int64_t NodeAttributes::getIntIn(const std::string &name, int64_t fallback, int64_t min,
                                 int64_t max) const {
  int64_t value = getInt(name, fallback);
  if (value < min || value > max)
    fail("attribute '" + name + "' must be in [" + std::to_string(min) + ", " +
         std::to_string(max) + "], got " + std::to_string(value));
  return value;
}

std::vector<int64_t> NodeAttributes::getPositiveInts(const std::string &name) const {
  const Attribute *attribute = find(name);
  if (!attribute)
    fail("missing attribute '" + name + "'");
  if (attribute->kind != Attribute::Kind::Ints || attribute->ints.empty())
    fail("attribute '" + name + "' must be a non-empty list of ints");
  for (int64_t value : attribute->ints)
    if (value < 1)
      fail("attribute '" + name + "' must hold positive sizes, got " + std::to_string(value));
  return attribute->ints;
}

namespace {

std::array<int64_t, 2> checkSizes(const NodeAttributes &attributes, const std::string &name,
                                  std::array<int64_t, 2> pair, int64_t min) {
  for (int64_t value : pair)
    if (value < min || value > NodeAttributes::kMaxSize)
      attributes.fail("attribute '" + name + "' must be in [" + std::to_string(min) + ", " +
                      std::to_string(NodeAttributes::kMaxSize) + "], got " +
                      std::to_string(value));
  return pair;
}

} // namespace

std::array<int64_t, 2> NodeAttributes::getSizePair(const std::string &name,
                                                   int64_t min) const {
  return checkSizes(*this, name, getPair(name), min);
}

std::array<int64_t, 2> NodeAttributes::getSizePair(const std::string &name,
                                                   std::array<int64_t, 2> fallback,
                                                   int64_t min) const {
  return checkSizes(*this, name, getPair(name, fallback), min);
}

double decimalValue(float value) {
  char text[32];
  auto result = std::to_chars(text, text + sizeof(text) - 1, value);
  *result.ptr = '\0';
  return std::strtod(text, nullptr);
}

double dropoutProbability(const Node &node) {
  return decimalValue(
      NodeAttributes(node).getFloatIn(schema::attr::kP, 0.5f, 0.0f, 1.0f));
}

} // namespace snn::runtime
