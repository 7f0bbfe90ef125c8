//===- ConvolutionLayout.cpp - Channels-last convolution chains -----------===//

#include "snn/Runtime/Execution/ConvolutionLayout.h"

#include <atomic>

namespace snn::runtime {

namespace {
std::atomic<bool> enabled{true};
std::atomic<int64_t> runs{0};
} // namespace

void setChannelsLastConvolutionEnabled(bool value) { enabled.store(value); }
bool channelsLastConvolutionEnabled() { return enabled.load(); }
int64_t channelsLastConvolutions() { return runs.load(); }

at::Tensor convolutionInput(const at::Tensor &x) {
  if (!enabled.load() || x.dim() != 4 || x.scalar_type() != at::kFloat || !x.device().is_cpu())
    return x;
  ++runs;
  return x.contiguous(at::MemoryFormat::ChannelsLast);
}

} // namespace snn::runtime
