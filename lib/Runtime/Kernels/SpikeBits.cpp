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

/// Whether values[0..n) are all +0 or 1, compared as bit patterns (so -0
/// and NaN are not).
bool allSpikes(const float *values, int64_t n) {
  const uint32_t one = 0x3f800000u;
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, values + i, sizeof(bits));
    bad |= uint32_t(bits != 0) & uint32_t(bits != one);
  }
  return bad == 0;
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

bool isSpikeTensor(const at::Tensor &x) {
  if (!x.defined() || x.scalar_type() != at::kFloat || !x.device().is_cpu() ||
      !x.is_contiguous())
    return false;
  const float *values = x.data_ptr<float>();
  std::atomic<bool> spikes{true};
  at::parallel_for(0, x.numel(), kBytesPerTask * 8, [&](int64_t begin, int64_t end) {
    if (spikes.load(std::memory_order_relaxed) && !allSpikes(values + begin, end - begin))
      spikes.store(false, std::memory_order_relaxed);
  });
  return spikes.load();
}

at::Tensor packSpikeBits(const at::Tensor &x) {
  const int64_t n = x.numel(), bytes = (n + 7) / 8;
  at::Tensor bits = at::empty({bytes}, x.options().dtype(at::kByte));
  const float *values = x.data_ptr<float>();
  uint8_t *out = bits.data_ptr<uint8_t>();
  at::parallel_for(0, bytes, kBytesPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      uint8_t byte = 0;
      for (int64_t k = 0; k < 8 && b * 8 + k < n; ++k)
        byte |= uint8_t(values[b * 8 + k] != 0.0f) << k;
      out[b] = byte;
    }
  });
  return bits;
}

at::Tensor unpackSpikeBits(const at::Tensor &bits, at::IntArrayRef sizes) {
  at::Tensor x = at::empty(sizes, bits.options().dtype(at::kFloat));
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
