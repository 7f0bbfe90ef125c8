//===- CalibrateCommand.h - snn-run calibrate --------------------*- C++ -*-===//
//
// `snn-run calibrate` measures this machine and writes the device profile
// that `snn-compile --device-profile FILE` reads (DeviceProfile.h,
// docs/snn-run.md). Compute runs in this process; for each group size of
// --ranks the command starts that many local ranks of snn-run through the
// launcher (Launcher.h), running the hidden subcommand `calibrate-ranks`:
// they time the collectives together and rank 0 writes its medians to a file
// in a temporary directory, which this process reads back.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_COMMANDS_CALIBRATECOMMAND_H
#define SNN_RUNTIME_COMMANDS_CALIBRATECOMMAND_H

#include "snn/Runtime/Commands/ModelStepCalibration.h"
#include "snn/Runtime/Training/Progress.h"
#include "snn/Schema/DeviceProfile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

/// Group sizes above this are not a local calibration (--ranks).
inline constexpr int64_t kMaxCalibrateRanks = 64;

/// The flags of `snn-run calibrate`, each checked on its own by snn-run's
/// command line; runCalibrate checks the rest (validateCalibrateOptions).
struct CalibrateOptions {
  /// Empty: this user's profile (schema::userDeviceProfilePath), which plans read by default.
  std::string outPath;
  /// Intra-op threads of the compute measurements and of every rank.
  int threads = 1;
  /// Group sizes of the communication curves.
  std::vector<int64_t> ranks{2, 4};
  /// A few small sizes and fewer repeats: seconds, for tests.
  bool quick = false;
  ProgressSetting progress = ProgressSetting::Auto;
  /// Bound on the ranks' rendezvous and every collective.
  double distTimeout = 60.0;
  /// The profile's created_by, e.g. "snn-run calibrate 0.1.0".
  std::string createdBy = "snn-run calibrate";
  /// Artifacts whose whole training step is measured too (ModelStepCalibration.h).
  std::vector<std::string> models;
  /// Samples per step of those measurements, ascending.
  std::vector<int64_t> modelBatches = defaultModelBatches();
};

/// Throws Error naming --ranks for a group size below 2 or above
/// kMaxCalibrateRanks.
void requireCalibrateGroupSize(int64_t ranks);

/// Throws Error (one line naming the flag) for a group size below 2 or above
/// kMaxCalibrateRanks, the same size twice, threads below 1, an --out
/// that cannot be written (missing or read-only directory, a directory), a
/// --model that is not a whole-model artifact or is given twice, or
/// --model-batches that are not positive and ascending.
void validateCalibrateOptions(const CalibrateOptions &options);

/// Measures, writes the profile atomically to options.outPath and prints the
/// summary table on stdout. Returns the exit code: 0, or a failed rank's
/// (the launcher has then printed the `error:` line naming it). Throws Error
/// for bad options or an unwritable file.
int runCalibrate(const CalibrateOptions &options);

/// The flags of the hidden `snn-run calibrate-ranks`, which runCalibrate
/// passes to each rank it starts.
struct CalibrateRanksOptions {
  /// Where rank 0 writes its medians (formatCommunicationResults).
  std::string resultPath;
  int threads = 1;
  bool quick = false;
  /// Also time send/recv between pairs of ranks, every pair at once.
  bool sendRecv = false;
  /// calibrate's --model artifacts: each one's replicated steps too
  /// (measureReplicatedSteps), reported as curves of kind replicatedStepKind(i).
  std::vector<std::string> models;
  std::vector<int64_t> modelBatches;
  ProgressSetting progress = ProgressSetting::Auto;
  double distTimeout = 60.0;
};

/// The kind of the result lines of the replicated steps of calibrate's i-th --model.
std::string replicatedStepKind(size_t model);

/// One rank of calibrate's communication measurement, started with the
/// torchrun variables set (Environment.h). Returns the exit code; a failure
/// is printed as "calibrate-ranks: rank R: ..." without the `error:` prefix,
/// since the launcher's line naming the failed rank is the run's error.
int runCalibrateRanks(const CalibrateRanksOptions &options);

/// The table printed at the end: per curve its group size, point count,
/// size range, fastest call and best throughput (GFLOP/s of forward and
/// backward for gemm and conv2d, elements/s for the other compute kinds,
/// GB/s of the whole tensor for communication).
std::string formatCalibrationSummary(const schema::DeviceProfile &profile);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_CALIBRATECOMMAND_H
