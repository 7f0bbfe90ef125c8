//===- Boundary.cpp - Program input and output against the manifest -------===//

#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

namespace snn::runtime {

namespace {

at::Tensor repeatOverTime(const at::Tensor &input, const TensorSpec &spec,
                          int64_t steps, const std::string &name) {
  if (!spec.timeMajor)
    throw Error("--repeat-time: the artifact's input is not time-major");
  if (spec.shape[0] >= 0 && spec.shape[0] != steps)
    throw Error("--repeat-time " + std::to_string(steps) +
                " does not match the artifact's T = " +
                std::to_string(spec.shape[0]));
  std::vector<int64_t> perStep(spec.shape.begin() + 1, spec.shape.end());
  if (!matchesSpecShape(input.sizes(), perStep))
    throw Error(name + ": input has shape " + formatShape(input.sizes()) +
                ", the artifact expects " + formatShape(perStep) +
                " per time step (with --repeat-time)");
  // Direct encoding: the same static input at every step.
  std::vector<int64_t> sizes{steps};
  sizes.insert(sizes.end(), input.sizes().begin(), input.sizes().end());
  return input.unsqueeze(0).expand(sizes).contiguous();
}

} // namespace

at::Tensor prepareInput(const at::Tensor &input, const TensorSpec &spec,
                        int64_t repeatTime, const std::string &name) {
  if (repeatTime > 0)
    return repeatOverTime(input, spec, repeatTime, name);
  if (matchesSpecShape(input.sizes(), spec.shape))
    return input;
  std::string hint;
  if (spec.timeMajor && input.dim() + 1 == int64_t(spec.shape.size()))
    hint = " (a static [N, ...] input needs --repeat-time T)";
  throw Error(name + ": input has shape " + formatShape(input.sizes()) +
              ", the artifact expects " + formatShape(spec.shape) + hint);
}

void checkOutput(const at::Tensor &output, const TensorSpec &spec) {
  if (!matchesSpecShape(output.sizes(), spec.shape))
    throw Error("program output has shape " + formatShape(output.sizes()) +
                ", manifest.json says " + formatShape(spec.shape));
}

bool matchesSpecShape(at::IntArrayRef shape, at::IntArrayRef expected) {
  if (shape.size() != expected.size())
    return false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (expected[i] >= 0 && shape[i] != expected[i])
      return false;
  return true;
}

} // namespace snn::runtime
