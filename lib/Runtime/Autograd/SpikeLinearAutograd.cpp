//===- SpikeLinearAutograd.cpp - Event-driven Linear in autograd ----------===//

#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Autograd/LinearAutograd.h"
#include "snn/Runtime/Kernels/EventKernelDensity.h"
#include "snn/Runtime/Kernels/SpikeLinearKernels.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/sum.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <atomic>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// SpikeRows in tensors, which autograd's saved data can hold.
void saveSpikes(AutogradContext *ctx, const SpikeRows &s) {
  ctx->saved_data["rows"] = s.rows;
  ctx->saved_data["cols"] = s.cols;
  ctx->saved_data["offsets"] =
      at::from_blob(const_cast<int64_t *>(s.offsets.data()), {int64_t(s.offsets.size())},
                    at::kLong)
          .clone();
  ctx->saved_data["columns"] =
      at::from_blob(const_cast<int32_t *>(s.columns.data()), {int64_t(s.columns.size())},
                    at::kInt)
          .clone();
}

SpikeRows loadSpikes(AutogradContext *ctx) {
  SpikeRows s;
  s.rows = ctx->saved_data["rows"].toInt();
  s.cols = ctx->saved_data["cols"].toInt();
  at::Tensor offsets = ctx->saved_data["offsets"].toTensor();
  at::Tensor columns = ctx->saved_data["columns"].toTensor();
  s.offsets.assign(offsets.data_ptr<int64_t>(), offsets.data_ptr<int64_t>() + offsets.numel());
  s.columns.assign(columns.data_ptr<int32_t>(), columns.data_ptr<int32_t>() + columns.numel());
  return s;
}

struct SpikeLinearFunction : public torch::autograd::Function<SpikeLinearFunction> {
  /// `x` is an input only so that autograd routes its gradient; its values are `spikes`.
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor & /*x*/,
                            const at::Tensor &weight, const c10::optional<at::Tensor> &bias,
                            const SpikeRows &spikes) {
    saveSpikes(ctx, spikes);
    ctx->save_for_backward({weight});
    ctx->saved_data["has_bias"] = bias.has_value();
    return spikeLinearForward(spikes, weight, bias.value_or(at::Tensor()));
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    at::Tensor weight = ctx->get_saved_variables()[0];
    at::Tensor grad = grads[0].contiguous();
    at::Tensor gradX, gradWeight, gradBias;
    if (ctx->needs_input_grad(0)) // grad W, split over the threads as the dense path does
      gradX = threadedLinear(grad, weight.t(), at::Tensor());
    if (ctx->needs_input_grad(1))
      gradWeight = spikeLinearWeightGrad(loadSpikes(ctx), grad);
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2))
      gradBias = at::sum(grad, {0});
    return {gradX, gradWeight, gradBias, at::Tensor()};
  }
};

std::atomic<double> maxDensityForPrograms{kMeasuredDensity};
std::atomic<int64_t> callsTaken{0}, callsDenser{0}, callsNotSpikes{0};
std::atomic<double> densitySum{0.0};

void addDensity(double density) {
  double seen = densitySum.load();
  while (!densitySum.compare_exchange_weak(seen, seen + density)) {
  }
}

} // namespace

void setSpikeLinearMaxDensity(double density) { maxDensityForPrograms = density; }
double spikeLinearMaxDensity() { return maxDensityForPrograms; }

SpikeLinearCounts spikeLinearCounts() {
  SpikeLinearCounts c;
  c.calls = callsTaken;
  c.meanDensity = c.calls > 0 ? densitySum / double(c.calls) : 0.0;
  c.denser = callsDenser;
  c.notSpikes = callsNotSpikes;
  return c;
}

std::optional<at::Tensor> spikeLinear(const at::Tensor &x, const at::Tensor &weight,
                                      const at::Tensor &bias, double maxDensity) {
  if (x.dim() != 2 || x.scalar_type() != at::kFloat || !x.device().is_cpu() ||
      weight.scalar_type() != at::kFloat || !weight.device().is_cpu())
    return std::nullopt;
  std::optional<SpikeRows> spikes = packSpikes(x.detach());
  if (!spikes || spikes->density() > maxDensity) {
    ++(spikes ? callsDenser : callsNotSpikes);
    return std::nullopt;
  }
  ++callsTaken;
  addDensity(spikes->density());
  bool wantsGrad = x.requires_grad() || weight.requires_grad() ||
                   (bias.defined() && bias.requires_grad());
  if (!c10::GradMode::is_enabled() || !wantsGrad)
    return spikeLinearForward(*spikes, weight.detach(),
                              bias.defined() ? bias.detach() : at::Tensor());
  c10::optional<at::Tensor> optionalBias;
  if (bias.defined())
    optionalBias = bias;
  return SpikeLinearFunction::apply(x, weight, optionalBias, *spikes);
}

} // namespace snn::runtime
