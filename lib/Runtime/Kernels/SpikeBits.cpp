//===- SpikeBits.cpp - Spike tensors stored as bits -----------------------===//

#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <atomic>
#include <cstring>

#if defined(SNN_HAVE_AVX2_KERNELS)
#include <immintrin.h>
#endif

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

namespace {

/// Packs bytes [begin, end) of `values` (n of them): value 8b + k is bit k
/// of byte b. Returns whether every value read was +0 or 1.
bool packBytes(const float *values, int64_t n, uint8_t *out, int64_t begin, int64_t end) {
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
  return bad == 0;
}

/// Unpacks bytes [begin, end) into `values` (n of them).
void unpackBytes(const uint8_t *in, int64_t n, float *values, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b)
    for (int64_t k = 0; k < 8 && b * 8 + k < n; ++k)
      values[b * 8 + k] = float((in[b] >> k) & 1);
}

#if defined(SNN_HAVE_AVX2_KERNELS)
/// packBytes for whole bytes, one compare of eight lanes each: the packing
/// is one pass over memory instead of a compare and a shift per value.
__attribute__((target("avx2"))) bool packBytesAvx2(const float *values, uint8_t *out,
                                                   int64_t begin, int64_t end) {
  const __m256i one = _mm256_set1_epi32(int(kOneBits)), zero = _mm256_setzero_si256();
  __m256i spikes = _mm256_set1_epi32(-1); // lanes that held only +0 or 1
  for (int64_t b = begin; b < end; ++b) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(values + b * 8));
    __m256i isOne = _mm256_cmpeq_epi32(v, one);
    spikes = _mm256_and_si256(spikes, _mm256_or_si256(isOne, _mm256_cmpeq_epi32(v, zero)));
    out[b] = uint8_t(_mm256_movemask_ps(_mm256_castsi256_ps(isOne)));
  }
  return _mm256_movemask_ps(_mm256_castsi256_ps(spikes)) == 0xff;
}

__attribute__((target("avx2"))) void unpackBytesAvx2(const uint8_t *in, float *values,
                                                     int64_t begin, int64_t end) {
  const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t b = begin; b < end; ++b) {
    __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(in[b]), lane), lane);
    _mm256_storeu_ps(values + b * 8, _mm256_and_ps(_mm256_castsi256_ps(set), one));
  }
}

bool useAvx2() { return neuronKernelIsa() == KernelIsa::Avx2; }
#endif

} // namespace

std::optional<at::Tensor> packSpikeBitsIfSpikes(const at::Tensor &x) {
  if (!isDenseFloat(x))
    return std::nullopt;
  const int64_t n = x.numel(), bytes = (n + 7) / 8;
  at::Tensor bits = at::empty({bytes}, x.options().dtype(at::kByte));
  const float *values = x.data_ptr<float>();
  uint8_t *out = bits.data_ptr<uint8_t>();
  std::atomic<bool> spikes{true};
  at::parallel_for(0, bytes, kBytesPerTask, [&](int64_t begin, int64_t end) {
    int64_t scalarFrom = begin;
    bool ok = true;
#if defined(SNN_HAVE_AVX2_KERNELS)
    if (useAvx2()) {
      scalarFrom = std::max(begin, std::min(end, n / 8)); // the bytes of eight values
      ok = packBytesAvx2(values, out, begin, scalarFrom);
    }
#endif
    ok = packBytes(values, n, out, scalarFrom, end) && ok;
    if (!ok)
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
#if defined(SNN_HAVE_AVX2_KERNELS)
    if (useAvx2()) {
      const int64_t whole = std::max(begin, std::min(end, n / 8));
      unpackBytesAvx2(in, values, begin, whole);
      unpackBytes(in, n, values, whole, end);
      return;
    }
#endif
    unpackBytes(in, n, values, begin, end);
  });
  return x;
}

} // namespace snn::runtime
