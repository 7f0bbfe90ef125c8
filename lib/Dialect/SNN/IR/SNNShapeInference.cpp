#include "snn/Dialect/SNN/IR/SNNShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"

std::optional<int64_t> snn::slidingWindowExtent(int64_t input, int64_t kernel, int64_t stride,
                                                int64_t padding, int64_t dilation,
                                                bool ceilMode) {
  if (kernel <= 0 || stride <= 0 || padding < 0 || dilation <= 0)
    return std::nullopt;
  if (mlir::ShapedType::isDynamic(input))
    return mlir::ShapedType::kDynamic;
  int64_t span = input + 2 * padding - dilation * (kernel - 1) - 1;
  if (span < 0)
    return std::nullopt;
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // PyTorch: with ceil_mode the last window must start inside the input or left padding.
  if (ceilMode && (out - 1) * stride >= input + padding)
    --out;
  return out;
}
