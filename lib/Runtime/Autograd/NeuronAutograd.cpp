//===- NeuronAutograd.cpp - Neurons as LibTorch autograd Functions --------===//
//
// The only translation unit that includes torch::autograd's custom Function
// machinery (heavy headers; kept out of everything else).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/NeuronAutograd.h"
#include "SavedNeuronConfig.h"

#include <ATen/ops/full_like.h>
#include <torch/csrc/autograd/custom_function.h>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct NeuronFunction : public torch::autograd::Function<NeuronFunction> {
  /// `w` is absent for IF and LIF (an optional, so autograd does not treat
  /// it as an input).
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const c10::optional<at::Tensor> &w,
                            const NeuronConfig &config, int64_t *fired) {
    bool plif = config.kind == NeuronKind::PLIF;
    double k = plif ? plifDecay(*w) : 0.0;
    NeuronForwardResult result = neuronForward(x, config, k, /*saveH=*/true);
    if (fired)
      *fired = result.fired;
    // H recomputes S and V for every step; only PLIF's dk needs x itself.
    ctx->save_for_backward(
        {result.h, plif ? x : at::Tensor(), plif ? *w : at::Tensor()});
    saveConfig(ctx, config, k);
    return result.spikes;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    NeuronConfig config = loadConfig(ctx);
    double k = ctx->saved_data["k"].toDouble();
    NeuronBackwardResult result =
        neuronBackward(grads[0], saved[0], saved[1], config, k);
    at::Tensor gradW;
    if (config.kind == NeuronKind::PLIF && ctx->needs_input_grad(1))
      gradW = at::full_like(saved[2], result.gradW);
    return {result.gradX, gradW, at::Tensor(), at::Tensor()};
  }
};

} // namespace

at::Tensor neuronSpikesWithGrad(const at::Tensor &x, const at::Tensor &w,
                                const NeuronConfig &config, int64_t *fired) {
  c10::optional<at::Tensor> weight;
  if (config.kind == NeuronKind::PLIF)
    weight = w;
  return NeuronFunction::apply(x, weight, config, fired);
}

} // namespace snn::runtime
