//===- SpikeConvWeightGradKernels.cpp - conv2d weight gradient from spikes ===//

#include "SpikeConvKernelsImpl.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <vector>

namespace snn::runtime {

using namespace spike_conv;

namespace {

/// `row[0..n) += tap[0..n)`: one output position's channels.
__attribute__((target_clones("avx2", "default"))) void
addTap(float *__restrict row, const float *__restrict tap, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    row[i] += tap[i];
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

/// Adds one sample's terms to acc [C, kH, kW, O]: for each input that fired
/// (bits in NHWC order), the gradient rows of the outputs each tap reached.
void weightGradOfSample(const uint8_t *bits, int64_t firstBit, const float *grad, const Shape &s,
                        const SpikeConvGeometry &g, float *acc) {
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

/// The weight gradient of kernels other than 3 x 3 and 1 x 1 (and of images
/// too large for ActivePixels' packing): partial sums
/// [C, kH, kW, O] of four samples each, each input that fired adding the
/// gradient rows its taps reached, the partials added in sample order (the
/// same result for any thread count).
at::Tensor weightGradByScatter(const at::Tensor &bits, const at::Tensor &grad, const Shape &s,
                               const SpikeConvGeometry &g) {
  constexpr int64_t kSamplesPerPartial = 4;
  const int64_t imageBits = s.channels * s.height * s.width;
  at::Tensor g32 = grad.contiguous(at::MemoryFormat::ChannelsLast); // rows of O channels
  const int64_t tapsSize = s.channels * s.kh * s.kw * s.outputs;
  const int64_t partials = (s.batch + kSamplesPerPartial - 1) / kSamplesPerPartial;
  std::vector<float> sums(size_t(partials * tapsSize), 0.0f);
  const uint8_t *b = bits.data_ptr<uint8_t>();
  const float *gradData = g32.data_ptr<float>();
  const int64_t gradImage = s.outputs * s.outHeight * s.outWidth;
  at::parallel_for(0, partials, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      for (int64_t n = p * kSamplesPerPartial; n < std::min(s.batch, (p + 1) * kSamplesPerPartial);
           ++n)
        weightGradOfSample(b, n * imageBits, gradData + n * gradImage, s, g,
                           sums.data() + p * tapsSize);
  });
  for (int64_t p = 1; p < partials; ++p)
    addTap(sums.data(), sums.data() + p * tapsSize, tapsSize);
  at::Tensor taps = at::from_blob(sums.data(), {s.channels, s.kh, s.kw, s.outputs}, grad.options());
  return taps.permute({3, 0, 1, 2}).contiguous();
}

/// The active pixels of every (sample, channel), pixel order, from NHWC
/// bits: list (n, c) is pixels[offsets[n * C + c] .. offsets[n * C + c + 1]),
/// each pixel as y << 16 | x.
struct ActivePixels {
  std::vector<int64_t> offsets;
  std::vector<int32_t> pixels;
};

ActivePixels listActivePixels(const uint8_t *bits, const Shape &s) {
  const int64_t C = s.channels, pixels = s.height * s.width, lists = s.batch * C;
  auto isSet = [&](int64_t bit) { return (bits[bit >> 3] >> (bit & 7)) & 1; };
  ActivePixels a;
  a.offsets.assign(size_t(lists + 1), 0);
  at::parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      for (int64_t p = 0; p < pixels; ++p)
        for (int64_t c = 0, bit = (n * pixels + p) * C; c < C; ++c, ++bit)
          a.offsets[size_t(n * C + c + 1)] += isSet(bit);
  });
  for (int64_t l = 0; l < lists; ++l)
    a.offsets[size_t(l + 1)] += a.offsets[size_t(l)];
  // A spare slot past the lists.
  const int64_t last = a.offsets.back();
  a.pixels.resize(size_t(last + 1));
  at::parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> next(a.offsets.begin() + begin * C, a.offsets.begin() + end * C);
    for (int64_t n = begin; n < end; ++n)
      for (int64_t p = 0; p < pixels; ++p) {
        const int32_t packed = int32_t((p / s.width) << 16 | (p % s.width));
        int64_t *nextOfSample = next.data() + (n - begin) * C;
        const int64_t *ends = a.offsets.data() + n * C + 1;
        // Written always, kept where the bit is set (no branch on the spikes);
        // a full list writes to the spare slot.
        for (int64_t c = 0, bit = (n * pixels + p) * C; c < C; ++c, ++bit) {
          int64_t at = nextOfSample[c] < ends[c] ? nextOfSample[c] : last;
          a.pixels[size_t(at)] = packed;
          nextOfSample[c] += isSet(bit);
        }
      }
  });
  return a;
}

