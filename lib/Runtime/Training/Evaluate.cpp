//===- Evaluate.cpp - Loss and accuracy over a whole split ----------------===//

#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"
#include "snn/Runtime/Pipeline/PipelineSync.h"

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

EvalMetrics evaluatePipeline(PipelineEngine &engine, BatchLoader &loader, LossKind loss) {
  auto start = std::chrono::steady_clock::now();
  bool timeMajor = engine.model().manifest().output.timeMajor;
  c10::InferenceMode guard;
  double lossSum = 0.0, correct = 0.0;
  int64_t samples = 0;
  loader.startEpoch(0);
  for (int64_t index = 0; index < loader.batchesPerEpoch(); ++index) {
    Batch batch = loader.batch(index);
    at::Tensor output = engine.forward(batch.input);
    samples += batch.size;
    if (!output.defined())
      continue; // another rank runs the last stage
    at::Tensor rate = firingRate(output, timeMajor);
    if (index == 0)
      checkLabels(loader.dataset(), rate.size(1));
    lossSum += computeLoss(rate, batch.labels, loss).item<float>() * double(batch.size);
    correct += double(countCorrect(rate, batch.labels));
  }
  std::vector<double> totals =
      shareLastStageValues({lossSum, correct}, engine.place(), nullptr);
  EvalMetrics metrics;
  metrics.samples = samples;
  metrics.loss = samples ? totals[0] / double(samples) : 0.0;
  metrics.accuracy = samples ? totals[1] / double(samples) : 0.0;
  metrics.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return metrics;
}

} // namespace snn::runtime
