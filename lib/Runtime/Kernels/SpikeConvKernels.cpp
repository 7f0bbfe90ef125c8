//===- SpikeConvKernels.cpp - Convolutions fed by spikes ------------------===//

#include "snn/Runtime/Kernels/SpikeConvKernels.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>

#include <atomic>
#include <vector>

namespace snn::runtime {

namespace {

std::atomic<double> maxDensity{0.0};
std::atomic<int64_t> spikeCalls{0}, denseCalls{0};

struct Shape {
  int64_t batch, channels, height, width, outputs, kh, kw, outHeight, outWidth;
};

/// `row[0..n) += tap[0..n)`: one output position's channels.
__attribute__((target_clones("avx2", "default"))) void addTap(float *__restrict row,
                                                             const float *__restrict tap,
                                                             int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    row[i] += tap[i];
}

/// The output positions input (y, x) reaches through tap (ky, kx), if any.
inline bool outputOf(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                     int64_t size, int64_t &out) {
  int64_t shifted = in + pad - k * dilation;
  if (shifted < 0 || shifted % stride != 0)
    return false;
  out = shifted / stride;
  return out < size;
}

/// Calls visit(ky * kW + kx, oy * OW + ox) for every tap (ky, kx) through
/// which input (iy, ix) reaches an output (oy, ox).
template <typename Visit>
inline void forEachTap(int64_t iy, int64_t ix, const Shape &s, const SpikeConvGeometry &g,
                       Visit visit) {
  for (int64_t ky = 0; ky < s.kh; ++ky) {
    int64_t oy;
    if (!outputOf(iy, ky, g.stride[0], g.padding[0], g.dilation[0], s.outHeight, oy))
      continue;
    for (int64_t kx = 0; kx < s.kw; ++kx) {
      int64_t ox;
      if (outputOf(ix, kx, g.stride[1], g.padding[1], g.dilation[1], s.outWidth, ox))
        visit(ky * s.kw + kx, oy * s.outWidth + ox);
    }
  }
}

/// One sample: acc [OH*OW, O] from the active inputs, then y [O, OH*OW].
void convolveSample(const float *x, const float *taps, const float *bias, const Shape &s,
                    const SpikeConvGeometry &g, std::vector<float> &acc, float *y) {
  const int64_t O = s.outputs, positions = s.outHeight * s.outWidth;
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t o = 0; o < O; ++o)
      acc[size_t(p * O + o)] = bias ? bias[o] : 0.0f;
  for (int64_t c = 0; c < s.channels; ++c)
    for (int64_t iy = 0; iy < s.height; ++iy)
      for (int64_t ix = 0; ix < s.width; ++ix) {
        if (x[(c * s.height + iy) * s.width + ix] == 0.0f)
          continue;
        forEachTap(iy, ix, s, g, [&](int64_t tap, int64_t position) {
          addTap(acc.data() + position * O, taps + (c * s.kh * s.kw + tap) * O, O);
        });
      }
  for (int64_t o = 0; o < O; ++o)
    for (int64_t p = 0; p < positions; ++p)
      y[o * positions + p] = acc[size_t(p * O + o)];
}

} // namespace

at::Tensor spikeConv2dForward(const at::Tensor &x, const at::Tensor &weight,
                              const at::Tensor &bias, const SpikeConvGeometry &g) {
  if (x.dim() != 4 || weight.dim() != 4 || x.size(1) != weight.size(1))
    throw Error("spike conv2d: expects x [B, C, H, W] and a weight [O, C, kH, kW]");
  Shape s{x.size(0), x.size(1), x.size(2), x.size(3), weight.size(0), weight.size(2),
          weight.size(3), 0, 0};
  s.outHeight = (s.height + 2 * g.padding[0] - g.dilation[0] * (s.kh - 1) - 1) / g.stride[0] + 1;
  s.outWidth = (s.width + 2 * g.padding[1] - g.dilation[1] * (s.kw - 1) - 1) / g.stride[1] + 1;
  // [C, kH, kW, O]: each tap's output channels contiguous.
  at::Tensor taps = weight.permute({1, 2, 3, 0}).contiguous();
  at::Tensor b = bias.defined() ? bias.contiguous() : at::Tensor();
  at::Tensor in = x.contiguous();
  at::Tensor y = at::empty({s.batch, s.outputs, s.outHeight, s.outWidth}, x.options());
  const int64_t inSize = s.channels * s.height * s.width;
  const int64_t outSize = s.outputs * s.outHeight * s.outWidth;
  at::parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(outSize));
    for (int64_t n = begin; n < end; ++n)
      convolveSample(in.data_ptr<float>() + n * inSize, taps.data_ptr<float>(),
                     b.defined() ? b.data_ptr<float>() : nullptr, s, g, acc,
                     y.data_ptr<float>() + n * outSize);
  });
  return y;
}

