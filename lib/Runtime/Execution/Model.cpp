//===- Model.cpp - A trainable model built from an artifact ---------------===//

#include "snn/Runtime/Execution/Model.h"

#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

namespace snn::runtime {

Model::Model(const Artifact &artifact)
    : manifestCopy(artifact.manifest),
      store(artifact.manifest, artifact.program),
      exec(artifact.program, artifact.manifest.input.name,
           artifact.manifest.output.name, &store) {}

at::Tensor Model::forward(const at::Tensor &input, bool training) {
  if (training) {
    // Record the graph even if the caller's thread had gradients off.
    c10::AutoGradMode gradOn(true);
    // Autograd cannot save an inference tensor (one made under
    // InferenceMode, e.g. by a loader) for backward; a plain copy can be.
    at::Tensor x = input.is_inference() ? input.clone() : input;
    return exec.run(x, /*training=*/true, dataParallel, observer, mesh);
  }
  c10::InferenceMode guard;
  return exec.run(input, /*training=*/false, nullptr, observer, mesh);
}

} // namespace snn::runtime
