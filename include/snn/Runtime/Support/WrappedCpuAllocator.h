//===- WrappedCpuAllocator.h - An allocator over ATen's CPU one -*- C++ -*-===//
//
// The runtime's CPU allocators (TensorMemory's counter, the step arena) each
// hand out, or count, what the allocator installed before them hands out:
// they wrap it and take its place.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_WRAPPEDCPUALLOCATOR_H
#define SNN_RUNTIME_SUPPORT_WRAPPEDCPUALLOCATOR_H

#include <c10/core/Allocator.h>

namespace snn::runtime {

/// The allocator a wrapper hands work on to, and its deleter of raw pointers.
struct InnerCpuAllocator {
  at::Allocator *allocator = nullptr;
  c10::DeleterFnPtr deleter = nullptr;
};

/// Installs `outer` as ATen's CPU allocator over the one installed now, set in `inner`
/// first (`outer` may be called at once); false, installing nothing, when that one hands
/// out no raw pointers (its DataPtrs could not be passed on by a wrapper's one deleter).
bool wrapCpuAllocator(at::Allocator &outer, InnerCpuAllocator &inner);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_WRAPPEDCPUALLOCATOR_H
