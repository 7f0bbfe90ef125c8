//===- SampleOrder.cpp - The seeded per-epoch sample order ----------------===//

#include "snn/Runtime/Data/SampleOrder.h"

#include <cstddef>
#include <numeric>
#include <utility>

namespace snn::runtime {

namespace {
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
} // namespace

uint64_t SplitMix64::next() {
  state += kGolden;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<int64_t> fileOrder(int64_t count) {
  std::vector<int64_t> order(std::size_t(count < 0 ? 0 : count));
  std::iota(order.begin(), order.end(), int64_t(0));
  return order;
}

std::vector<int64_t> shuffledOrder(uint64_t seed, int64_t epoch,
                                   int64_t count) {
  std::vector<int64_t> order = fileOrder(count);
  // Unsigned arithmetic wraps modulo 2^64, as the specification requires.
  SplitMix64 rng(seed * kGolden + uint64_t(epoch) + 1);
  for (int64_t i = count - 1; i >= 1; --i) {
    uint64_t j = rng.next() % uint64_t(i + 1);
    std::swap(order[std::size_t(i)], order[std::size_t(j)]);
  }
  return order;
}

} // namespace snn::runtime
