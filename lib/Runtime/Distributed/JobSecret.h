//===- JobSecret.h - The secret of a launcher's job (private) ---*- C++ -*-===//
//
// The launcher's store (StoreServer.h) closes every connection that does not first send
// the job's secret: 32 random bytes, 64 hex digits. It reaches the ranks in their
// environment (kJobSecretVariable), never on a command line: /proc/<pid>/environ is
// readable by the job's user only, /proc/<pid>/cmdline by all.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_JOBSECRET_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_JOBSECRET_H

#include <string>

namespace snn::dist::detail {

/// The environment variable the launcher passes the secret to its ranks in.
inline constexpr const char *kJobSecretVariable = "SNN_JOB_SECRET";

/// 64 hex digits from /dev/urandom. Throws DistributedError without it.
std::string newJobSecret();
/// Exactly 64 lowercase or uppercase hex digits.
bool validJobSecret(const std::string &secret);
/// Equal strings, in a time that does not depend on where they differ.
bool constantTimeEquals(const std::string &a, const std::string &b);

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_JOBSECRET_H
