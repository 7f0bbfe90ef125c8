//===- Launch.h - snn-run's many ranks: the launcher and a rank's run -*- C++ -*-===//
//
// `snn-run --nproc N CMD ...` is the launcher: it checks what it can before any rank starts
// (the artifact's world size, train's batch split), then starts N ranks of this program on
// this host and supervises them (Distributed/Launcher.h). A process started with torchrun's
// variables (RANK, WORLD_SIZE, ...; the launcher sets them too) is one rank: it joins the
// others and runs its command (docs/snn-run.md, docs/distributed.md).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_COMMANDS_LAUNCH_H
#define SNN_RUNTIME_COMMANDS_LAUNCH_H

#include "snn/Runtime/Distributed/Launcher.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Training/TrainOptions.h"

#include <functional>
#include <string>
#include <vector>

namespace snn::runtime {

/// The command a launcher starts its ranks with, as far as the launcher checks it.
struct LaunchRequest {
  /// The subcommand: infer, train, eval or export (which runs in one process only).
  std::string command;
  std::string artifactDir;
  /// train's options (the global --batch-size, --drop-last); null for other commands.
  const TrainOptions *train = nullptr;
  /// This program's main for one rank (dist::LaunchOptions::rankMain); empty: each rank
  /// executes the program anew.
  std::function<int(const std::vector<std::string> &argv)> rankMain;
};

/// `--nproc N`: refuses export, an artifact compiled for another world size, (train) a
/// batch the ranks cannot split and --max-restarts other than train's with --checkpoint and
/// --resume, before any rank starts; then runs N local ranks of this
/// program with `arguments.argv` and returns the launcher's exit code. Throws Error.
int launchRanks(const LaunchRequest &request, const dist::LauncherArguments &arguments);

/// One rank of a multi-rank run (torchrun's variables set): joins the others within
/// `distTimeoutSeconds`, calls `command` with the run and the intra-op threads a rank of this
/// host takes when --threads is not given, and prints the command's error as the rank's one
/// `error:` line. Returns the rank's exit code.
int runRank(double distTimeoutSeconds,
            const std::function<void(const DistributedRun &run, int threads)> &command);

/// calibrate starts its own ranks (--ranks): throws Error for `--nproc` (`nproc` > 0) and
/// for torchrun's variables.
void checkCalibrateLaunch(int nproc);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_LAUNCH_H
