//===- StepArena.h - A training step's large tensors laid out once -*- C++ -*-===//
//
// Every training step allocates and frees the same large tensors in the same
// order. The step arena records the second step's large allocations (size, when
// allocated, when freed), lays them out in one mapping so that tensors alive
// at the same time never share bytes, and serves the following steps' large
// allocations at those places: no page faults every step (what returning
// blocks to the kernel costs), and no heap fragmentation (what keeping them
// in glibc's heap costs: its high-water mark sat tens of MB above the live
// peak at long T). docs/architecture.md, "Memory of a training step".
//
//   StepArena::install();          // once, before TensorMemory::install()
//   for (...) {
//     StepArena::beginStep();
//     ... one training step ...
//     StepArena::endStep();
//   }
//
// An allocation the layout cannot serve (another size, an order that moved,
// a tensor of the step before still holding its place) gets a mapping of its
// own, so a step that differs from the recorded one is slower, never wrong;
// such a step is recorded and laid out again (a bounded number of times).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_STEPARENA_H
#define SNN_RUNTIME_SUPPORT_STEPARENA_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace snn::runtime {

/// One large allocation of a recorded step: its bytes and the step's event clock when it
/// was allocated and freed (-1: still alive when the step ended).
struct StepAllocation {
  size_t bytes = 0;
  int64_t allocated = 0;
  int64_t freed = -1;
};

/// Offsets for `allocations` (-1 for those alive at the step's end) such that two whose
/// lifetimes overlap never overlap in bytes, each offset a multiple of `alignment`, and the
/// bytes the layout spans: largest first, each at the lowest offset that fits.
struct StepLayout {
  std::vector<int64_t> offsets;
  size_t bytes = 0;
};
StepLayout layOutStep(const std::vector<StepAllocation> &allocations, size_t alignment);

class StepArena {
public:
  /// Allocations of at least this many bytes are large (smaller ones stay on the heap).
  static constexpr size_t kDefaultLargeBytes = size_t(1) << 20;

  /// Routes ATen's CPU allocations through the arena (idempotent; before
  /// TensorMemory::install(), which then counts what it hands out).
  static void install(size_t largeBytes = kDefaultLargeBytes);
  static bool installed();
  /// The bounds of one training step; no-ops unless installed.
  static void beginStep();
  static void endStep();

  struct Stats {
    int64_t layouts = 0;       ///< steps laid out so far
    int64_t arenaBytes = 0;    ///< the current layout's mapping
    int64_t servedInArena = 0; ///< large allocations served at their place, all steps
    int64_t ownMappings = 0;   ///< large allocations that got a mapping of their own
  };
  static Stats stats();
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_STEPARENA_H
