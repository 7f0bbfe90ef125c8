//===- RoundingProbe.h - What kernels that reproduce ATen probe with -*- C++ -*-===//
//
// Private to the kernels that reproduce ATen's rounding (BatchNorm forward
// and backward): whether this CPU can run their fused multiply-add variants,
// and the fixed input they run ATen and themselves on to find the variant
// that matches.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_ROUNDINGPROBE_H
#define SNN_RUNTIME_KERNELS_ROUNDINGPROBE_H

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cmath>

namespace snn::runtime {

/// Whether the CPU has AVX2 and FMA (the fused variants' target).
inline bool fmaAvailable() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

/// A fixed input of distinct values, sin(frequency * i + offset) * scale +
/// offset, with no RNG (a probe must not move the default generator, which
/// Dropout draws from).
inline at::Tensor probeTensor(at::IntArrayRef shape, double scale, double offset,
                              double frequency = 0.731) {
  at::Tensor t = at::empty(shape, at::kFloat);
  float *data = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    data[i] = float(std::sin(frequency * double(i) + offset) * scale + offset);
  return t;
}

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_ROUNDINGPROBE_H
