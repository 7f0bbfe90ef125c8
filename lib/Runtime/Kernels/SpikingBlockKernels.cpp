//===- SpikingBlockKernels.cpp - BatchNorm, neuron and pool in one pass ---===//
//
// Tensor-level entry points of the spiking block: shapes, allocation, the
// per-ISA dispatch (the neuron kernels' choice, NeuronKernels.h) and the
// per-channel reductions of BatchNorm's backward.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Kernels/SpikingBlockKernels.h"
#include "SpikingBlockKernelsIsa.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include <vector>

namespace snn::runtime {

namespace {

BlockDims dimsOf(const at::Tensor &x, const SpikingBlock &block) {
  BlockDims dims{x.size(0), x.size(1) * x.size(2), x.size(2), x.size(3), x.size(4),
                 x.stride(0),          block.pool.has_value(),
                 block.pool.value_or(MaxPoolWindow{}), x.size(3), x.size(4)};
  if (dims.pooled) {
    dims.outHeight = (dims.height - dims.pool.kernelH) / dims.pool.strideH + 1;
    dims.outWidth = (dims.width - dims.pool.kernelW) / dims.pool.strideW + 1;
  }
  return dims;
}

/// The affine's tensors, or scale 1 and shift 0 without a BatchNorm (x * 1 +
/// 0 is x, up to the sign of a zero, which no spike or potential can see).
struct AffineTensors {
  at::Tensor scale, shift;
  bool fma = false;
  BlockAffine raw() const {
    return {scale.data_ptr<float>(), shift.data_ptr<float>(), fma};
  }
};

AffineTensors affineOf(const SpikingBlock &block, int64_t channels) {
  if (block.affine)
    return {block.affine->scale.contiguous(), block.affine->shift.contiguous(),
            block.affine->fma};
  return {at::ones({channels}, at::kFloat), at::zeros({channels}, at::kFloat), false};
}

#if defined(SNN_HAVE_AVX2_KERNELS)
bool useAvx2() { return neuronKernelIsa() == KernelIsa::Avx2; }
#else
bool useAvx2() { return false; }
#endif

} // namespace

bool spikingBlockApplies(const at::Tensor &x, const SpikingBlock &block) {
  if (!x.defined() || x.dim() != 5 || x.scalar_type() != at::kFloat || !x.device().is_cpu() ||
      x.numel() == 0)
    return false;
  // Dense, or one dense step repeated over T (TimeInvariance.h).
  if (!x.is_contiguous() && !(x.stride(0) == 0 && x.select(0, 0).is_contiguous()))
    return false;
  if (block.affine && (block.affine->scale.numel() != x.size(2) ||
                       block.affine->shift.numel() != x.size(2)))
    return false;
  if (!block.pool)
    return true;
  const MaxPoolWindow &w = *block.pool;
  return w.kernelH >= 1 && w.kernelW >= 1 && w.kernelH * w.kernelW <= 256 &&
         w.strideH >= 1 && w.strideW >= 1 && w.kernelH <= x.size(3) && w.kernelW <= x.size(4);
}

SpikingBlockForwardResult spikingBlockForward(const at::Tensor &x, const SpikingBlock &block,
                                              bool save) {
  if (!spikingBlockApplies(x, block))
    throw Error("spiking block: unsupported input " + std::to_string(x.dim()) + "-D");
  BlockDims dims = dimsOf(x, block);
  SpikingBlockForwardResult result;
  result.output = at::empty({x.size(0), x.size(1), x.size(2), dims.outHeight, dims.outWidth},
                            x.options());
  if (save) {
    result.h = at::empty(x.sizes(), x.options());
    if (dims.pooled)
      result.argmax = at::empty(result.output.sizes(), x.options().dtype(at::kByte));
  }
  AffineTensors affine = affineOf(block, dims.channels);
  float *h = save ? result.h.data_ptr<float>() : nullptr;
  uint8_t *argmax = result.argmax.defined() ? result.argmax.data_ptr<uint8_t>() : nullptr;
  auto k = float(block.k);
  if (useAvx2())
    avx2::blockForward(block.neuron, k, dims, affine.raw(), x.data_ptr<float>(),
                       result.output.data_ptr<float>(), h, argmax);
  else
    baseline::blockForward(block.neuron, k, dims, affine.raw(), x.data_ptr<float>(),
                           result.output.data_ptr<float>(), h, argmax);
  return result;
}

SpikingBlockBackwardResult spikingBlockBackward(const at::Tensor &gradOutput,
                                                const at::Tensor &h, const at::Tensor &argmax,
                                                const at::Tensor &x, const SpikingBlock &block) {
  BlockDims dims = dimsOf(x, block);
  at::Tensor grad = gradOutput.contiguous();
  std::vector<int64_t> outShape{x.size(0), x.size(1), x.size(2), dims.outHeight, dims.outWidth};
  if (grad.sizes() != at::IntArrayRef(outShape))
    throw Error("spiking block: gradient of shape " + formatShape(grad.sizes()) +
                " for an output of shape " + formatShape(outShape));
  SpikingBlockBackwardResult result;
  result.gradInput = at::empty(h.sizes(), h.options());
  AffineTensors affine = affineOf(block, dims.channels);
  BlockGradients grads{grad.data_ptr<float>(),
                       dims.pooled ? argmax.data_ptr<uint8_t>() : nullptr, h.data_ptr<float>(),
                       x.data_ptr<float>(), result.gradInput.data_ptr<float>()};
  auto k = float(block.k);
  result.gradK = useAvx2() ? avx2::blockBackward(block.neuron, k, dims, affine.raw(), grads)
                           : baseline::blockBackward(block.neuron, k, dims, affine.raw(), grads);
  return result;
}

} // namespace snn::runtime
