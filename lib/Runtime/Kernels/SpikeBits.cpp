//===- SpikeBits.cpp - Spike tensors stored as bits -----------------------===//

#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <atomic>
#include <cstring>

namespace snn::runtime {

namespace {

/// Bytes (of eight values) per parallel task.
constexpr int64_t kBytesPerTask = 1 << 13;

constexpr uint32_t kOneBits = 0x3f800000u; // 1.0f

/// A value's bit pattern (+0 and 1 are spikes; -0 and NaN are not).
inline uint32_t bitsOf(const float *value) {
  uint32_t bits;
  std::memcpy(&bits, value, sizeof(bits));
  return bits;
}

/// Dense in memory order: contiguous, or a channels-last image batch.
bool isDenseFloat(const at::Tensor &x) {
  return x.defined() && x.scalar_type() == at::kFloat && x.device().is_cpu() &&
         (x.is_contiguous() ||
          (x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast)));
}

std::atomic<bool> enabled{true};
std::atomic<int64_t> packedTensors{0}, packedValues{0};

} // namespace

void setSpikeBitsEnabled(bool value) { enabled.store(value); }
bool spikeBitsEnabled() { return enabled.load(); }

SpikeBitsCounts spikeBitsCounts() {
  int64_t values = packedValues.load();
  return {packedTensors.load(), values * int64_t(sizeof(float)), values / 8};
}

void countPackedSpikes(int64_t values) {
  ++packedTensors;
  packedValues += values;
}

std::optional<double> spikeDensity(const at::Tensor &x) {
  if (!isDenseFloat(x))
    return std::nullopt;
  const float *v = x.data_ptr<float>();
  std::atomic<int64_t> ones{0}, others{0};
  at::parallel_for(0, x.numel(), kBytesPerTask * 8, [&](int64_t begin, int64_t end) {
    int64_t n1 = 0, bad = 0;
    for (int64_t i = begin; i < end; ++i) {
      uint32_t bits = bitsOf(v + i);
      n1 += bits == kOneBits;
      bad += bits != 0 && bits != kOneBits;
    }
    ones += n1;
    others += bad;
  });
  if (others.load() != 0)
    return std::nullopt;
  return x.numel() ? double(ones.load()) / double(x.numel()) : 0.0;
}

bool isSpikeTensor(const at::Tensor &x) { return spikeDensity(x).has_value(); }

std::optional<at::Tensor> packSpikeBitsIfSpikes(const at::Tensor &x) {
  if (!isDenseFloat(x))
    return std::nullopt;
  const int64_t n = x.numel(), bytes = (n + 7) / 8;
  at::Tensor bits = at::empty({bytes}, x.options().dtype(at::kByte));
  const float *values = x.data_ptr<float>();
  uint8_t *out = bits.data_ptr<uint8_t>();
  std::atomic<bool> spikes{true};
  at::parallel_for(0, bytes, kBytesPerTask, [&](int64_t begin, int64_t end) {
    uint32_t bad = 0;
    for (int64_t b = begin; b < end; ++b) {
      uint8_t byte = 0;
      for (int64_t k = 0; k < 8 && b * 8 + k < n; ++k) {
        uint32_t pattern = bitsOf(values + b * 8 + k);
        bad |= uint32_t(pattern != 0) & uint32_t(pattern != kOneBits);
        byte |= uint8_t(pattern == kOneBits) << k;
      }
      out[b] = byte;
    }
    if (bad)
      spikes.store(false, std::memory_order_relaxed);
  });
  if (!spikes.load())
    return std::nullopt;
  return bits;
}

at::Tensor packSpikeBits(const at::Tensor &x) {
  std::optional<at::Tensor> bits = packSpikeBitsIfSpikes(x);
  if (!bits)
    throw Error("packSpikeBits: the tensor holds values other than +0 and 1");
  return *bits;
}

at::Tensor unpackSpikeBits(const at::Tensor &bits, at::IntArrayRef sizes,
                           at::MemoryFormat format) {
  at::Tensor x = at::empty(sizes, bits.options().dtype(at::kFloat).memory_format(format));
  const int64_t n = x.numel();
  if (bits.numel() != (n + 7) / 8)
    throw Error("unpackSpikeBits: " + std::to_string(bits.numel()) + " bytes for " +
                std::to_string(n) + " values");
  const uint8_t *in = bits.data_ptr<uint8_t>();
  float *values = x.data_ptr<float>();
  at::parallel_for(0, bits.numel(), kBytesPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      for (int64_t k = 0; k < 8 && b * 8 + k < n; ++k)
        values[b * 8 + k] = float((in[b] >> k) & 1);
  });
  return x;
}

} // namespace snn::runtime
