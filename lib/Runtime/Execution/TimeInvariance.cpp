//===- TimeInvariance.cpp - Inputs that are the same at every step --------===//

#include "snn/Runtime/Execution/TimeInvariance.h"

#include <c10/core/GradMode.h>

#include <atomic>
#include <cstring>

namespace snn::runtime {

at::Tensor timeInvariantStep(const at::Tensor &x) {
  if (!x.defined() || x.dim() < 2 || x.size(0) < 2 || x.scalar_type() != at::kFloat ||
      !x.device().is_cpu())
    return at::Tensor();
  if (x.stride(0) == 0)
    return x.select(0, 0);
  // Equal values are not equal gradients: each step of a tensor with
  // history gets its own, so only a tensor without one may be collapsed.
  if ((c10::GradMode::is_enabled() && x.requires_grad()) || !x.is_contiguous())
    return at::Tensor();
  const char *base = static_cast<const char *>(x.data_ptr());
  size_t bytes = size_t(x.stride(0)) * x.element_size();
  for (int64_t t = 1; t < x.size(0); ++t)
    if (std::memcmp(base, base + size_t(t) * bytes, bytes) != 0)
      return at::Tensor();
  return x.select(0, 0);
}

namespace {
std::atomic<int64_t> oneStepRuns{0};
} // namespace

int64_t timeInvariantRuns() { return oneStepRuns.load(); }
void countTimeInvariantRun() { ++oneStepRuns; }

at::Tensor repeatedOverTime(const at::Tensor &step, int64_t steps) {
  std::vector<int64_t> sizes{steps};
  sizes.insert(sizes.end(), step.sizes().begin(), step.sizes().end());
  return step.unsqueeze(0).expand(sizes);
}

at::Tensor repeatedStepWithHistory(const at::Tensor &x) {
  if (!x.defined() || x.dim() < 2 || x.stride(0) != 0 || !x.is_view())
    return at::Tensor();
  at::Tensor step(x._base());
  // The base of a view of a view is the first tensor: it must be the step itself.
  if (!step.requires_grad() || step.sizes() != x.sizes().slice(1) ||
      step.strides() != x.strides().slice(1) || step.storage_offset() != x.storage_offset())
    return at::Tensor();
  return step;
}

} // namespace snn::runtime
