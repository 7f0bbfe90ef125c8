//===- NumberFormat.h - Numbers as text for messages and logs ---*- C++ -*-===//
//
// The runtime's number formatting: the shortest text of a double that reads
// back as the same value (flag values in messages and checkpoint settings),
// and sizes and durations with a unit for people ("1.5 KiB", "12.3 ms"; the
// same text as the planner's formatBytes and formatSeconds in
// snn/Planner/Recommender.h, which the runtime does not link).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_NUMBERFORMAT_H
#define SNN_RUNTIME_SUPPORT_NUMBERFORMAT_H

#include <cstdint>
#include <string>

namespace snn::runtime {

/// The shortest decimal text that reads back as `value` ("0.1", not
/// "0.10000000000000001").
std::string formatDouble(double value);

/// "512 B", "1.5 KiB", "3.2 GiB": binary units, three significant digits.
std::string formatBytes(int64_t bytes);

/// "12.3 ms", "1.5 s", "250 us", "80 ns": three significant digits.
std::string formatSeconds(double seconds);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_NUMBERFORMAT_H
