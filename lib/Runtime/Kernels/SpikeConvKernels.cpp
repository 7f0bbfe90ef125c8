//===- SpikeConvKernels.cpp - Convolutions fed by spikes ------------------===//

#include "SpikeConvKernelsImpl.h"
#include "snn/Runtime/Kernels/EventKernelDensity.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <atomic>
#include <vector>

namespace snn::runtime {

using namespace spike_conv;

namespace {

std::atomic<double> maxDensity{kMeasuredDensity};
std::atomic<int64_t> spikeCalls{0}, denseCalls{0};
std::atomic<SpikeConvInstructions> instructions{bestSpikeConvInstructions()};

/// The most output channels one pass sums in registers (four vectors).
constexpr int64_t kMaxBlock = 64;

/// Output channels per pass: all of O up to kMaxBlock, in whole vectors.
int64_t blockWidth(int64_t outputs) { return std::min(kMaxBlock, (outputs + 15) / 16 * 16); }

/// The active channels of each input pixel of one sample, in channel order:
/// `count[p]` of them at `channels + p * C`.
struct ActiveInputs {
  uint16_t *channels;
  int32_t *count;
};

/// Lists one sample's ones (element (c, p) at x[c * cStride + p * pStride]):
/// scanned in memory order, channel-major for an NCHW x and pixel-major for a
/// channels-last one; the lists are the same either way.
void listActiveInputs(const float *x, int64_t C, int64_t pixels, int64_t cStride, int64_t pStride,
                      ActiveInputs out) {
  uint16_t *channels = out.channels;
  int32_t *count = out.count;
  std::fill(count, count + pixels, 0);
  // Every channel is written and only the ones counted: no branch on the
  // spikes, which a random spike pattern would mispredict half the time.
  if (cStride == 1) {
    for (int64_t p = 0; p < pixels; ++p) {
      int32_t n = 0;
      for (int64_t c = 0; c < C; ++c) {
        channels[p * C + n] = uint16_t(c);
        n += x[p * pStride + c] != 0.0f;
      }
      count[p] = n;
    }
    return;
  }
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < pixels; ++p) {
      channels[p * C + count[p]] = uint16_t(c);
      count[p] += x[c * cStride + p * pStride] != 0.0f;
    }
}

/// The weight [O, C, kH, kW] as blocks of `width` output channels, each
/// [kH, kW, C, width] (zeros past O): one tap's row for one input channel is
/// `width` contiguous floats.
at::Tensor blockedTaps(const at::Tensor &weight, int64_t width) {
  const int64_t O = weight.size(0), blocks = (O + width - 1) / width;
  at::Tensor padded =
      at::zeros({blocks * width, weight.size(1), weight.size(2), weight.size(3)}, weight.options());
  padded.narrow(0, 0, O).copy_(weight);
  return padded.view({blocks, width, weight.size(1), weight.size(2), weight.size(3)})
      .permute({0, 3, 4, 2, 1})
      .contiguous();
}

/// One output row (oy) of one block of output channels (V vectors of
/// `Vec`): for each output pixel, the bias plus the block's weight rows of
/// every active input its taps read, summed in registers; pixel ox's sums go
/// to out + ox * outStride. Within a tap, rows alternate between S
/// accumulator sets (S independent chains keep the adds from waiting on each
/// other's latency); the sets are added in order at the end.
template <typename Vec, int V, int S>
SNN_SPIKE_CONV_INLINE void convolveRow(int64_t oy, const ActiveInputs &active, const float *taps,
                                       const float *bias, const Shape &s,
                                       const SpikeConvGeometry &g, float *out, int64_t outStride) {
  using Load = typename Unaligned<Vec>::type;
  constexpr int64_t lanes = sizeof(Vec) / sizeof(float), width = lanes * V;
  const int64_t C = s.channels;
  for (int64_t ox = 0; ox < s.outWidth; ++ox) {
    Vec acc[S][V];
    for (int v = 0; v < V; ++v) {
      acc[0][v] = *reinterpret_cast<const Load *>(bias + lanes * v);
      for (int set = 1; set < S; ++set)
        acc[set][v] = Vec{};
    }
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      int64_t iy = oy * g.stride[0] - g.padding[0] + ky * g.dilation[0];
      if (iy < 0 || iy >= s.height)
        continue;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        int64_t ix = ox * g.stride[1] - g.padding[1] + kx * g.dilation[1];
        if (ix < 0 || ix >= s.width)
          continue;
        int64_t pixel = iy * s.width + ix;
        const uint16_t *list = active.channels + pixel * C;
        const float *tap = taps + (ky * s.kw + kx) * C * width;
        int32_t k = 0, n = active.count[pixel];
        for (; k + S <= n; k += S)
          for (int set = 0; set < S; ++set)
            for (int v = 0; v < V; ++v)
              acc[set][v] +=
                  *reinterpret_cast<const Load *>(tap + int64_t(list[k + set]) * width + lanes * v);
        for (; k < n; ++k)
          for (int v = 0; v < V; ++v)
            acc[0][v] +=
                *reinterpret_cast<const Load *>(tap + int64_t(list[k]) * width + lanes * v);
      }
    }
    for (int set = 1; set < S; ++set)
      for (int v = 0; v < V; ++v)
        acc[0][v] += acc[set][v];
    for (int v = 0; v < V; ++v)
      *reinterpret_cast<Load *>(out + ox * outStride + lanes * v) = acc[0][v];
  }
}

