//===- SpikeLinearAutograd.h - Event-driven Linear in autograd ---*- C++ -*-===//
//
// The spike kernels of SpikeLinearKernels.h as a Linear layer: forward accumulates the weight
// columns of the active inputs, backward computes x's gradient densely (grad W: it is not
// sparse) and the weight gradient over the active inputs only. The spikes kept for backward
// are their indices (4 bytes per spike instead of 4 bytes per input), so a layer at 10%
// firing keeps a tenth of what the dense Linear keeps.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_SPIKELINEARAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_SPIKELINEARAUTOGRAD_H

#include <ATen/core/Tensor.h>

#include <optional>

namespace snn::runtime {

/// at::linear(x, weight, bias) for x [M, in] by the spike kernels, recorded in the autograd
/// graph when grad mode is on and an input requires grad; nullopt, having computed nothing,
/// when x holds a value other than 0 and 1 or more than `maxDensity` of it is ones (then the
/// dense GEMM is the faster path).
std::optional<at::Tensor> spikeLinear(const at::Tensor &x, const at::Tensor &weight,
                                      const at::Tensor &bias, double maxDensity);

/// The process's choice (snn-run's --spike-linear-density): the density up to which the
/// programs' Linear layers take spikeLinear; 0 keeps them dense; kMeasuredDensity
/// (EventKernelDensity.h), the default, takes each layer shape's crossover on this machine.
/// The event kernels add in another order than the BLAS GEMM: results stay within the
/// float32 bound of the sums, not bit-equal to PyTorch's.
void setSpikeLinearMaxDensity(double density);
double spikeLinearMaxDensity();

/// What the spike kernels did in this process, for the logs: calls taken and the mean
/// density of their inputs; calls that fell back to the dense GEMM and why.
struct SpikeLinearCounts {
  int64_t calls = 0;
  double meanDensity = 0;
  int64_t denser = 0;    ///< spikes, but above the density
  int64_t notSpikes = 0; ///< values other than 0 and 1

  /// Whether any Linear call consulted the spike kernels.
  bool any() const { return calls + denser + notSpikes > 0; }
};
SpikeLinearCounts spikeLinearCounts();

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_SPIKELINEARAUTOGRAD_H
