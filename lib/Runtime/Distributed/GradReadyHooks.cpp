//===- GradReadyHooks.cpp - Callbacks once backward has a gradient --------===//

#include "snn/Runtime/Distributed/GradReadyHooks.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace snn::dist {

bool GradReadyHooks::add(const at::Tensor &param, std::function<void()> ready) {
  if (!param.defined() || !param.requires_grad())
    return false;
  std::shared_ptr<torch::autograd::Node> accumulator =
      torch::autograd::impl::grad_accumulator(param);
  if (!accumulator)
    return false;
  keys.push_back(accumulator->add_post_hook(
      std::make_unique<torch::autograd::utils::LambdaPostHook>(
          [ready = std::move(ready)](const torch::autograd::variable_list &outputs,
                                     const torch::autograd::variable_list &) {
            ready();
            return outputs;
          })));
  accumulators.push_back(std::move(accumulator));
  return true;
}

GradReadyHooks::~GradReadyHooks() {
  for (size_t k = 0; k < accumulators.size(); ++k)
    accumulators[k]->del_post_hook(keys[k]);
}

} // namespace snn::dist