/// convolveRow for a block of `chunks` (1 to 4) times 16 output channels.
template <typename Vec, int S>
SNN_SPIKE_CONV_INLINE void convolveRowOfChunks(int chunks, int64_t oy, const ActiveInputs &active,
                                               const float *taps, const float *bias, const Shape &s,
                                               const SpikeConvGeometry &g, float *out,
                                               int64_t outStride) {
  constexpr int perChunk = 16 / (sizeof(Vec) / sizeof(float));
  switch (chunks) {
  case 1:
    return convolveRow<Vec, perChunk, S>(oy, active, taps, bias, s, g, out, outStride);
  case 2:
    return convolveRow<Vec, 2 * perChunk, S>(oy, active, taps, bias, s, g, out, outStride);
  case 3:
    return convolveRow<Vec, 3 * perChunk, S>(oy, active, taps, bias, s, g, out, outStride);
  default:
    return convolveRow<Vec, 4 * perChunk, S>(oy, active, taps, bias, s, g, out, outStride);
  }
}

// One function per instruction set, chosen once by the CPU (not target_clones:
// AVX-512's 32 registers hold two accumulator sets of 16-float vectors, AVX2's
// 16 one set of 8-float ones).
using ConvolveRow = void (*)(int, int64_t, const ActiveInputs &, const float *, const float *,
                             const Shape &, const SpikeConvGeometry &, float *, int64_t);

__attribute__((target("avx512f"))) void
convolveRowAvx512(int chunks, int64_t oy, const ActiveInputs &active, const float *taps,
                  const float *bias, const Shape &s, const SpikeConvGeometry &g, float *out,
                  int64_t outStride) {
  convolveRowOfChunks<Vec16, 2>(chunks, oy, active, taps, bias, s, g, out, outStride);
}

__attribute__((target("avx2"))) void convolveRowAvx2(int chunks, int64_t oy,
                                                     const ActiveInputs &active, const float *taps,
                                                     const float *bias, const Shape &s,
                                                     const SpikeConvGeometry &g, float *out,
                                                     int64_t outStride) {
  convolveRowOfChunks<Vec8, 1>(chunks, oy, active, taps, bias, s, g, out, outStride);
}

void convolveRowBaseline(int chunks, int64_t oy, const ActiveInputs &active, const float *taps,
                         const float *bias, const Shape &s, const SpikeConvGeometry &g, float *out,
                         int64_t outStride) {
  convolveRowOfChunks<Vec8, 1>(chunks, oy, active, taps, bias, s, g, out, outStride);
}

/// Output row oy of a sample whose output `y` is channels-last [OH, OW, O],
/// all blocks: a block that lies within O is summed into y itself, the last
/// one, where O is not a whole number of vectors, through `row`.
void convolveOutputRow(ConvolveRow convolveRowOnThisCpu, int64_t oy, ActiveInputs active,
                       const float *blocked, const float *bias, const Shape &s,
                       const SpikeConvGeometry &g, std::vector<float> &row, float *y) {
  const int64_t width = blockWidth(s.outputs), O = s.outputs;
  float *out = y + oy * s.outWidth * O;
  for (int64_t first = 0; first < O; first += width) {
    const float *taps = blocked + (first / width) * s.kh * s.kw * s.channels * width;
    if (first + width <= O) {
      convolveRowOnThisCpu(int(width / 16), oy, active, taps, bias + first, s, g, out + first, O);
      continue;
    }
    row.resize(size_t(s.outWidth * width));
    convolveRowOnThisCpu(int(width / 16), oy, active, taps, bias + first, s, g, row.data(), width);
    for (int64_t ox = 0; ox < s.outWidth; ++ox)
      std::copy_n(row.data() + ox * width, O - first, out + ox * O + first);
  }
}

} // namespace

