//===- EvalCommand.cpp - The `snn-run eval` command -----------------------===//

#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Commands/EvalCommand.h"
#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Runtime/Training/MetricsLog.h"

#include <cstdio>

namespace snn::runtime {

void runEval(const EvalOptions &options) {
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
  EvalMetrics metrics = evaluate(model, loader, options.loss);
  log.eval(metrics);
  std::printf("%s\n", evalJson(metrics).c_str());
}

} // namespace snn::runtime
