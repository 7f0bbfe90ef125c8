//===- UserDeviceProfile.h - The per-user device profile --------*- C++ -*-===//
//
// One place per user for this machine's measured profile: `snn-run calibrate` and
// `spikemesh.calibrate()` write it when given no file, and `snn-compile` and
// `spikemesh.plan` read it when given no profile, so a plan is calibrated without a flag.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_USERDEVICEPROFILE_H
#define SNN_SCHEMA_USERDEVICEPROFILE_H

#include <string>

namespace snn::schema {

/// The environment variable naming the per-user profile's file, or `none` for no profile at
/// all, not even the built-in one (the test suite sets it, so its plans are the same on every
/// machine).
inline constexpr const char *kUserDeviceProfileEnv = "SPIKEMESH_DEVICE_PROFILE";

/// A per-user file of this machine's measurements: $`variable`, else
/// $XDG_CACHE_HOME/spikemesh/`file`, else $HOME/.cache/spikemesh/`file`; empty when the
/// variable is `none` or neither of the others is set.
std::string userCacheFile(const char *variable, const char *file);

/// userCacheFile(kUserDeviceProfileEnv, "device-profile.json").
std::string userDeviceProfilePath();

/// The profile a plan uses when none is named: `path` is the per-user profile when it exists,
/// reads and measured this machine; otherwise kBuiltinDeviceProfile (the reference machine
/// kind's) and `warning` says in one line why the plan's times are not this machine's and how
/// to calibrate. Both empty when the per-user profile is turned off (`none`): the plan then
/// uses the fixed constants, the same on every machine (what the test suite plans with).
struct UserDeviceProfile {
  std::string path;
  std::string warning;
};
UserDeviceProfile userDeviceProfile();

} // namespace snn::schema

#endif // SNN_SCHEMA_USERDEVICEPROFILE_H
