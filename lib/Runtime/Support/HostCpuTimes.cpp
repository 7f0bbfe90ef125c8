//===- HostCpuTimes.cpp - The machine's CPU time, steal included ----------===//

#include "snn/Runtime/Support/HostCpuTimes.h"

#include <fstream>
#include <sstream>

namespace snn::runtime {

std::optional<HostCpuTimes> parseHostCpuTimes(const std::string &procStat) {
  std::istringstream lines(procStat);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name;
    if (!(fields >> name) || name != "cpu")
      continue;
    HostCpuTimes times{};
    for (uint64_t &value : times)
      if (!(fields >> value))
        return std::nullopt;
    return times;
  }
  return std::nullopt;
}

std::optional<HostCpuTimes> readHostCpuTimes(const std::string &path) {
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first))
    return std::nullopt;
  return parseHostCpuTimes(first);
}

double stealShareBetween(const std::optional<HostCpuTimes> &before,
                         const std::optional<HostCpuTimes> &after) {
  if (!before || !after)
    return -1;
  uint64_t total = 0;
  for (size_t i = 0; i < before->size(); ++i) {
    if ((*after)[i] < (*before)[i])
      return -1; // not two readings of one machine in order
    total += (*after)[i] - (*before)[i];
  }
  if (total == 0)
    return -1;
  return double((*after)[7] - (*before)[7]) / double(total);
}

} // namespace snn::runtime
