//===- GenericNeuronAutograd.cpp - Described neurons as autograd Functions ===//

#include "snn/Runtime/Autograd/GenericNeuronAutograd.h"

#include <torch/csrc/autograd/custom_function.h>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The neuron kept alive in the autograd context until the backward.
struct NeuronHolder : torch::CustomClassHolder {
  explicit NeuronHolder(std::shared_ptr<const GenericNeuron> neuron) : neuron(std::move(neuron)) {}
  std::shared_ptr<const GenericNeuron> neuron;
};

struct GenericNeuronFunction : public torch::autograd::Function<GenericNeuronFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x, at::TensorList uniforms,
                            std::shared_ptr<const GenericNeuron> neuron, int64_t *fired) {
    std::vector<at::Tensor> values(uniforms.begin(), uniforms.end());
    GenericNeuronForwardResult result =
        genericNeuronForward(*neuron, x, values, /*saveStates=*/true);
    if (fired)
      *fired = result.fired;
    variable_list saved{x, result.states};
    saved.insert(saved.end(), values.begin(), values.end());
    ctx->save_for_backward(saved);
    ctx->saved_data["neuron"] =
        c10::IValue::make_capsule(c10::make_intrusive<NeuronHolder>(std::move(neuron)));
    return result.output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    c10::intrusive_ptr<torch::CustomClassHolder> capsule = ctx->saved_data["neuron"].toCapsule();
    const auto *holder = static_cast<const NeuronHolder *>(capsule.get());
    std::vector<at::Tensor> uniforms(saved.begin() + 2, saved.end());
    GenericNeuronBackwardResult result =
        genericNeuronBackward(*holder->neuron, grads[0], saved[0], saved[1], uniforms);
    variable_list out{result.gradX};
    out.insert(out.end(), result.gradUniforms.begin(), result.gradUniforms.end());
    out.push_back(at::Tensor()); // neuron
    out.push_back(at::Tensor()); // fired
    return out;
  }
};

} // namespace

at::Tensor genericNeuronWithGrad(const std::shared_ptr<const GenericNeuron> &neuron,
                                 const at::Tensor &x, const std::vector<at::Tensor> &operands,
                                 int64_t *fired) {
  std::vector<at::Tensor> uniforms = neuron->evaluateUniforms(operands);
  return GenericNeuronFunction::apply(x, at::TensorList(uniforms), neuron, fired);
}

} // namespace snn::runtime
