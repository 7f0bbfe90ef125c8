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

/// Whether x is NCHW: dense, or one dense step repeated over T.
bool planarSteps(const at::Tensor &x) {
  return x.is_contiguous() || (x.stride(0) == 0 && x.select(0, 0).is_contiguous());
}

BlockDims dimsOf(const at::Tensor &x, const SpikingBlock &block) {
  BlockDims dims{x.size(0), x.size(1) * x.size(2), x.size(2), x.size(3), x.size(4),
                 x.stride(0),          block.pool.has_value(),
                 block.pool.value_or(MaxPoolWindow{}), x.size(3), x.size(4),
                 !planarSteps(x)};
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

/// An uninitialised [T, N, C, H, W] tensor laid out as x's steps are.
at::Tensor emptyLike5d(at::IntArrayRef sizes, const at::TensorOptions &options,
                       bool channelsLast) {
  if (!channelsLast)
    return at::empty(sizes, options);
  return at::empty({sizes[0] * sizes[1], sizes[2], sizes[3], sizes[4]},
                   options.memory_format(at::MemoryFormat::ChannelsLast))
      .view(sizes);
}

} // namespace

bool channelsLastSteps(const at::Tensor &x) {
  if (!x.defined() || x.dim() != 5 || x.numel() == 0 || planarSteps(x))
    return false;
  if (x.stride(0) == 0)
    return x.select(0, 0).is_contiguous(at::MemoryFormat::ChannelsLast);
  // The [T*N] fold must be a view of x for its strides to be x's. A size-1
  // dimension's stride is arbitrary (a one-sample microbatch's convolution
  // gives N the channel count's stride), and folding it is always a view.
  return (x.size(0) == 1 || x.size(1) == 1 || x.stride(0) == x.size(1) * x.stride(1)) &&
         x.flatten(0, 1).is_contiguous(at::MemoryFormat::ChannelsLast);
}

bool spikingBlockApplies(const at::Tensor &x, const SpikingBlock &block) {
  if (!x.defined() || x.dim() != 5 || x.scalar_type() != at::kFloat || !x.device().is_cpu() ||
      x.numel() == 0)
    return false;
  // Dense NCHW or NHWC steps, possibly one step repeated over T
  // (TimeInvariance.h).
  if (!planarSteps(x) && !channelsLastSteps(x))
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
  result.output = emptyLike5d({x.size(0), x.size(1), x.size(2), dims.outHeight, dims.outWidth},
                               x.options(), dims.channelsLast);
  if (save && dims.pooled)
    result.argmax = emptyLike5d(result.output.sizes(), x.options().dtype(at::kByte),
                                dims.channelsLast);
  AffineTensors affine = affineOf(block, dims.channels);
  uint8_t *argmax = result.argmax.defined() ? result.argmax.data_ptr<uint8_t>() : nullptr;
  auto k = float(block.k);
  if (useAvx2())
    result.fired = avx2::blockForward(block.neuron, k, dims, affine.raw(), x.data_ptr<float>(),
                                      result.output.data_ptr<float>(), argmax);
  else
    result.fired = baseline::blockForward(block.neuron, k, dims, affine.raw(),
                                          x.data_ptr<float>(), result.output.data_ptr<float>(),
                                          argmax);
  return result;
}

SpikingBlockBackwardResult spikingBlockBackward(const at::Tensor &gradOutput,
                                                const at::Tensor &argmax, const at::Tensor &x,
                                                const SpikingBlock &block,
                                                const BlockNormSums *norm,
                                                bool sumOverSteps) {
  if (sumOverSteps && x.stride(0) != 0)
    throw Error("spiking block: a gradient summed over the steps of an input that is not one "
                "step repeated");
  BlockDims dims = dimsOf(x, block);
  std::vector<int64_t> outShape{x.size(0), x.size(1), x.size(2), dims.outHeight, dims.outWidth};
  if (gradOutput.sizes() != at::IntArrayRef(outShape))
    throw Error("spiking block: gradient of shape " + formatShape(gradOutput.sizes()) +
                " for an output of shape " + formatShape(outShape));
  // The gradient in the output's layout (the next layer's backward may give another).
  at::Tensor grad = dims.channelsLast ? gradOutput.flatten(0, 1)
                                            .contiguous(at::MemoryFormat::ChannelsLast)
                                            .view(outShape)
                                      : gradOutput.contiguous();
  SpikingBlockBackwardResult result;
  result.gradInput =
      sumOverSteps
          ? at::empty(x.sizes().slice(1),
                      x.options().memory_format(dims.channelsLast ? at::MemoryFormat::ChannelsLast
                                                                  : at::MemoryFormat::Contiguous))
          : emptyLike5d(x.sizes(), x.options(), dims.channelsLast);
  AffineTensors affine = affineOf(block, dims.channels);
  BlockGradients grads{grad.data_ptr<float>(),
                       dims.pooled ? argmax.data_ptr<uint8_t>() : nullptr, x.data_ptr<float>(),
                       result.gradInput.data_ptr<float>()};
  if (norm) {
    grads.normMean = norm->mean;
    grads.normSum = norm->sum;
    grads.normDot = norm->dot;
  }
  grads.sumSteps = sumOverSteps;
  auto k = float(block.k);
  result.gradK = useAvx2() ? avx2::blockBackward(block.neuron, k, dims, affine.raw(), grads)
                           : baseline::blockBackward(block.neuron, k, dims, affine.raw(), grads);
  return result;
}

} // namespace snn::runtime
