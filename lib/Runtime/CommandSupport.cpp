//===- CommandSupport.cpp - Shared steps of snn-run commands --------------===//

#include "snn/Runtime/CommandSupport.h"
#include "snn/Runtime/Error.h"

#include <ATen/Parallel.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace snn::runtime {

void setIntraOpThreads(int threads) {
  if (threads <= 0)
    threads = int(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
}

void checkParentDirectory(const std::string &path, const std::string &flag) {
  if (path.empty())
    return;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    throw Error(flag + " " + path + ": directory '" + parent.string() +
                "' does not exist");
}

Artifact loadSingleRankArtifact(const std::string &dir,
                                const std::string &command) {
  Artifact artifact = loadArtifact(dir);
  if (artifact.manifest.worldSize != 1)
    throw Error(dir + ": artifact is partitioned for " +
                std::to_string(artifact.manifest.worldSize) +
                " ranks; 'snn-run " + command + "' runs single-rank artifacts");
  return artifact;
}

std::string formatDouble(double value) {
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

} // namespace snn::runtime
