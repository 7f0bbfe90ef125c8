//===- HostCpuTimes.h - The machine's CPU time, steal included -*- C++ -*-===//
//
// /proc/stat's first line: the time all CPUs spent in each state since boot.
// On a virtual machine its "steal" column is the time the hypervisor ran
// other tenants on them; between two readings, its share of the whole says
// how much of a measurement was another tenant's (calibrate records it).
//
//===----------------------------------------------------------------------===//

#ifndef SNN_RUNTIME_SUPPORT_HOSTCPUTIMES_H
#define SNN_RUNTIME_SUPPORT_HOSTCPUTIMES_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace snn::runtime {

/// user, nice, system, idle, iowait, irq, softirq, steal (clock ticks).
using HostCpuTimes = std::array<uint64_t, 8>;

/// The times in /proc/stat text (its "cpu " line); nullopt when there is none or
/// it has fewer than 8 numbers (a kernel without steal accounting).
std::optional<HostCpuTimes> parseHostCpuTimes(const std::string &procStat);

/// The times now, from `path`; nullopt where it cannot be read.
std::optional<HostCpuTimes> readHostCpuTimes(const std::string &path = "/proc/stat");

/// Steal's share (0-1) of the CPU time between two readings; negative when
/// either is missing or no time passed.
double stealShareBetween(const std::optional<HostCpuTimes> &before,
                         const std::optional<HostCpuTimes> &after);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_HOSTCPUTIMES_H
