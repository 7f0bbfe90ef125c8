//===- Evaluate.cpp - Loss and accuracy over a whole split ----------------===//

#include "snn/Runtime/Training/Evaluate.h"

#include <c10/core/InferenceMode.h>

#include <chrono>

namespace snn::runtime {

EvalMetrics evaluate(Model &model, BatchLoader &loader, LossKind loss) {
  auto start = std::chrono::steady_clock::now();
  bool timeMajor = model.manifest().output.timeMajor;
  // The model's eval outputs are inference tensors; the metrics on them must
  // run in inference mode too.
  c10::InferenceMode guard;
  double lossSum = 0.0;
  int64_t correct = 0, samples = 0;
  loader.startEpoch(0);
  for (int64_t index = 0; index < loader.batchesPerEpoch(); ++index) {
    Batch batch = loader.batch(index);
    at::Tensor rate = firingRate(model.forward(batch.input, false), timeMajor);
    if (index == 0)
      checkLabels(loader.dataset(), rate.size(1));
    double batchLoss = computeLoss(rate, batch.labels, loss).item<float>();
    lossSum += batchLoss * double(batch.size);
    correct += countCorrect(rate, batch.labels);
    samples += batch.size;
  }
  EvalMetrics metrics;
  metrics.samples = samples;
  metrics.loss = samples ? lossSum / double(samples) : 0.0;
  metrics.accuracy = samples ? double(correct) / double(samples) : 0.0;
  metrics.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return metrics;
}

} // namespace snn::runtime
