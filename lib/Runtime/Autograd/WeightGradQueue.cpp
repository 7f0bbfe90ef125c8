//===- WeightGradQueue.cpp - Weight gradients kept for later --------------===//

#include "snn/Runtime/Autograd/WeightGradQueue.h"

#include <ATen/core/grad_mode.h>

namespace snn::runtime {

void WeightGradQueue::push(Task task) {
  std::lock_guard<std::mutex> lock(mutex);
  tasks.push_back(std::move(task));
}

void WeightGradQueue::run() {
  std::vector<Task> queued;
  {
    std::lock_guard<std::mutex> lock(mutex);
    queued.swap(tasks);
  }
  at::NoGradGuard noGrad;
  for (Task &task : queued)
    task();
}

size_t WeightGradQueue::size() const {
  std::lock_guard<std::mutex> lock(mutex);
  return tasks.size();
}

void accumulateGrad(const at::Tensor &parameter, const at::Tensor &grad) {
  at::NoGradGuard noGrad;
  at::Tensor &current = parameter.mutable_grad();
  if (!current.defined())
    current = grad.contiguous(); // a channels-last conv2d's may be NHWC-strided
  else
    current.add_(grad);
}

} // namespace snn::runtime
