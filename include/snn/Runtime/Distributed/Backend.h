//===- Backend.h - Which collective library a job uses ----------*- C++ -*-===//
//
// Gloo on CPU; NCCL on CUDA in builds with SNN_WITH_NCCL (SNN_ENABLE_CUDA).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_BACKEND_H
#define SNN_RUNTIME_DISTRIBUTED_BACKEND_H

#include <string>

namespace snn::dist {

enum class Backend {
  Gloo, ///< CPU tensors, TCP (loopback or the host's interface).
  Nccl, ///< CUDA tensors; only in builds with SNN_WITH_NCCL.
};

/// "gloo" / "nccl".
const char *backendName(Backend backend);
/// Parses "gloo" or "nccl"; throws DistributedError otherwise, and for
/// "nccl" in a build without SNN_WITH_NCCL.
Backend parseBackend(const std::string &name);
/// Whether this build has the NCCL path (SNN_WITH_NCCL).
bool ncclAvailable();

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_BACKEND_H
