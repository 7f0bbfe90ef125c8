#ifndef SNN_DIALECT_SNN_IR_SNNSHAPEINFERENCE_H
#define SNN_DIALECT_SNN_IR_SNNSHAPEINFERENCE_H

#include <cstdint>
#include <optional>
#include <string>

namespace snn {

/// Output extent of a sliding window (conv or pool) along one spatial dimension, with
/// PyTorch's rules. Returns ShapedType::kDynamic for a dynamic input, nullopt when the window
/// does not fit (the caller reports it).
std::optional<int64_t> slidingWindowExtent(int64_t input, int64_t kernel, int64_t stride,
                                           int64_t padding, int64_t dilation, bool ceilMode);

} // namespace snn

#endif
