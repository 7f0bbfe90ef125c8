// Force-included into the compiler's sources in the clang fuzz build (SNN_BUILD_FUZZERS).
//
// Under AddressSanitizer LLVM's headers poison and unpoison allocator slabs by hand
// (llvm/Support/Allocator.h, Recycler.h, JSON.h). The installed LLVM/MLIR libraries are built
// without ASan, so their inline copies of that code do not unpoison what ours poisoned: a slab
// poisoned by an instrumented BumpPtrAllocator::AllocateSlow and filled by MLIR's own copy reads
// as use-after-poison in MLIRContext's constructor. clang decides this with
// __has_feature(address_sanitizer), which cannot be undefined on the command line (gcc's build
// uses -U__SANITIZE_ADDRESS__), so the hand poisoning is turned into no-ops here instead, after
// Compiler.h and the sanitizer interface have been read once. Our code stays instrumented.
#ifndef SNN_CMAKE_LLVMMANUALPOISONINGOFF_H
#define SNN_CMAKE_LLVMMANUALPOISONINGOFF_H
#ifdef __cplusplus
#include "llvm/Support/Compiler.h"
#include <sanitizer/asan_interface.h>
#undef LLVM_ADDRESS_SANITIZER_BUILD
#define LLVM_ADDRESS_SANITIZER_BUILD 0
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
#endif
#endif