/// Where each input coordinate lands through each tap along one axis:
/// out[i * k + t], or -1 where it reaches no output.
std::vector<int32_t> outputsAlong(int64_t size, int64_t k, int64_t stride, int64_t pad,
                                  int64_t dilation, int64_t outSize) {
  std::vector<int32_t> out(size_t(size * k), -1);
  for (int64_t i = 0; i < size; ++i)
    for (int64_t t = 0; t < k; ++t) {
      int64_t o;
      if (outputOf(i, t, stride, pad, dilation, outSize, o))
        out[size_t(i * k + t)] = int32_t(o);
    }
  return out;
}

/// What weightGradOfChannel reads: the active pixels, the tap tables, and
/// `grad` channels-last [B, OH, OW, O] (O padded to whole blocks).
struct WeightGradInput {
  const ActivePixels *active;
  const int32_t *rowsOf, *columnsOf; // outputsAlong of y and of x
  const float *grad;
  Shape shape;
};

/// Adds to `out` [Taps, 16 * Chunks] the terms of sample n for input channel
/// c and the block of output channels whose first is `first`: for each pixel
/// where c fired, the gradient rows of the outputs its taps reached (the
/// kernel's KH x KW known here, so the taps' sums stay in registers).
template <typename Vec, int KH, int KW, int Chunks>
SNN_SPIKE_CONV_INLINE void weightGradOfChannel(const WeightGradInput &in, int64_t n, int64_t c,
                                               int64_t first, float *out) {
  using Load = typename Unaligned<Vec>::type;
  constexpr int lanes = sizeof(Vec) / sizeof(float), V = 16 * Chunks / lanes, Taps = KH * KW;
  const Shape &s = in.shape;
  const int64_t O = s.outputs;
  const float *sample = in.grad + n * s.outHeight * s.outWidth * O + first;
  Vec acc[Taps][V];
  for (int t = 0; t < Taps; ++t)
    for (int v = 0; v < V; ++v)
      acc[t][v] = *reinterpret_cast<const Load *>(out + t * 16 * Chunks + lanes * v);
  const int64_t list = n * s.channels + c;
  for (int64_t k = in.active->offsets[size_t(list)]; k < in.active->offsets[size_t(list + 1)];
       ++k) {
    const int32_t p = in.active->pixels[size_t(k)];
    const int32_t *rows = in.rowsOf + (p >> 16) * KH, *columns = in.columnsOf + (p & 0xffff) * KW;
    for (int t = 0; t < Taps; ++t) {
      int32_t oy = rows[t / KW], ox = columns[t % KW];
      if ((oy | ox) < 0)
        continue;
      const float *row = sample + (oy * s.outWidth + ox) * O;
      for (int v = 0; v < V; ++v)
        acc[t][v] += *reinterpret_cast<const Load *>(row + lanes * v);
    }
  }
  for (int t = 0; t < Taps; ++t)
    for (int v = 0; v < V; ++v)
      *reinterpret_cast<Load *>(out + t * 16 * Chunks + lanes * v) = acc[t][v];
}