namespace {

/// Samples whose weight-gradient terms one partial sum holds: partials are
/// added in sample order, so the result does not depend on the thread count.
constexpr int64_t kSamplesPerPartial = 4;

/// Adds one sample's terms to acc [C, kH, kW, O]: for each input that fired
/// (bits in NHWC order), the gradient rows of the outputs each tap reached.
void weightGradOfSample(const uint8_t *bits, int64_t firstBit, const float *grad,
                        const Shape &s, const SpikeConvGeometry &g, float *acc) {
  const int64_t O = s.outputs;
  for (int64_t iy = 0; iy < s.height; ++iy)
    for (int64_t ix = 0; ix < s.width; ++ix) {
      const int64_t pixel = firstBit + (iy * s.width + ix) * s.channels;
      for (int64_t c = 0; c < s.channels; ++c) {
        int64_t bit = pixel + c;
        if (((bits[bit >> 3] >> (bit & 7)) & 1) == 0)
          continue;
        forEachTap(iy, ix, s, g, [&](int64_t tap, int64_t position) {
          addTap(acc + (c * s.kh * s.kw + tap) * O, grad + position * O, O);
        });
      }
    }
}

} // namespace

at::Tensor spikeConv2dWeightGrad(const at::Tensor &bits, at::IntArrayRef inputSizes,
                                 const at::Tensor &grad, at::IntArrayRef weightSizes,
                                 const SpikeConvGeometry &g) {
  if (inputSizes.size() != 4 || weightSizes.size() != 4 || grad.dim() != 4 ||
      grad.size(0) != inputSizes[0] || grad.size(1) != weightSizes[0] ||
      inputSizes[1] != weightSizes[1])
    throw Error("spike conv2d weight gradient: expects x [B, C, H, W], a gradient "
                "[B, O, OH, OW] and a weight [O, C, kH, kW]");
  Shape s{inputSizes[0],  inputSizes[1],  inputSizes[2], inputSizes[3], weightSizes[0],
          weightSizes[2], weightSizes[3], grad.size(2),  grad.size(3)};
  const int64_t imageBits = s.channels * s.height * s.width;
  if (bits.numel() != (s.batch * imageBits + 7) / 8)
    throw Error("spike conv2d weight gradient: " + std::to_string(bits.numel()) +
                " bytes of bits for " + std::to_string(s.batch * imageBits) + " inputs");
  at::Tensor g32 = grad.contiguous(at::MemoryFormat::ChannelsLast); // rows of O channels
  const int64_t tapsSize = s.channels * s.kh * s.kw * s.outputs;
  const int64_t partials = (s.batch + kSamplesPerPartial - 1) / kSamplesPerPartial;
  std::vector<float> sums(size_t(partials * tapsSize), 0.0f);
  const uint8_t *b = bits.data_ptr<uint8_t>();
  const float *gradData = g32.data_ptr<float>();
  const int64_t gradImage = s.outputs * s.outHeight * s.outWidth;
  at::parallel_for(0, partials, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      for (int64_t n = p * kSamplesPerPartial;
           n < std::min(s.batch, (p + 1) * kSamplesPerPartial); ++n)
        weightGradOfSample(b, n * imageBits, gradData + n * gradImage, s, g,
                           sums.data() + p * tapsSize);
  });
  for (int64_t p = 1; p < partials; ++p)
    addTap(sums.data(), sums.data() + p * tapsSize, tapsSize);
  at::Tensor taps = at::from_blob(sums.data(), {s.channels, s.kh, s.kw, s.outputs},
                                  grad.options());
  return taps.permute({3, 0, 1, 2}).contiguous();
}

void setSpikeConvMaxDensity(double density) { maxDensity.store(density); }
double spikeConvMaxDensity() { return maxDensity.load(); }

SpikeConvCounts spikeConvCounts() { return {spikeCalls.load(), denseCalls.load()}; }
void countSpikeConv(bool onSpikes) { ++(onSpikes ? spikeCalls : denseCalls); }

} // namespace snn::runtime
