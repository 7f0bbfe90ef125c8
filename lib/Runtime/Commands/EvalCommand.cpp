//===- EvalCommand.cpp - The `snn-run eval` command -----------------------===//

#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Commands/EvalCommand.h"
#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Runtime/Training/MetricsLog.h"

#include <cstdio>

namespace snn::runtime {

void runEval(const EvalOptions &options) {
  setIntraOpThreads(options.threads);
  applyKernelChoice(options.kernels);
  checkParentDirectory(options.logPath, "--log");
  const DistributedRun *run = options.distributed;
  Artifact artifact = loadRunArtifact(options.artifactDir, "eval", run);
  const bool partitioned = artifact.run.partitioned;
  const bool pipeline = artifact.run.pipeline.has_value();
  const bool manyRanks = run && run->world;
  const int rank = manyRanks ? run->world->rank() : 0;
  // Replicas hold the same weights: rank 0 evaluates for the run. A
  // partitioned program or a pipeline needs every rank (of rank 0's dp
  // replica), each on the whole split; rank 0 reports.
  if (!partitioned && !pipeline && rank != 0)
    return;
  MeshContext mesh = partitioned || pipeline || !manyRanks
                         ? createRunMesh(run, artifact.manifest)
                         : MeshContext();
  ParameterPartition partition(artifact.manifest, mesh);
  Model model(artifact);
  model.setMesh(&mesh);
  loadTrainedWeights(options.paramsDir, options.checkpointDir, model.params(),
                     partitioned ? &partition : nullptr,
                     pipeline ? &artifact.manifest : nullptr);
  Dataset data = loadEvaluationData(options.data);
  BatchLoader loader(
      data,
      resolveBatchLayout(data, model.manifest().input, options.repeatTime),
      {options.batchSize, false, false, 0});
  EvalMetrics metrics;
  if (pipeline) {
    PipelinePlace where = pipelinePlaceOf(artifact, mesh);
    if (where.replica != 0)
      return;
    PipelineEngine engine(model, where, options.loss);
    metrics = evaluatePipeline(engine, loader, options.loss);
  } else {
    metrics = evaluate(model, loader, options.loss);
  }
  if (rank != 0)
    return;
  MetricsLog log;
  if (!options.logPath.empty())
    log = MetricsLog(options.logPath, false);
  log.eval(metrics);
  std::printf("%s\n", evalJson(metrics).c_str());
}

} // namespace snn::runtime
