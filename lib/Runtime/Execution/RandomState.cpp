//===- RandomState.cpp - ATen's default CPU generator ---------------------===//

#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

namespace snn::runtime {

void seedCpuGenerator(uint64_t seed) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_current_seed(seed);
}

at::Tensor cpuGeneratorState() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void setCpuGeneratorState(const at::Tensor &state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  try {
    generator.set_state(state);
  } catch (const std::exception &e) {
    throw Error("cannot restore the random generator: " + describeException(e));
  }
}

} // namespace snn::runtime
