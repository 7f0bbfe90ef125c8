//===- StepArena.cpp - A training step's large tensors laid out once ------===//
//
// Large allocations are matched to the recorded step by their size and their
// rank among the step's allocations of that size (an extra allocation of
// another size moves nothing). A place is handed out only while no live
// tensor holds any of its bytes, so a step that differs from the recorded one
// gets mappings of its own instead of aliasing. The DataPtr has the data
// pointer as context and one deleter for every size, as TensorMemory (which
// wraps this allocator) needs.
//
//===----------------------------------------------------------------------===//
#include "snn/Runtime/Support/StepArena.h"

#include "snn/Runtime/Support/WrappedCpuAllocator.h"


#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace snn::runtime {

StepLayout layOutStep(const std::vector<StepAllocation> &allocations, size_t alignment) {
  auto rounded = [alignment](size_t bytes) {
    return (bytes + alignment - 1) / alignment * alignment;
  };
  StepLayout layout;
  layout.offsets.assign(allocations.size(), -1);
  std::vector<size_t> order;
  for (size_t i = 0; i < allocations.size(); ++i)
    if (allocations[i].freed >= 0)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return allocations[a].bytes > allocations[b].bytes;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const StepAllocation &mine = allocations[i];
    size_t bytes = rounded(mine.bytes);
    std::vector<std::pair<size_t, size_t>> taken; // bytes of those alive at the same time
    for (size_t j : placed) {
      const StepAllocation &other = allocations[j];
      if (other.allocated < mine.freed && mine.allocated < other.freed)
        taken.push_back({size_t(layout.offsets[j]), size_t(layout.offsets[j]) + rounded(other.bytes)});
    }
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto &[begin, end] : taken) {
      if (begin >= offset + bytes)
        break;
      offset = std::max(offset, end);
    }
    layout.offsets[i] = int64_t(offset);
    layout.bytes = std::max(layout.bytes, offset + bytes);
    placed.push_back(i);
  }
  return layout;
}

