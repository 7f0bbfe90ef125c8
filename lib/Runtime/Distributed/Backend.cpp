//===- Backend.cpp - Which collective library a job uses ------------------===//

#include "snn/Runtime/Distributed/Backend.h"
#include "snn/Runtime/Distributed/Error.h"

namespace snn::dist {

const char *backendName(Backend backend) {
  return backend == Backend::Nccl ? "nccl" : "gloo";
}

bool ncclAvailable() {
#ifdef SNN_WITH_NCCL
  return true;
#else
  return false;
#endif
}

Backend parseBackend(const std::string &name) {
  if (name == "gloo")
    return Backend::Gloo;
  if (name == "nccl") {
    if (!ncclAvailable())
      throw DistributedError(
          "backend nccl: this build has no NCCL path (configure with "
          "-DSNN_ENABLE_CUDA=ON against a CUDA LibTorch)");
    return Backend::Nccl;
  }
  throw DistributedError("unknown backend '" + name +
                         "' (expected gloo or nccl)");
}

} // namespace snn::dist
