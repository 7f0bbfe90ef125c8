//===- SpikeLinearKernels.h - Linear layers fed by spikes -------*- C++ -*-===//
//
// A Linear layer after a neuron reads spikes: exact zeros and ones, most of them zero (2.7% to
// 31% in the zoo's networks). Its output row is then the bias plus the sum of the weight
// columns of the active inputs, and the weight gradient of input k is the sum of the output
// gradients of the rows where k fired: no multiplications, and work in proportion to the
// spikes instead of the dense GEMM's M x K x N. These kernels hold a spike matrix as the
// column indices of its ones per row (SpikeRows) and compute both sums in ascending index
// order; they differ from a BLAS GEMM only in the order of the same additions, so their
// results lie within the float32 bound of that sum (docs/semantics.md).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_SPIKELINEARKERNELS_H
#define SNN_RUNTIME_KERNELS_SPIKELINEARKERNELS_H

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace snn::runtime {

/// The ones of a [rows, cols] spike matrix, row by row: row m's active inputs are
/// columns[offsets[m] .. offsets[m + 1]), ascending.
struct SpikeRows {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> columns;

  int64_t active() const { return int64_t(columns.size()); }
  /// Active inputs over all inputs (0 for an empty matrix).
  double density() const;
  /// What the index form holds, against rows x cols x 4 bytes for the float32 matrix.
  int64_t bytes() const;
};

/// The ones of x [rows, cols] (float32, CPU), or nullopt when x holds any other value (then
/// it is not a spike matrix and the dense path must run).
std::optional<SpikeRows> packSpikes(const at::Tensor &x);

/// The float32 matrix of zeros and ones that `spikes` describes.
at::Tensor unpackSpikes(const SpikeRows &spikes);

/// y [rows, N] = x W^T + b for the spike matrix x and weight [N, cols]: each row the bias (or
/// zero) plus the weight columns of its active inputs, in ascending column order.
at::Tensor spikeLinearForward(const SpikeRows &x, const at::Tensor &weight,
                              const at::Tensor &bias);

/// dL/dW [N, cols] = grad^T x for grad [rows, N]: column k the sum of grad's rows where input
/// k fired, in ascending row order.
at::Tensor spikeLinearWeightGrad(const SpikeRows &x, const at::Tensor &grad);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_SPIKELINEARKERNELS_H
