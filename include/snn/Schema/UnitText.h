//===- UnitText.h - Sizes and durations as text -----------------*- C++ -*-===//
//
// The one spelling of a byte count and a duration in what the tools print (the planner's
// rationales, the runtime's messages and end events), so the compiler's prediction and the
// runtime's measurement of the same quantity read alike.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_UNITTEXT_H
#define SNN_SCHEMA_UNITTEXT_H

#include <cstdint>
#include <string>

namespace snn::schema {

/// "512 B", "1.5 KiB", "3.2 GiB": binary units, three significant digits.
std::string formatBytes(int64_t bytes);

/// "12.3 ms", "1.5 s", "250 us", "80 ns": three significant digits.
std::string formatSeconds(double seconds);

/// `text` without its leading and trailing spaces and tabs.
std::string trimBlanks(const std::string &text);

} // namespace snn::schema

#endif // SNN_SCHEMA_UNITTEXT_H
