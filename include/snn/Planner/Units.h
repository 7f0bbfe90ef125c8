//===- Units.h - Bytes, FLOPs and seconds as text -----------------*- C++ -*-===//
#ifndef SNN_PLANNER_UNITS_H
#define SNN_PLANNER_UNITS_H

#include "snn/Planner/Result.h"
#include "snn/Schema/UnitText.h"

#include <cstdint>
#include <string>

namespace snn::planner {

/// "16GiB", "512MiB", "8GB", "1.5G", "1000000": bytes (K/M/G/T: 1000s, Ki/Mi/Gi/Ti: 1024s).
Result<int64_t> parseByteSize(const std::string &text);

/// Human-readable numbers for rationales: "1.5 MiB", "2.34 GFLOP", "12.3 ms" (bytes and
/// seconds in the one spelling of snn/Schema/UnitText.h).
using schema::formatBytes;
using schema::formatSeconds;
std::string formatFlops(double flops);

} // namespace snn::planner

#endif // SNN_PLANNER_UNITS_H
