//===- WeightGradQueue.h - Weight gradients kept for later ------*- C++ -*-===//
//
// Zero-bubble pipelines split a layer's backward in two: B computes only the
// gradient of its input, which the previous pipeline stage is waiting for,
// and W the gradients of its weight and bias, which nobody waits for until
// the optimizer step. During B, linear and conv2d (RunContext::weightGrads)
// queue one task each here; the schedule's W runs the queue of that stage
// and microbatch. A task computes exactly what autograd would have added to
// the parameters' .grad and adds it the way autograd's AccumulateGrad does
// (the first gradient is taken as it is, later ones are added in place).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_WEIGHTGRADQUEUE_H
#define SNN_RUNTIME_AUTOGRAD_WEIGHTGRADQUEUE_H

#include <ATen/core/Tensor.h>

#include <functional>
#include <mutex>
#include <vector>

namespace snn::runtime {

class WeightGradQueue {
public:
  using Task = std::function<void()>;

  /// Safe from autograd's threads.
  void push(Task task);
  /// Runs the tasks in the order they were queued (backward order), then
  /// forgets them; runs with grad mode off.
  void run();
  size_t size() const;

private:
  mutable std::mutex mutex;
  std::vector<Task> tasks;
};

/// Adds `grad` to `parameter`'s .grad as autograd's AccumulateGrad does
/// without grad mode: taken as is when .grad is undefined, else added in
/// place.
void accumulateGrad(const at::Tensor &parameter, const at::Tensor &grad);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_WEIGHTGRADQUEUE_H
