//===- Optimizer.cpp - SGD, Adam and AdamW as torch.optim does them -------===//
//
// Each update mirrors torch/optim/{sgd,adam,adamw}.py (_single_tensor_*) of
// PyTorch 1.13 statement by statement: the same ATen ops with the same
// double scalars, so the float32 results are identical.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/zeros_like.h>

#include <cmath>

namespace snn::runtime {

namespace {

void sgdUpdate(const OptimizerConfig &config, double lr,
               const UpdateSlice &slice) {
  at::Tensor direction = slice.grad;
  if (config.weightDecay != 0)
    direction = direction.add(slice.param, config.weightDecay);
  if (config.momentum != 0) {
    at::Tensor &buffer = slice.state->momentumBuffer;
    if (!buffer.defined())
      buffer = direction.clone();
    else
      buffer.mul_(config.momentum).add_(direction, 1.0 /* 1 - dampening */);
    direction = buffer;
  }
  slice.param.add_(direction, -lr);
  ++slice.state->step;
}

/// Adam and AdamW share everything but how weight decay enters.
void adamUpdate(const OptimizerConfig &config, double lr,
                const UpdateSlice &slice, bool decoupled) {
  ParamState &state = *slice.state;
  if (!state.expAvg.defined()) {
    state.expAvg = at::zeros_like(slice.param);
    state.expAvgSq = at::zeros_like(slice.param);
  }
  ++state.step;
  at::Tensor grad = slice.grad;
  if (decoupled)
    slice.param.mul_(1 - lr * config.weightDecay);
  else if (config.weightDecay != 0)
    grad = grad.add(slice.param, config.weightDecay);
  state.expAvg.mul_(config.beta1).add_(grad, 1 - config.beta1);
  state.expAvgSq.mul_(config.beta2).addcmul_(grad, grad, 1 - config.beta2);
  // Python computes these in double: beta ** float(step).
  double step = double(state.step);
  double biasCorrection1 = 1 - std::pow(config.beta1, step);
  double biasCorrection2 = 1 - std::pow(config.beta2, step);
  double stepSize = lr / biasCorrection1;
  double biasCorrection2Sqrt = std::sqrt(biasCorrection2);
  at::Tensor denom =
      state.expAvgSq.sqrt().div(biasCorrection2Sqrt).add_(config.eps);
  slice.param.addcdiv_(state.expAvg, denom, -stepSize);
}

} // namespace

double defaultWeightDecay(OptimizerKind kind) {
  return kind == OptimizerKind::AdamW ? 0.01 : 0.0;
}

int64_t optimizerStatesOf(const OptimizerConfig &config) {
  if (config.kind != OptimizerKind::Sgd)
    return 2;
  return config.momentum != 0.0 ? 1 : 0;
}

void applyUpdate(const OptimizerConfig &config, double lr,
                 const std::vector<UpdateSlice> &slices) {
  at::NoGradGuard noGrad;
  for (const UpdateSlice &slice : slices) {
    if (!slice.grad.defined())
      continue;
    if (config.kind == OptimizerKind::Sgd)
      sgdUpdate(config, lr, slice);
    else
      adamUpdate(config, lr, slice, config.kind == OptimizerKind::AdamW);
  }
}

std::vector<std::pair<std::string, at::Tensor>>
namedStateTensors(const ParamState &state) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  if (state.momentumBuffer.defined())
    tensors.emplace_back("momentum_buffer", state.momentumBuffer);
  if (state.expAvg.defined())
    tensors.emplace_back("exp_avg", state.expAvg);
  if (state.expAvgSq.defined())
    tensors.emplace_back("exp_avg_sq", state.expAvgSq);
  return tensors;
}

void setStateTensor(ParamState &state, const std::string &name,
                    const at::Tensor &value) {
  if (name == "momentum_buffer")
    state.momentumBuffer = value;
  else if (name == "exp_avg")
    state.expAvg = value;
  else if (name == "exp_avg_sq")
    state.expAvgSq = value;
  else
    throw Error("unknown optimizer state '" + name + "'");
}

Optimizer::Optimizer(const OptimizerConfig &config,
                     std::vector<std::string> names,
                     std::vector<at::Tensor> params)
    : cfg(config), paramNames(std::move(names)), tensors(std::move(params)),
      paramStates(tensors.size()) {
  if (paramNames.size() != tensors.size())
    throw Error("optimizer: parameter names and tensors differ in number");
}

void Optimizer::step(double lr) {
  std::vector<UpdateSlice> slices;
  slices.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    slices.push_back({tensors[i], tensors[i].grad(), &paramStates[i]});
  applyUpdate(cfg, lr, slices);
}

} // namespace snn::runtime
