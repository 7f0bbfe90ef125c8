//===- NodeAttributes.h - Typed access to a node's attributes ---*- C++ -*-===//
//
// Op builders read attributes through this class so that a missing or
// ill-typed attribute is reported with the node's name, not as a crash.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_NODEATTRIBUTES_H
#define SNN_RUNTIME_EXECUTION_NODEATTRIBUTES_H

#include "snn/Runtime/Execution/Graph.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace snn::runtime {

class NodeAttributes {
public:
  explicit NodeAttributes(const Node &node) : node(node) {}

  /// Floats also accept an integer attribute (e.g. `v_reset` written as 0).
  float getFloat(const std::string &name) const;
  float getFloat(const std::string &name, float fallback) const;
  std::optional<float> findFloat(const std::string &name) const;

  int64_t getInt(const std::string &name) const;
  int64_t getInt(const std::string &name, int64_t fallback) const;
  /// An int that must be 0 or 1.
  bool getBool(const std::string &name, bool fallback) const;

  std::string getString(const std::string &name,
                        const std::string &fallback) const;
  /// A list of strings; empty when absent.
  std::vector<std::string> getStrings(const std::string &name) const;

  /// A 2-D size (kernel, stride, ...): `ints` of 2 values, or of 1 value that
  /// applies to both dims, as PyTorch accepts.
  std::array<int64_t, 2> getPair(const std::string &name) const;
  std::array<int64_t, 2> getPair(const std::string &name,
                                 std::array<int64_t, 2> fallback) const;

  /// The float, which must be finite and within [min, max] (`minOpen`: min
  /// itself excluded); the error names the attribute and the range.
  float getFloatIn(const std::string &name, float fallback, float min, float max,
                   bool minOpen = false) const;
  /// The int, which must be within [min, max].
  int64_t getIntIn(const std::string &name, int64_t fallback, int64_t min,
                   int64_t max) const;
  /// A required list of positive sizes (a reshape's per-step dims).
  std::vector<int64_t> getPositiveInts(const std::string &name) const;

  /// A 2-D size whose values are within [min, kMaxSize].
  std::array<int64_t, 2> getSizePair(const std::string &name, int64_t min) const;
  std::array<int64_t, 2> getSizePair(const std::string &name,
                                     std::array<int64_t, 2> fallback,
                                     int64_t min) const;

  /// The largest kernel, stride, padding, dilation or group count a program
  /// may ask for: far above any real layer, far below what overflows ATen's
  /// size arithmetic.
  static constexpr int64_t kMaxSize = int64_t(1) << 20;

  /// Throws Error("<node>: <message>").
  [[noreturn]] void fail(const std::string &message) const;

private:
  const Attribute *find(const std::string &name) const;
  [[noreturn]] void failKind(const std::string &name, const char *want) const;

  const Node &node;
};

/// The double a float attribute most likely was before the exporter stored
/// it as float32: the shortest decimal that round-trips (0.3f -> 0.3).
/// PyTorch passes eps, momentum and p to ATen as doubles, and 0.3f != 0.3
/// would shift Dropout's Bernoulli threshold and scale and BatchNorm's
/// update away from the reference's.
double decimalValue(float value);

/// A dropout node's `p` as its kernel uses it (default 0.5, in [0, 1]).
double dropoutProbability(const Node &node);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_NODEATTRIBUTES_H
