//===- Boundary.cpp - Program input and output against the manifest -------===//

#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

namespace snn::runtime {

namespace {

/// Direct encoding: the same static [N, ...] batch at every one of `steps` steps. `byFlag`:
/// the steps come from --repeat-time (else from the manifest of a model that repeats its
/// input itself), which the messages name.
at::Tensor repeatOverTime(const at::Tensor &input, const TensorSpec &spec,
                          int64_t steps, const std::string &name, bool byFlag) {
  if (!spec.timeMajor)
    throw Error("--repeat-time: the artifact's input is not time-major");
  if (byFlag && spec.shape[0] >= 0 && spec.shape[0] != steps)
    throw Error("--repeat-time " + std::to_string(steps) +
                " does not match the artifact's T = " +
                std::to_string(spec.shape[0]));
  if (steps < 1)
    throw Error(name + ": a static [N, ...] input needs --repeat-time T (the artifact's T "
                       "is dynamic)");
  std::vector<int64_t> perStep(spec.shape.begin() + 1, spec.shape.end());
  if (!matchesSpecShape(input.sizes(), perStep))
    throw Error(name + ": input has shape " + formatShape(input.sizes()) +
                ", the artifact expects " + formatShape(perStep) +
                (byFlag ? " per time step (with --repeat-time)"
                        : ", which its model repeats over T, or " + formatShape(spec.shape)));
  std::vector<int64_t> sizes{steps};
  sizes.insert(sizes.end(), input.sizes().begin(), input.sizes().end());
  return input.unsqueeze(0).expand(sizes).contiguous();
}

} // namespace

bool takesStaticInput(at::IntArrayRef shape, const TensorSpec &spec, int64_t repeatTime) {
  return repeatTime > 0 || (spec.repeatedOverTime && spec.timeMajor &&
                            shape.size() + 1 == spec.shape.size());
}

at::Tensor prepareInput(const at::Tensor &input, const TensorSpec &spec,
                        int64_t repeatTime, const std::string &name) {
  if (repeatTime > 0)
    return repeatOverTime(input, spec, repeatTime, name, /*byFlag=*/true);
  if (takesStaticInput(input.sizes(), spec, repeatTime))
    return repeatOverTime(input, spec, spec.shape[0], name, /*byFlag=*/false);
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
