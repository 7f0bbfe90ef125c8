//===- NumberFormat.h - Numbers as text for messages and logs ---*- C++ -*-===//
//
// The runtime's number formatting: the shortest text of a double that reads
// back as the same value (flag values in messages and checkpoint settings),
// and sizes and durations with a unit for people ("1.5 KiB", "12.3 ms"), in the
// one spelling the planner uses too (snn/Schema/UnitText.h).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_NUMBERFORMAT_H
#define SNN_RUNTIME_SUPPORT_NUMBERFORMAT_H

#include "snn/Schema/UnitText.h"

#include <cstdint>
#include <string>

namespace snn::runtime {

/// The shortest decimal text that reads back as `value` ("0.1", not
/// "0.10000000000000001").
std::string formatDouble(double value);

using schema::formatBytes;
using schema::formatSeconds;

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_NUMBERFORMAT_H