at::Tensor spikeConv2dForward(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias,
                              const SpikeConvGeometry &g) {
  if (x.dim() != 4 || weight.dim() != 4 || x.size(1) != weight.size(1))
    throw Error("spike conv2d: expects x [B, C, H, W] and a weight [O, C, kH, kW]");
  if (x.size(1) > 65536)
    throw Error("spike conv2d: at most 65536 input channels, got " + std::to_string(x.size(1)));
  Shape s{x.size(0),      x.size(1),      x.size(2), x.size(3), weight.size(0),
          weight.size(2), weight.size(3), 0,         0};
  s.outHeight = (s.height + 2 * g.padding[0] - g.dilation[0] * (s.kh - 1) - 1) / g.stride[0] + 1;
  s.outWidth = (s.width + 2 * g.padding[1] - g.dilation[1] * (s.kw - 1) - 1) / g.stride[1] + 1;
  const int64_t width = blockWidth(s.outputs);
  at::Tensor blocked = blockedTaps(weight.contiguous(), width);
  at::Tensor b = at::zeros({(s.outputs + width - 1) / width * width}, x.options());
  if (bias.defined())
    b.narrow(0, 0, s.outputs).copy_(bias);
  const bool channelsLast = x.is_contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor in = channelsLast ? x : x.contiguous();
  const int64_t pixels = s.height * s.width, C = s.channels;
  std::vector<uint16_t> channels(size_t(s.batch * pixels * C));
  std::vector<int32_t> counts(size_t(s.batch * pixels));
  auto activeOf = [&](int64_t n) {
    return ActiveInputs{channels.data() + n * pixels * C, counts.data() + n * pixels};
  };
  at::parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      listActiveInputs(in.data_ptr<float>() + n * in.stride(0), C, pixels, in.stride(1),
                       in.stride(3), activeOf(n));
  });
  at::Tensor y = at::empty({s.batch, s.outputs, s.outHeight, s.outWidth},
                           x.options().memory_format(at::MemoryFormat::ChannelsLast));
  const int64_t outSize = s.outputs * s.outHeight * s.outWidth;
  const ConvolveRow kernel =
      forInstructions<ConvolveRow>(convolveRowAvx512, convolveRowAvx2, convolveRowBaseline);
  at::parallel_for(0, s.batch * s.outHeight, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> row;
    for (int64_t r = begin; r < end; ++r)
      convolveOutputRow(kernel, r % s.outHeight, activeOf(r / s.outHeight),
                        blocked.data_ptr<float>(), b.data_ptr<float>(), s, g, row,
                        y.data_ptr<float>() + (r / s.outHeight) * outSize);
  });
  // Like a dense convolution, the output takes the input's memory format.
  return channelsLast ? y : y.contiguous();
}

SpikeConvInstructions bestSpikeConvInstructions() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return SpikeConvInstructions::Avx512;
  if (__builtin_cpu_supports("avx2"))
    return SpikeConvInstructions::Avx2;
  return SpikeConvInstructions::Baseline;
}

void useSpikeConvInstructions(SpikeConvInstructions set) {
  if (static_cast<int>(set) > static_cast<int>(bestSpikeConvInstructions()))
    throw Error("spike conv2d: this CPU lacks the instructions asked for");
  instructions.store(set);
}

SpikeConvInstructions spikeConvInstructions() { return instructions.load(); }

void setSpikeConvMaxDensity(double density) { maxDensity.store(density); }
double spikeConvMaxDensity() { return maxDensity.load(); }

SpikeConvCounts spikeConvCounts() { return {spikeCalls.load(), denseCalls.load()}; }
void countSpikeConv(bool onSpikes) { ++(onSpikes ? spikeCalls : denseCalls); }

} // namespace snn::runtime
