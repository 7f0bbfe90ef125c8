//===- WrappedCpuAllocator.cpp - An allocator over ATen's CPU one ---------===//
#include "snn/Runtime/Support/WrappedCpuAllocator.h"

#include <c10/core/CPUAllocator.h>

namespace snn::runtime {

bool wrapCpuAllocator(at::Allocator &outer, InnerCpuAllocator &inner) {
  at::Allocator *current = c10::GetCPUAllocator();
  if (!current->raw_deleter())
    return false;
  inner = {current, current->raw_deleter()};
  c10::SetCPUAllocator(&outer, /*priority=*/1);
  return true;
}

} // namespace snn::runtime
