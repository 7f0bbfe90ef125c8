//===- GradReadyHooks.h - Callbacks once backward has a gradient -*- C++ -*-===//
//
// Communication that overlaps with backward starts on a parameter's gradient
// as soon as autograd has accumulated it into .grad: a post hook on the
// parameter's AccumulateGrad node (dp's bucketed all-reduce, fsdp's
// per-layer reduce_scatter). Autograd creates that node lazily and holds it
// weakly, so it is kept alive here for every later graph to use the same
// one; the hooks are removed when this object goes.
//
//===----------------------------------------------------------------------===//

#ifndef SNN_RUNTIME_DISTRIBUTED_GRADREADYHOOKS_H
#define SNN_RUNTIME_DISTRIBUTED_GRADREADYHOOKS_H

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace torch::autograd {
struct Node;
}

namespace snn::dist {

class GradReadyHooks {
public:
  GradReadyHooks() = default;
  ~GradReadyHooks();
  GradReadyHooks(const GradReadyHooks &) = delete;
  GradReadyHooks &operator=(const GradReadyHooks &) = delete;

  /// Calls `ready` each time backward has accumulated `param`'s gradient (on
  /// the thread running backward). False, and nothing added, for a tensor
  /// without a gradient accumulator (not a leaf that requires grad).
  bool add(const at::Tensor &param, std::function<void()> ready);

private:
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::vector<uintptr_t> keys;
};

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_GRADREADYHOOKS_H