/// weightGradOfChannel for kernels of 9 taps (3 x 3, 32 channels a block) and
/// of one (1 x 1, 64): `out` is [Taps, width] for the block.
template <typename Vec>
SNN_SPIKE_CONV_INLINE void weightGradOfBlock(const WeightGradInput &in, int64_t n, int64_t c,
                                             int64_t first, float *out) {
  if (in.shape.kh == 3 && in.shape.kw == 3)
    weightGradOfChannel<Vec, 3, 3, 2>(in, n, c, first, out);
  else
    weightGradOfChannel<Vec, 1, 1, 4>(in, n, c, first, out);
}

using WeightGradOfBlock = void (*)(const WeightGradInput &, int64_t, int64_t, int64_t, float *);

__attribute__((target("avx512f"))) void weightGradOfBlockAvx512(const WeightGradInput &in,
                                                                int64_t n, int64_t c, int64_t first,
                                                                float *out) {
  weightGradOfBlock<Vec16>(in, n, c, first, out);
}

__attribute__((target("avx2"))) void weightGradOfBlockAvx2(const WeightGradInput &in, int64_t n,
                                                           int64_t c, int64_t first, float *out) {
  weightGradOfBlock<Vec8>(in, n, c, first, out);
}

void weightGradOfBlockBaseline(const WeightGradInput &in, int64_t n, int64_t c, int64_t first,
                               float *out) {
  weightGradOfBlock<Vec8>(in, n, c, first, out);
}

/// Output channels of one block of the weight gradient (weightGradOfBlock).
int64_t weightGradBlock(const Shape &s) { return s.kh == 3 ? 32 : 64; }

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
  const bool square3 = s.kh == 3 && s.kw == 3, single = s.kh == 1 && s.kw == 1;
  // The listed pixels are packed as y << 16 | x in an int32.
  const bool packable = s.height < (int64_t(1) << 15) && s.width < (int64_t(1) << 16);
  if ((!square3 && !single) || !packable)
    return weightGradByScatter(bits, grad, s, g);
  ActivePixels active = listActivePixels(bits.data_ptr<uint8_t>(), s);
  // Channels-last with O padded to whole blocks, so every block reads whole
  // vectors: a channels-last gradient of whole blocks as it is, else a copy.
  const int64_t block = weightGradBlock(s), padded = (s.outputs + block - 1) / block * block;
  at::Tensor rows = grad.permute({0, 2, 3, 1});
  if (padded != s.outputs || !rows.is_contiguous()) {
    rows = at::zeros({s.batch, s.outHeight, s.outWidth, padded}, grad.options());
    rows.narrow(3, 0, s.outputs).copy_(grad.permute({0, 2, 3, 1}));
  }
  std::vector<int32_t> rowsOf =
      outputsAlong(s.height, s.kh, g.stride[0], g.padding[0], g.dilation[0], s.outHeight);
  std::vector<int32_t> columnsOf =
      outputsAlong(s.width, s.kw, g.stride[1], g.padding[1], g.dilation[1], s.outWidth);
  WeightGradInput in{&active, rowsOf.data(), columnsOf.data(), rows.data_ptr<float>(), s};
  in.shape.outputs = padded;
  const int64_t taps = s.kh * s.kw, blocks = padded / block;
  at::Tensor sums = at::zeros({s.channels, blocks, taps, block}, grad.options());
  const WeightGradOfBlock weightGradOfBlockOnThisCpu = forInstructions<WeightGradOfBlock>(
      weightGradOfBlockAvx512, weightGradOfBlockAvx2, weightGradOfBlockBaseline);
  // A sample at a time, so its gradient stays in cache while every (channel,
  // block) unit reads it; each unit is summed by one thread, in sample and
  // pixel order: the same result for any thread count.
  for (int64_t n = 0; n < s.batch; ++n)
    at::parallel_for(0, s.channels * blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u)
        weightGradOfBlockOnThisCpu(in, n, u / blocks, (u % blocks) * block,
                                   sums.data_ptr<float>() + u * taps * block);
    });
  // [C, blocks, taps, block] -> [O, C, kH, kW]
  return sums.permute({1, 3, 0, 2})
      .reshape({padded, s.channels, s.kh, s.kw})
      .narrow(0, 0, s.outputs)
      .contiguous();
}

} // namespace snn::runtime
