#include "snn/Dialect/SNN/IR/SNNShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/CheckedArithmetic.h"

std::optional<int64_t> snn::slidingWindowExtent(int64_t input, int64_t kernel, int64_t stride,
                                                int64_t padding, int64_t dilation,
                                                bool ceilMode) {
  if (kernel <= 0 || stride <= 0 || padding < 0 || dilation <= 0)
    return std::nullopt;
  if (mlir::ShapedType::isDynamic(input))
    return mlir::ShapedType::kDynamic;
  // Checked: the numbers come from the model file, where a flipped bit makes them huge.
  std::optional<int64_t> padded = llvm::checkedAdd(input, padding);
  if (padded)
    padded = llvm::checkedAdd(*padded, padding);
  std::optional<int64_t> reach = llvm::checkedMul(dilation, kernel - 1);
  if (!padded || !reach || *reach >= *padded)
    return std::nullopt;
  int64_t span = *padded - *reach - 1;
  int64_t out = span / stride + (ceilMode && span % stride != 0 ? 1 : 0) + 1;
  // PyTorch: with ceil_mode the last window must start inside the input or left padding.
  std::optional<int64_t> lastStart = llvm::checkedMul(out - 1, stride);
  if (ceilMode && (!lastStart || *lastStart >= input + padding))
    --out;
  return out;
}
