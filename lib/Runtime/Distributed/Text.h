//===- Text.h - Small text helpers of the implementation (private) -*- C++ -*-===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_TEXT_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_TEXT_H

#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace snn::dist::detail {

/// "1, 2, 3".
inline std::string joinInts(const std::vector<int> &values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text;
}

/// Store values as text.
inline std::string fromBytes(const std::vector<uint8_t> &bytes) {
  return std::string(bytes.begin(), bytes.end());
}
inline std::vector<uint8_t> toBytes(const std::string &text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

/// "2.5 s".
inline std::string secondsText(std::chrono::milliseconds duration) {
  std::ostringstream out;
  out << duration.count() / 1000.0 << " s";
  return out.str();
}

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_TEXT_H
