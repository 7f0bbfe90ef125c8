//===- TensorMemory.cpp - Bytes held by CPU tensors -----------------------===//
//
// The counting allocator hands out the default allocator's memory and keeps
// a size per pointer. Its DataPtr has the data pointer as context and a
// plain deleter, as the default allocator's has, so raw_allocate and
// raw_deallocate (which some ATen paths use) keep working.
//
//===----------------------------------------------------------------------===//
#include "snn/Runtime/Support/TensorMemory.h"

#include "snn/Runtime/Support/WrappedCpuAllocator.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

namespace snn::runtime {

namespace {

struct Counters {
  std::mutex mutex;
  std::unordered_map<void *, size_t> sizes;
  int64_t live = 0;
  int64_t peak = 0;
};

Counters &counters() {
  static Counters *instance = new Counters; // never destroyed: tensors outlive statics
  return *instance;
}

InnerCpuAllocator innerCpu;
std::atomic<bool> active{false};

void countingDelete(void *pointer) {
  if (pointer) {
    Counters &c = counters();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.sizes.find(pointer);
    if (it != c.sizes.end()) {
      c.live -= int64_t(it->second);
      c.sizes.erase(it);
    }
  }
  innerCpu.deleter(pointer);
}

class CountingAllocator final : public at::Allocator {
public:
  at::DataPtr allocate(size_t bytes) const override {
    void *pointer = innerCpu.allocator->raw_allocate(bytes);
    if (pointer) {
      Counters &c = counters();
      std::lock_guard<std::mutex> lock(c.mutex);
      c.sizes[pointer] = bytes;
      c.live += int64_t(bytes);
      c.peak = std::max(c.peak, c.live);
    }
    return {pointer, pointer, &countingDelete, at::Device(at::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &countingDelete; }
};

} // namespace

void TensorMemory::install() {
  if (active.exchange(true))
    return;
  static CountingAllocator allocator;
  if (!wrapCpuAllocator(allocator, innerCpu))
    active = false;
}

bool TensorMemory::installed() { return active; }

int64_t TensorMemory::liveBytes() {
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.live;
}

int64_t TensorMemory::peakBytes() {
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.peak;
}

void TensorMemory::resetPeak() {
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.peak = c.live;
}

} // namespace snn::runtime
