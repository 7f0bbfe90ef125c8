//===- KernelCrossoverFile.cpp - Kernel crossovers kept per machine -------===//
#include "snn/Runtime/Execution/KernelCrossoverFile.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Npy.h"
#include "snn/Schema/DeviceProfile.h"
#include "snn/Schema/UserDeviceProfile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>

namespace snn::runtime {

namespace {

using Json = nlohmann::json;

// The file's keys (docs/snn-run.md "Kernel crossovers").
constexpr const char *kFormat = "format";
constexpr const char *kFormatName = "spikemesh-kernel-crossovers";
constexpr const char *kVersion = "version";
constexpr const char *kMachines = "machines";
constexpr const char *kDenseSeconds = "dense_seconds";
constexpr const char *kEventSeconds = "event_seconds";
constexpr const char *kFixedSeconds = "event_seconds_without_spikes";
constexpr const char *kDensity = "density";
constexpr const char *kThreshold = "threshold";

const char *instructionsName(SpikeConvInstructions set) {
  switch (set) {
  case SpikeConvInstructions::Avx512:
    return "avx512";
  case SpikeConvInstructions::Avx2:
    return "avx2";
  case SpikeConvInstructions::Baseline:
    break;
  }
  return "baseline";
}

/// The file's document, or an empty one (and `warning` says why) when it is
/// missing or not a crossover file.
Json readDocument(const std::string &path, std::string &warning) {
  Json empty = {{kFormat, kFormatName}, {kVersion, 1}, {kMachines, Json::object()}};
  std::ifstream in(path);
  if (!in)
    return empty;
  std::stringstream text;
  text << in.rdbuf();
  Json document = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object() ||
      document.value(kFormat, Json()) != kFormatName || !document.contains(kMachines) ||
      !document[kMachines].is_object()) {
    warning = path + " is not a kernel crossover file; it is replaced";
    return empty;
  }
  return document;
}

/// The entry as a crossover, if it has every field as a number.
std::optional<KernelCrossover> fromJson(const Json &entry) {
  if (!entry.is_object())
    return std::nullopt;
  for (const char *name : {kDenseSeconds, kEventSeconds, kFixedSeconds, kDensity, kThreshold})
    if (!entry.contains(name) || !entry[name].is_number())
      return std::nullopt;
  KernelCrossover c;
  c.denseSeconds = entry[kDenseSeconds].get<double>();
  c.eventSeconds = entry[kEventSeconds].get<double>();
  c.fixedSeconds = entry[kFixedSeconds].get<double>();
  c.density = entry[kDensity].get<double>();
  c.threshold = entry[kThreshold].get<double>();
  if (!(c.threshold >= 0.0 && c.threshold <= 1.0))
    return std::nullopt;
  return c;
}

Json toJson(const KernelCrossover &c) {
  return {{kDenseSeconds, c.denseSeconds}, {kEventSeconds, c.eventSeconds},
          {kFixedSeconds, c.fixedSeconds}, {kDensity, c.density}, {kThreshold, c.threshold}};
}

KernelCrossover measured(const std::function<KernelCrossover()> &measure) {
  KernelCrossover c = measure();
  c.threshold = crossoverDensity(c.denseSeconds, c.fixedSeconds, c.eventSeconds, c.density);
  return c;
}

/// An exclusive flock on `path`, released when this goes.
class FileLock {
public:
  explicit FileLock(const std::string &path) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      error = std::strerror(errno);
      return;
    }
    while (::flock(fd, LOCK_EX) != 0)
      if (errno != EINTR) {
        error = std::strerror(errno);
        ::close(fd);
        fd = -1;
        return;
      }
  }
  ~FileLock() {
    if (fd >= 0)
      ::close(fd);
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  std::string error; ///< why the lock was not taken; empty when held

private:
  int fd = -1;
};

} // namespace

double crossoverDensity(double denseSeconds, double fixedSeconds, double eventSeconds,
                        double density) {
  if (fixedSeconds >= denseSeconds)
    return 0.0;
  double perDensity = density > 0 ? (eventSeconds - fixedSeconds) / density : 0.0;
  if (perDensity <= 0)
    return 1.0;
  return std::clamp((denseSeconds - fixedSeconds) / perDensity, 0.0, 1.0);
}

std::string userKernelCrossoversPath() {
  return schema::userCacheFile(kKernelCrossoversEnv, "kernel-crossovers.json");
}

std::string kernelMachineName() {
  schema::MachineIdentity machine = schema::thisMachine();
  return machine.cpu + ", " + std::to_string(machine.logicalCpus) + " CPUs, " +
         instructionsName(bestSpikeConvInstructions());
}

SharedCrossover sharedCrossover(const std::string &path, const std::string &key,
                                const std::function<KernelCrossover()> &measure) {
  SharedCrossover result;
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty())
    std::filesystem::create_directories(parent, ec);
  FileLock lock(path + ".lock");
  if (!lock.error.empty()) {
    result.warning = "cannot lock " + path + ".lock (" + lock.error +
                     "); this process times its own kernel crossovers";
    result.crossover = measured(measure);
    return result;
  }
  Json document = readDocument(path, result.warning);
  Json &machine = document[kMachines][kernelMachineName()];
  if (machine.is_object() && machine.contains(key))
    if (std::optional<KernelCrossover> known = fromJson(machine[key])) {
      result.crossover = *known;
      result.fromFile = true;
      return result;
    }
  result.crossover = measured(measure);
  if (!machine.is_object())
    machine = Json::object();
  machine[key] = toJson(result.crossover);
  try {
    writeFileAtomically(path, document.dump(2) + "\n");
  } catch (const std::exception &e) {
    result.warning = std::string(e.what()) + "; this process keeps its kernel crossovers";
  }
  return result;
}

size_t forgetKernelCrossovers(const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return 0;
  FileLock lock(path + ".lock");
  if (!lock.error.empty())
    throw Error("cannot lock " + path + ".lock: " + lock.error);
  std::string warning;
  Json document = readDocument(path, warning);
  Json &machines = document[kMachines];
  auto mine = machines.find(kernelMachineName());
  if (mine == machines.end() || !mine->is_object())
    return 0;
  size_t dropped = mine->size();
  machines.erase(mine);
  writeFileAtomically(path, document.dump(2) + "\n");
  return dropped;
}

} // namespace snn::runtime
