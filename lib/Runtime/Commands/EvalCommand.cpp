//===- EvalCommand.cpp - The `snn-run eval` command -----------------------===//

#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Commands/EvalCommand.h"
#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Runtime/Training/MetricsLog.h"

#include <cstdio>

namespace snn::runtime {

namespace {

void validateEvalOptions(const EvalOptions &options) {
  if (options.batchSize < 1)
    throw Error("--batch-size must be at least 1");
  if (options.repeatTime < 0)
    throw Error("--repeat-time must be at least 1");
  parseLossKind(options.loss);
}

} // namespace

void runEval(const EvalOptions &options) {
  validateEvalOptions(options);
  setIntraOpThreads(options.threads);
  checkParentDirectory(options.logPath, "--log");
  Artifact artifact =
      loadRunArtifact(options.artifactDir, "eval", options.distributed);
  // Replicas hold the same weights: rank 0 evaluates for the run.
  if (options.distributed && options.distributed->world &&
      options.distributed->world->rank() != 0)
    return;
  Model model(artifact);
  loadTrainedWeights(options.paramsDir, options.checkpointDir, model.params());
  Dataset data = loadEvaluationData(options.data);
  BatchLoader loader(
      data,
      resolveBatchLayout(data, model.manifest().input, options.repeatTime),
      {options.batchSize, false, false, 0});
  MetricsLog log;
  if (!options.logPath.empty())
    log = MetricsLog(options.logPath, false);
  EvalMetrics metrics = evaluate(model, loader, parseLossKind(options.loss));
  log.eval(metrics);
  std::printf("%s\n", evalJson(metrics).c_str());
}

} // namespace snn::runtime