namespace {

constexpr size_t kAlignment = 64; // c10's CPU alignment
/// A step that keeps differing from its layout is not laid out again and again.
constexpr int64_t kMaxLayouts = 8;

size_t pageRounded(size_t bytes) {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

/// Fresh zeroed pages, transparent huge pages where the kernel offers them: a tensor of
/// tens of MB touched once faults 512 times less (the first steps' own mappings of the
/// VGG at T = 32 cost 5 s of page faults in 4 KiB pages).
void *mapBytes(size_t bytes) {
  void *pointer = mmap(nullptr, pageRounded(bytes), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pointer == MAP_FAILED)
    return nullptr;
#ifdef MADV_HUGEPAGE
  madvise(pointer, pageRounded(bytes), MADV_HUGEPAGE);
#endif
  return pointer;
}

/// One layout's mapping and the byte ranges its live tensors hold; unmapped when the
/// layout is replaced and its last tensor is freed.
struct Region {
  char *base = nullptr;
  size_t bytes = 0;
  std::map<size_t, size_t> live; // offset -> end

  explicit Region(size_t size) : bytes(size) {
    base = static_cast<char *>(mapBytes(size));
  }
  ~Region() {
    if (base)
      munmap(base, pageRounded(bytes));
  }
  Region(const Region &) = delete;
  Region &operator=(const Region &) = delete;

  bool isFree(size_t offset, size_t size) const {
    auto next = live.lower_bound(offset);
    if (next != live.end() && next->first < offset + size)
      return false;
    return next == live.begin() || std::prev(next)->second <= offset;
  }
};

struct Block {
  size_t bytes = 0;
  std::shared_ptr<Region> region; ///< null: a mapping of its own
  int64_t step = 0;
  int64_t record = -1;
};

struct State {
  std::mutex mutex;
  size_t largeBytes = StepArena::kDefaultLargeBytes;
  bool inStep = false;
  bool deviated = false;
  int64_t step = 0;
  int64_t clock = 0;
  std::vector<StepAllocation> records;
  std::unordered_map<void *, Block> blocks;
  std::shared_ptr<Region> region;
  std::map<size_t, std::vector<int64_t>> placeOfSize; // each size's offsets, in order
  std::map<size_t, size_t> seenOfSize;
  /// Mappings of tensors that lived past a step's end, freed since, by size, with the step
  /// they are spare for (the one that freed them, or the next): a tensor that lives from one
  /// step into the next (a weight's gradient, set to none at the next step's start) takes
  /// the one its predecessor had. Mappings of a step's own tensors are given back at once:
  /// kept, they would add to the step's peak.
  std::multimap<size_t, std::pair<void *, int64_t>> spareMappings;
  StepArena::Stats stats;
};

State &state() {
  static State *instance = new State; // never destroyed: tensors outlive statics
  return *instance;
}

InnerCpuAllocator innerCpu;
std::atomic<bool> active{false};

/// Records the step's allocation of `bytes`; its place in the layout, if it has one free
/// now. Under the state's lock, inside a step.
char *placeInArena(State &s, size_t bytes, int64_t &record) {
  record = int64_t(s.records.size());
  s.records.push_back({bytes, s.clock++, -1});
  size_t nth = s.seenOfSize[bytes]++;
  if (s.stats.layouts == 0) // the first steps are recorded only
    return nullptr;
  auto places = s.placeOfSize.find(bytes);
  if (places == s.placeOfSize.end() || nth >= places->second.size()) {
    s.deviated = true;
    return nullptr;
  }
  int64_t offset = places->second[nth];
  if (offset < 0 || !s.region) // alive past the recorded step's end: not laid out
    return nullptr;
  if (!s.region->isFree(size_t(offset), bytes)) {
    s.deviated = true;
    return nullptr;
  }
  s.region->live[size_t(offset)] = size_t(offset) + bytes;
  ++s.stats.servedInArena;
  return s.region->base + offset;
}

/// A spare mapping of exactly `bytes`, else a new one. Under the state's lock.
void *takeSpareMapping(State &s, size_t bytes) {
  auto spare = s.spareMappings.find(bytes);
  if (spare == s.spareMappings.end())
    return mapBytes(bytes);
  void *pointer = spare->second.first;
  s.spareMappings.erase(spare);
  return pointer;
}

/// Unmaps the spare mappings the step ending now has not taken. Under the lock.
void dropStaleSpareMappings(State &s) {
  for (auto it = s.spareMappings.begin(); it != s.spareMappings.end();) {
    if (it->second.second <= s.step) {
      munmap(it->second.first, pageRounded(it->first));
      it = s.spareMappings.erase(it);
    } else {
      ++it;
    }
  }
}

/// A large allocation inside a step: at its place in the layout, else a mapping of its own;
/// nullptr outside a step (the heap's: evaluation and checkpoints between steps are no
/// repeating pattern, and a mapping each would fault every time).
void *allocateLarge(size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.inStep)
    return nullptr;
  int64_t record = -1;
  Block block{bytes, nullptr, s.step, -1};
  void *pointer = placeInArena(s, bytes, record);
  if (pointer) {
    block.region = s.region;
  } else {
    pointer = takeSpareMapping(s, bytes);
    if (!pointer)
      return nullptr;
    ++s.stats.ownMappings;
  }
  block.record = record;
  s.blocks.emplace(pointer, std::move(block));
  return pointer;
}

void arenaDelete(void *pointer) {
  if (!pointer)
    return;
  {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.blocks.find(pointer);
    if (it != s.blocks.end()) {
      Block block = std::move(it->second);
      s.blocks.erase(it);
      if (s.inStep && block.step == s.step && block.record >= 0) {
        s.records[size_t(block.record)].freed = s.clock++;
        // Alive within the step, yet not laid out (the first step's lazily made state
        // moved its rank among its size's allocations): lay this step out.
        if (!block.region && s.stats.layouts > 0)
          s.deviated = true;
      }
      if (block.region)
        block.region->live.erase(size_t(static_cast<char *>(pointer) - block.region->base));
      else if (block.step < s.step || !s.inStep) // carried across a step's end
        s.spareMappings.emplace(block.bytes,
                                std::make_pair(pointer, s.inStep ? s.step : s.step + 1));
      else
        munmap(pointer, pageRounded(block.bytes));
      return;
    }
  }
  innerCpu.deleter(pointer);
}

class ArenaAllocator final : public at::Allocator {
public:
  at::DataPtr allocate(size_t bytes) const override {
    void *pointer = bytes >= state().largeBytes ? allocateLarge(bytes) : nullptr;
    if (!pointer) // small, or no mapping to be had: the heap's (which reports running out)
      pointer = innerCpu.allocator->raw_allocate(bytes);
    return {pointer, pointer, &arenaDelete, at::Device(at::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &arenaDelete; }
};

/// Lays out the step just recorded and maps its arena. Under the state's lock.
void layOutRecordedStep(State &s) {
  StepLayout layout = layOutStep(s.records, kAlignment);
  s.placeOfSize.clear();
  for (size_t i = 0; i < s.records.size(); ++i)
    s.placeOfSize[s.records[i].bytes].push_back(layout.offsets[i]);
  s.region.reset(); // the old mapping goes with its last tensor
  if (layout.bytes > 0) {
    auto region = std::make_shared<Region>(layout.bytes);
    if (region->base)
      s.region = std::move(region);
  }
  ++s.stats.layouts;
  s.stats.arenaBytes = s.region ? int64_t(s.region->bytes) : 0;
}

} // namespace

void StepArena::install(size_t largeBytes) {
  if (active.exchange(true))
    return;
  state().largeBytes = std::max<size_t>(largeBytes, 1);
  static ArenaAllocator allocator;
  if (!wrapCpuAllocator(allocator, innerCpu))
    active = false;
}

bool StepArena::installed() { return active; }

void StepArena::beginStep() {
  if (!active)
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.step;
  s.clock = 0;
  s.records.clear();
  s.seenOfSize.clear();
  s.deviated = false;
  s.inStep = true;
}

void StepArena::endStep() {
  if (!active)
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.inStep)
    return;
  s.inStep = false;
  dropStaleSpareMappings(s);
  // The first step also makes what stays (the optimizer's state, lazily made buffers):
  // the second is the first like the rest, recorded with the exact live bytes.
  if (((s.stats.layouts == 0 && s.step >= 2) || s.deviated) && s.stats.layouts < kMaxLayouts)
    layOutRecordedStep(s);
}

StepArena::Stats StepArena::stats() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.stats;
}

} // namespace snn::runtime
