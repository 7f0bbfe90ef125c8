//===- SpikeConvKernelsImpl.h - What the spike conv2d kernels share -*- C++ -*-===//
//
// Private to SpikeConvKernels.cpp and SpikeConvWeightGradKernels.cpp: the
// layer's sizes, where an input reaches an output through a tap, and the
// vector types the kernels sum in. Each kernel has one function per
// instruction set (target attributes), chosen by spikeConvInstructions().
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_SPIKECONVKERNELSIMPL_H
#define SNN_RUNTIME_KERNELS_SPIKECONVKERNELSIMPL_H

#include "snn/Runtime/Kernels/SpikeConvKernels.h"

#include <cstdint>

namespace snn::runtime::spike_conv {

/// A layer's sizes: x [batch, channels, height, width], the weight [outputs,
/// channels, kh, kw], y [batch, outputs, outHeight, outWidth].
struct Shape {
  int64_t batch, channels, height, width, outputs, kh, kw, outHeight, outWidth;
};

/// The output positions input (y, x) reaches through tap (ky, kx), if any.
inline bool outputOf(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                     int64_t size, int64_t &out) {
  int64_t shifted = in + pad - k * dilation;
  if (shifted < 0 || shifted % stride != 0)
    return false;
  out = shifted / stride;
  return out < size;
}

/// Sixteen and eight floats: GCC's vector extension (one AVX-512 register,
/// one AVX register); the unaligned kinds read and write them at any float's
/// address.
using Vec16 = float __attribute__((vector_size(64)));
using Vec16Unaligned = float __attribute__((vector_size(64), aligned(4)));
using Vec8 = float __attribute__((vector_size(32)));
using Vec8Unaligned = float __attribute__((vector_size(32), aligned(4)));

template <typename Vec> struct Unaligned;
template <> struct Unaligned<Vec16> { using type = Vec16Unaligned; };
template <> struct Unaligned<Vec8> { using type = Vec8Unaligned; };

/// The version of a kernel for the instruction set spikeConvInstructions() names.
template <typename Kernel> Kernel forInstructions(Kernel avx512, Kernel avx2, Kernel baseline) {
  switch (spikeConvInstructions()) {
  case SpikeConvInstructions::Avx512:
    return avx512;
  case SpikeConvInstructions::Avx2:
    return avx2;
  default:
    return baseline;
  }
}

/// Inlined into each instruction set's function, so compiled for its set.
#define SNN_SPIKE_CONV_INLINE inline __attribute__((always_inline))

} // namespace snn::runtime::spike_conv

#endif // SNN_RUNTIME_KERNELS_SPIKECONVKERNELSIMPL_H
