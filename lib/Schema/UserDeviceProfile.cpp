//===- UserDeviceProfile.cpp - The per-user device profile ----------------===//
#include "snn/Schema/UserDeviceProfile.h"

#include "snn/Schema/DeviceProfile.h"

#include <cstdlib>
#include <optional>
#include <sys/stat.h>

namespace snn::schema {

namespace {

std::string environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

} // namespace

std::string userCacheFile(const char *variable, const char *file) {
  std::string named = environment(variable);
  if (named == "none")
    return "";
  if (!named.empty())
    return named;
  std::string cache = environment("XDG_CACHE_HOME");
  if (cache.empty()) {
    std::string home = environment("HOME");
    if (home.empty())
      return "";
    cache = home + "/.cache";
  }
  return cache + "/spikemesh/" + file;
}

std::string userDeviceProfilePath() {
  return userCacheFile(kUserDeviceProfileEnv, "device-profile.json");
}

UserDeviceProfile userDeviceProfile() {
  std::string path = userDeviceProfilePath();
  if (path.empty())
    return {};
  const std::string uncalibrated =
      "; the plan's times are the built-in profile's, measured on this project's reference "
      "machine kind (2 CPUs), not this machine's (run `snn-run calibrate` once to measure it, "
      "or name a profile with --device-profile)";
  if (!exists(path))
    return {kBuiltinDeviceProfile, "no device profile at " + path + uncalibrated};
  std::string error;
  std::optional<DeviceProfile> profile = tryReadDeviceProfile(path, error);
  if (!profile)
    return {kBuiltinDeviceProfile, error + uncalibrated};
  std::string difference = machineDifference(profile->machine, thisMachine());
  if (!difference.empty())
    return {kBuiltinDeviceProfile, path + ": " + difference + uncalibrated};
  return {path, ""};
}

} // namespace snn::schema
