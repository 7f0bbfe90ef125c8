//===- Launch.cpp - snn-run's many ranks: the launcher and a rank's run ---===//

#include "snn/Runtime/Commands/Launch.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Data/BatchLoader.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/World.h"
#include "snn/Runtime/Execution/DataParallelResize.h"
#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Training/TrainSettings.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sys/prctl.h>
#include <thread>

namespace snn::runtime {

namespace {

/// train's batch over the ranks, with the messages each rank's loader and pipeline would
/// give, so that a bad split fails once, here, instead of on every rank.
void checkTrainBatch(const TrainOptions &train, const Manifest &manifest) {
  int64_t dpRanks = dataParallelSize(manifest);
  checkBatchSplit(train.batchSize, dpRanks);
  // A pipeline without microbatches is the ranks' to refuse (readPipelineLayout).
  if (isPipeline(manifest) && manifest.plan.ppMicrobatches > 0)
    checkPipelineBatches(train, manifest.plan.ppMicrobatches, dpRanks, /*samples=*/0);
}

/// A restart continues training from the latest checkpoint, so it needs both; a rerun of
/// infer or eval is the user's to decide.
void checkRestarts(const LaunchRequest &request, int maxRestarts) {
  if (maxRestarts == 0)
    return;
  if (!request.train)
    throw Error("--max-restarts: only train restarts its ranks (" + request.command +
                " would start over)");
  if (request.train->checkpointDir.empty() || !request.train->resume)
    throw Error("--max-restarts needs --checkpoint DIR and --resume: the restarted ranks "
                "continue from the latest checkpoint (the first start, with none yet, "
                "starts at step 0)");
}

/// Intra-op threads of a rank when --threads is not given: the cores shared
/// by the ranks on this host, so that N ranks do not oversubscribe them.
int threadsPerRank(int localRanks) {
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, localRanks));
}

} // namespace

int launchRanks(const LaunchRequest &request, const dist::LauncherArguments &arguments) {
  if (request.command == "export")
    throw Error("export runs in one process: drop --nproc");
  const std::string &dir = request.artifactDir;
  Manifest manifest = readManifest((std::filesystem::path(dir) / "manifest.json").string());
  try {
    resizeDataParallelAxis(manifest, arguments.nproc);
  } catch (const std::exception &e) {
    throw Error(dir + ": " + e.what());
  }
  if (request.train && request.train->batchSize > 0)
    checkTrainBatch(*request.train, manifest);
  checkRestarts(request, arguments.maxRestarts);
  dist::LaunchOptions options;
  options.masterPort = arguments.masterPort;
  options.masterAddr = arguments.masterAddr;
  options.maxRestarts = arguments.maxRestarts;
  options.rankMain = request.rankMain;
  if (options.rankMain)
    stopBlasThreads();
  return dist::launchLocalRanks(arguments.nproc, arguments.argv, options);
}

int runRank(double distTimeoutSeconds,
            const std::function<void(const DistributedRun &run, int threads)> &command) {
  dist::DistEnvironment environment = dist::readTorchrunEnvironment();
  // What ps and top show: which process is which rank (a rank forked from the launcher has
  // the launcher's command line and, in /proc/PID/environ, its environment).
  ::prctl(PR_SET_NAME, ("snn-run rank " + std::to_string(environment.rank)).c_str());
  dist::InitOptions init;
  init.timeout = std::chrono::milliseconds(int64_t(distTimeoutSeconds * 1000.0 + 0.5));
  DistributedRun run;
  run.world = dist::World::initialize(environment, init);
  try {
    command(run, threadsPerRank(environment.localWorldSize));
  } catch (const std::exception &e) {
    run.world->recordFailure();
    std::string message = describeException(e);
    // Rank 0 speaks for the run; other ranks say who they are. Messages of
    // the distributed layer already name it ("rank R: "), also when a node's
    // name comes first (a collective failed inside an op).
    const std::string self = "rank " + std::to_string(environment.rank) + ": ";
    if (environment.rank != 0 && message.find(self) == std::string::npos)
      message = self + message;
    // One write: the ranks share the terminal, and a line written in pieces
    // interleaves with theirs. Printed before the World goes: destroying it
    // waits for queued collectives, each bounded by the timeout.
    std::cerr << ("error: " + message + "\n") << std::flush;
    return 1;
  }
  return 0;
}

void checkCalibrateLaunch(int nproc) {
  if (nproc > 0)
    throw Error("calibrate starts its own ranks (--ranks): drop --nproc");
  if (dist::torchrunEnvironmentPresent())
    throw Error("calibrate runs in one process and starts its own ranks "
                "(--ranks): run it without torchrun");
}

} // namespace snn::runtime
