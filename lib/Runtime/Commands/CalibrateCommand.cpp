//===- CalibrateCommand.cpp - snn-run calibrate ---------------------------===//

#include "snn/Runtime/Commands/CalibrateCommand.h"
#include "snn/Runtime/Commands/Calibration.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Distributed/Backend.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/Launcher.h"
#include "snn/Runtime/Distributed/World.h"
#include "snn/Runtime/Execution/KernelCrossoverFile.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/HostCpuTimes.h"
#include "snn/Runtime/Support/NumberFormat.h"
#include "snn/Schema/UserDeviceProfile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <unistd.h>

namespace snn::runtime {

namespace fs = std::filesystem;

namespace {

/// Progress on stderr: a bar redrawn in place, or one line per curve.
class CalibrationReporter {
public:
  explicit CalibrationReporter(Progress::Mode mode) : mode(mode) {}
  ~CalibrationReporter() { finish(); }

  CalibrationProgressFn callback() {
    if (mode == Progress::Mode::Off)
      return {};
    return [this](const std::string &what, size_t index, size_t count) {
      if (mode == Progress::Mode::Lines) {
        if (index == 0)
          std::fprintf(stderr, "calibrate: %s (%zu steps)\n", what.c_str(), count);
        return;
      }
      // Padded so that a shorter line covers the one before it.
      std::fprintf(stderr, "\rcalibrate: %-48s %zu/%zu", what.c_str(), index + 1, count);
      std::fflush(stderr);
      barOpen = true;
    };
  }

  void finish() {
    if (barOpen)
      std::fputc('\n', stderr);
    barOpen = false;
  }

private:
  Progress::Mode mode;
  bool barOpen = false;
};

CalibrationTiming computeTiming(bool quick) {
  return quick ? CalibrationTiming{1, 3, 0.0005} : CalibrationTiming{1, 5, 0.002};
}

/// The models' one-process steps: more rounds than one point of a kernel, spread over the
/// calibration in `windows` batches (ModelStepSampler); each batch at least one round.
std::vector<int> modelStepRounds(bool quick, size_t windows) {
  int total = std::max<int>(quick ? 3 : 9, int(windows));
  std::vector<int> rounds(windows, total / int(windows));
  for (int i = 0; i < total % int(windows); ++i)
    ++rounds[size_t(i)];
  return rounds;
}

/// Collectives: the first calls connect Gloo's pairs and are not timed.
CalibrationTiming communicationTiming(bool quick) {
  return quick ? CalibrationTiming{2, 3, 0} : CalibrationTiming{2, 7, 0};
}

/// Fails before the minute of measuring when the profile could not be
/// written: a missing directory, a directory as --out, or a directory where
/// no file can be created (permissions, a read-only or virtual file system;
/// a probe file tells, since access() says yes to root everywhere).
void checkOutputFile(const std::string &path) {
  if (path.empty())
    throw Error("--out must name a file");
  if (fs::is_directory(path))
    throw Error("--out " + path + ": is a directory");
  checkParentDirectory(path, "--out");
  fs::path parent = fs::path(path).parent_path();
  std::string probe = ((parent.empty() ? fs::path(".") : parent) / ".snn-calibrate-XXXXXX").string();
  int fd = ::mkstemp(probe.data());
  if (fd < 0)
    throw Error("--out " + path + ": cannot create a file in '" +
                (parent.empty() ? std::string(".") : parent.string()) + "': " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string joinedSizes(const std::vector<int64_t> &sizes) {
  std::string text;
  for (int64_t size : sizes)
    text += (text.empty() ? "" : ",") + std::to_string(size);
  return text;
}

/// The group sizes to launch, ascending. Groups with more ranks than CPUs are
/// measured too, with a note: their ranks share CPUs, so the times include
/// their scheduling, as a run on that many ranks of this machine will.
std::vector<int64_t> groupSizesToMeasure(const std::vector<int64_t> &requested,
                                         int64_t logicalCpus) {
  std::vector<int64_t> sizes = requested;
  std::sort(sizes.begin(), sizes.end());
  for (int64_t size : sizes)
    if (size > logicalCpus)
      std::cerr << ("note: calibrate: " + std::to_string(size) + " ranks share this machine's " +
                    std::to_string(logicalCpus) +
                    " logical CPUs: their times include that, as a run on as many ranks "
                    "here will\n");
  return sizes;
}

/// A fresh private directory for the ranks' result file.
fs::path makeResultDirectory() {
  std::string pattern = (fs::temp_directory_path() / "snn-calibrate-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw Error("calibrate: cannot create a temporary directory under " +
                fs::temp_directory_path().string());
  return pattern;
}

/// The argument list of each rank: `snn-run calibrate-ranks ...`.
std::vector<std::string> rankArguments(const CalibrateOptions &options,
                                       const std::string &resultPath, bool sendRecv) {
  std::vector<std::string> argv{"snn-run",   "calibrate-ranks",
                                "--result",  resultPath,
                                "--threads", std::to_string(options.threads),
                                "--progress", kProgressSettingNames.name(options.progress),
                                "--dist-timeout", formatDouble(options.distTimeout)};
  if (options.quick)
    argv.push_back("--quick");
  if (sendRecv)
    argv.push_back("--send-recv");
  for (const std::string &model : options.models)
    argv.insert(argv.end(), {"--model", model});
  if (!options.models.empty())
    argv.insert(argv.end(), {"--model-batches", joinedSizes(options.modelBatches)});
  return argv;
}

/// The ranks' result lines of their waits between computes (measureWaitsBetweenComputes).
constexpr const char *kWaitsBetweenComputesResult = "waits_between_computes";
/// ... and of their pipelines' messages (measurePipelineMessages).
constexpr const char *kPipelineMessagesResult = "pipeline_messages";

/// Moves what the ranks' results hold beside the communication curves out of `curves`: the
/// replicated-step curves into their models, the waits between computes into `profile`.
void takeNonCommunicationCurves(std::vector<schema::CommunicationCurve> &curves,
                                schema::DeviceProfile &profile) {
  for (schema::CommunicationCurve &curve : curves) {
    for (size_t i = 0; i < profile.modelSteps.size(); ++i)
      if (curve.kind == replicatedStepKind(i))
        profile.modelSteps[i].replicated.push_back({curve.ranks, std::move(curve.points)});
    if (curve.kind == kWaitsBetweenComputesResult)
      profile.waitsBetweenComputes.push_back(
          {curve.ranks, kWaitBetweenComputesBytes, std::move(curve.points)});
    if (curve.kind == kPipelineMessagesResult)
      profile.pipelineMessages.push_back({curve.ranks, kWaitBetweenComputesBytes,
                                          std::move(curve.points), std::move(curve.cpuPoints)});
  }
  // Every curve parsed back has points: the taken ones are left empty.
  curves.erase(std::remove_if(curves.begin(), curves.end(),
                              [](const schema::CommunicationCurve &curve) {
                                return curve.points.empty();
                              }),
               curves.end());
}

/// The one-process points of `sampled` into `profile` (whose replicated steps stay).
void takeOneProcessSteps(std::vector<schema::ModelStepCurve> sampled,
                         std::vector<schema::ModelStepCurve> &profile) {
  for (size_t i = 0; i < sampled.size() && i < profile.size(); ++i) {
    profile[i].points = std::move(sampled[i].points);
    profile[i].nodeByNodePoints = std::move(sampled[i].nodeByNodePoints);
    profile[i].coldPoints = std::move(sampled[i].coldPoints);
  }
}

/// Runs `ranks` ranks of calibrate-ranks; appends their curves to `profile` (the models'
/// replicated steps to the models, the waits between computes to their own list).
/// Returns the launcher's exit code (it printed the `error:` line of a failed rank).
int measureGroup(const CalibrateOptions &options, int64_t ranks, bool sendRecv,
                 schema::DeviceProfile &profile) {
  fs::path dir = makeResultDirectory();
  std::string resultPath = (dir / "collectives.txt").string();
  int code = 0;
  try {
    code = dist::launchLocalRanks(int(ranks), rankArguments(options, resultPath, sendRecv));
    if (code == 0) {
      std::vector<schema::CommunicationCurve> measured =
          parseCommunicationResults(readWholeFile(resultPath), resultPath);
      takeNonCommunicationCurves(measured, profile);
      for (schema::CommunicationCurve &curve : measured)
        profile.communication.push_back(std::move(curve));
    }
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    throw;
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return code;
}


/// "262.1 K", "4.29 G": three significant digits and an SI prefix.
std::string siValue(double value) {
  const char *prefixes[] = {"", " K", " M", " G", " T"};
  int i = 0;
  while (value >= 1000.0 && i < 4) {
    value /= 1000.0;
    ++i;
  }
  char text[32];
  std::snprintf(text, sizeof(text), value < 10 ? "%.2f%s" : value < 100 ? "%.1f%s" : "%.0f%s",
                value, prefixes[i]);
  return text;
}

struct SummaryRow {
  std::string kind, ranks, points, sizes, fastest, rate;
};

SummaryRow computeRow(const schema::ComputeCurve &curve) {
  bool flops = curve.kind == "gemm" || curve.kind == "conv2d";
  // A training call does the forward's FLOPs three times (CostModel.h:
  // backward = 2 x forward).
  double factor = flops ? 3.0 : 1.0, best = 0, fastest = INFINITY;
  for (const schema::ProfilePoint &p : curve.points) {
    best = std::max(best, factor * p.size / p.seconds);
    fastest = std::min(fastest, p.seconds);
  }
  std::string unit = flops ? " FLOP" : " elements";
  return {curve.kind, "-", std::to_string(curve.points.size()),
          siValue(curve.points.front().size) + " .. " + siValue(curve.points.back().size) + unit,
          formatSeconds(fastest),
          siValue(best) + (flops ? "FLOP/s" : " elements/s")};
}

SummaryRow modelStepRow(const schema::ModelStepCurve &curve) {
  double best = 0, fastest = INFINITY;
  for (const schema::ProfilePoint &p : curve.points) {
    best = std::max(best, p.size / p.seconds);
    fastest = std::min(fastest, p.seconds);
  }
  return {"step of " + curve.model, "-", std::to_string(curve.points.size()),
          siValue(curve.points.front().size) + " .. " + siValue(curve.points.back().size) +
              " samples",
          formatSeconds(fastest), siValue(best) + " samples/s"};
}

SummaryRow communicationRow(const schema::CommunicationCurve &curve) {
  double best = 0, fastest = INFINITY;
  for (const schema::ProfilePoint &p : curve.points) {
    best = std::max(best, p.size / p.seconds);
    fastest = std::min(fastest, p.seconds);
  }
  return {curve.kind, std::to_string(curve.ranks), std::to_string(curve.points.size()),
          formatBytes(int64_t(curve.points.front().size)) + " .. " +
              formatBytes(int64_t(curve.points.back().size)),
          formatSeconds(fastest), siValue(best) + "B/s"};
}

/// The fastest column holds the wait after the shortest compute, the last the longest's.
SummaryRow waitRow(const std::string &kind, const schema::WaitBetweenComputesCurve &curve) {
  return {kind, std::to_string(curve.ranks),
          std::to_string(curve.points.size()),
          formatSeconds(curve.points.front().size) + " .. " +
              formatSeconds(curve.points.back().size) + " computes",
          formatSeconds(curve.points.front().seconds),
          "waits up to " + formatSeconds(curve.points.back().seconds)};
}

void validateModelOptions(const CalibrateOptions &options) {
  std::set<std::string> seen;
  for (const std::string &dir : options.models) {
    if (!seen.insert(fs::weakly_canonical(dir).string()).second)
      throw Error("--model " + dir + " is given twice");
    checkModelToCalibrate(dir);
  }
  const std::vector<int64_t> &batches = options.modelBatches;
  for (size_t i = 0; i < batches.size(); ++i)
    if (batches[i] < 1 || (i > 0 && batches[i] <= batches[i - 1]))
      throw Error("--model-batches " + joinedSizes(batches) +
                  ": sizes must be positive and ascending");
  if (!options.models.empty() && batches.empty())
    throw Error("--model-batches: give at least one batch size");
}

/// A machine measured again times its event kernels' crossovers again too
/// (KernelCrossoverFile.h): the next runs re-time the shapes they meet.
void forgetMachineKernelCrossovers() {
  std::string path = userKernelCrossoversPath();
  if (path.empty())
    return;
  try {
    if (size_t dropped = forgetKernelCrossovers(path); dropped > 0)
      std::cout << "dropped this machine's " << dropped << " kernel crossovers from " << path
                << " (the next runs time them again)\n"
                << std::flush;
  } catch (const std::exception &e) {
    std::cerr << "warning: calibrate: " << e.what() << "\n" << std::flush;
  }
}

} // namespace

void requireCalibrateGroupSize(int64_t ranks) {
  if (ranks < 2)
    throw Error("--ranks: a group has at least 2 ranks, got " + std::to_string(ranks));
  if (ranks > kMaxCalibrateRanks)
    throw Error("--ranks: at most " + std::to_string(kMaxCalibrateRanks) +
                " ranks per group, got " + std::to_string(ranks));
}

void validateCalibrateOptions(const CalibrateOptions &options) {
  std::set<int64_t> seen;
  for (int64_t ranks : options.ranks) {
    requireCalibrateGroupSize(ranks);
    if (!seen.insert(ranks).second)
      throw Error("--ranks " + joinedSizes(options.ranks) + ": " + std::to_string(ranks) +
                  " is given twice");
  }
  if (options.threads < 1)
    throw Error("--threads must be at least 1");
  if (!(options.distTimeout > 0))
    throw Error("--dist-timeout must be positive");
  checkOutputFile(options.outPath);
  validateModelOptions(options);
}

/// The profile's record of the hypervisor's steal while it was measured, and a warning
/// when that made it a slow spell's.
static void recordSteal(schema::MachineIdentity &machine,
                        const std::optional<HostCpuTimes> &before) {
  machine.stealShare = stealShareBetween(before, readHostCpuTimes());
  if (machine.stealShare > schema::kDisturbingStealShare) {
    char share[32];
    std::snprintf(share, sizeof(share), "%.1f %%", machine.stealShare * 100);
    std::cerr << "warning: calibrate: the hypervisor gave " << share
              << " of this machine's CPU time to other tenants while it measured (steal, "
                 "/proc/stat): the profile's times are slower than this machine's; "
                 "calibrate again when the host is quieter\n"
              << std::flush;
  }
}

/// --out, or this user's profile (its directory created) when none is named.
static std::string calibrateOutputPath(const std::string &named) {
  if (!named.empty())
    return named;
  std::string path = schema::userDeviceProfilePath();
  if (path.empty())
    throw Error(std::string("--out: name the profile's file (there is no per-user place: ") +
                schema::kUserDeviceProfileEnv + " is 'none', or HOME is unset)");
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  if (error)
    throw Error("--out " + path + ": cannot create its directory: " + error.message());
  return path;
}

int runCalibrate(const CalibrateOptions &named) {
  CalibrateOptions options = named;
  options.outPath = calibrateOutputPath(named.outPath);
  validateCalibrateOptions(options);
  setIntraOpThreads(options.threads);
  std::optional<HostCpuTimes> cpuTimesBefore = readHostCpuTimes();
  schema::DeviceProfile profile;
  profile.createdBy = options.createdBy;
  profile.machine = schema::thisMachine();
  profile.machine.threads = options.threads;
  profile.machine.backend = dist::backendName(dist::Backend::Gloo);
  std::vector<int64_t> groups = groupSizesToMeasure(options.ranks, profile.machine.logicalCpus);
  // The models' steps in a batch of rounds before the groups and after each: a shared
  // host's slow spells last tens of seconds (the CSNN's step at 32 samples: 29-38 ms in
  // four calibrations of 5 rounds in a row, 100-step medians of 24.5-38.7 ms in one run).
  std::vector<int> rounds = modelStepRounds(options.quick, groups.size() + 1);
  std::unique_ptr<ModelStepSampler> steps;
  {
    CalibrationReporter reporter(Progress::modeFor(options.progress));
    profile.compute = measureCompute(defaultCalibrationSizes(options.quick),
                                     computeTiming(options.quick), reporter.callback());
    if (!options.models.empty()) {
      steps = std::make_unique<ModelStepSampler>(options.models, options.modelBatches,
                                                 computeTiming(options.quick));
      steps->sample(rounds.front(), reporter.callback());
      profile.modelSteps = steps->curves();
    }
  }
  // send_recv in every group: pairs exchanging at once wait for each other's turn on
  // the CPUs as a pipeline's stages do.
  for (size_t g = 0; g < groups.size(); ++g) {
    int code = measureGroup(options, groups[g], /*sendRecv=*/true, profile);
    if (code != 0)
      return code;
    if (steps) {
      CalibrationReporter reporter(Progress::modeFor(options.progress));
      steps->sample(rounds[g + 1], reporter.callback());
    }
  }
  if (steps)
    takeOneProcessSteps(steps->curves(), profile.modelSteps);
  recordSteal(profile.machine, cpuTimesBefore);
  std::string text = schema::formatDeviceProfile(profile);
  // What the planner will read: a profile this command cannot read back is
  // a bug here, not a file to leave behind.
  schema::parseDeviceProfile(text, options.outPath);
  replaceFileDurably(options.outPath, text);
  std::cout << formatCalibrationSummary(profile) << "wrote " << options.outPath << "\n"
            << std::flush;
  forgetMachineKernelCrossovers();
  return 0;
}

std::string replicatedStepKind(size_t model) {
  return "replicated_step_of_model_" + std::to_string(model);
}

int runCalibrateRanks(const CalibrateRanksOptions &options) {
  if (!dist::torchrunEnvironmentPresent())
    throw Error("calibrate-ranks runs on the ranks 'snn-run calibrate' starts; run that");
  dist::DistEnvironment environment = dist::readTorchrunEnvironment();
  try {
    setIntraOpThreads(options.threads);
    dist::InitOptions init;
    init.timeout = std::chrono::milliseconds(int64_t(options.distTimeout * 1000.0 + 0.5));
    std::shared_ptr<dist::World> world = dist::World::initialize(environment, init);
    CalibrationReporter reporter(environment.rank == 0 ? Progress::modeFor(options.progress)
                                                       : Progress::Mode::Off);
    std::vector<schema::CommunicationCurve> curves =
        measureCollectives(*world, defaultMessageBytes(options.quick), options.sendRecv,
                           communicationTiming(options.quick), reporter.callback());
    schema::WaitBetweenComputesCurve waits = measureWaitsBetweenComputes(
        *world, communicationTiming(options.quick), reporter.callback());
    if (!waits.points.empty())
      curves.push_back({kWaitsBetweenComputesResult, waits.ranks, std::move(waits.points)});
    schema::WaitBetweenComputesCurve messages = measurePipelineMessages(
        *world, communicationTiming(options.quick), reporter.callback());
    if (!messages.points.empty())
      curves.push_back({kPipelineMessagesResult, messages.ranks, std::move(messages.points),
                        std::move(messages.cpuPoints)});
    for (size_t i = 0; i < options.models.size(); ++i) {
      std::vector<schema::ProfilePoint> points =
          measureReplicatedSteps(options.models[i], world->group(), options.modelBatches,
                                 computeTiming(options.quick), reporter.callback());
      if (!points.empty())
        curves.push_back({replicatedStepKind(i), world->size(), std::move(points)});
    }
    reporter.finish();
    if (environment.rank == 0)
      replaceFileDurably(options.resultPath, formatCommunicationResults(curves));
    return 0;
  } catch (const std::exception &e) {
    std::string message = describeException(e);
    if (message.rfind("rank ", 0) != 0)
      message = "rank " + std::to_string(environment.rank) + ": " + message;
    std::cerr << ("calibrate-ranks: " + message + "\n") << std::flush;
    return 1;
  }
}

std::string formatCalibrationSummary(const schema::DeviceProfile &profile) {
  std::vector<SummaryRow> rows{{"kind", "ranks", "points", "sizes", "fastest call", "best"}};
  for (const schema::ComputeCurve &curve : profile.compute)
    rows.push_back(computeRow(curve));
  for (const schema::CommunicationCurve &curve : profile.communication)
    rows.push_back(communicationRow(curve));
  for (const schema::ModelStepCurve &curve : profile.modelSteps)
    rows.push_back(modelStepRow(curve));
  for (const schema::WaitBetweenComputesCurve &curve : profile.waitsBetweenComputes)
    rows.push_back(waitRow(kWaitsBetweenComputesResult, curve));
  for (const schema::WaitBetweenComputesCurve &curve : profile.pipelineMessages)
    rows.push_back(waitRow(kPipelineMessagesResult, curve));
  size_t widths[5] = {};
  for (const SummaryRow &row : rows) {
    const std::string *cells[] = {&row.kind, &row.ranks, &row.points, &row.sizes, &row.fastest};
    for (size_t i = 0; i < 5; ++i)
      widths[i] = std::max(widths[i], cells[i]->size());
  }
  std::string table;
  for (const SummaryRow &row : rows) {
    char line[256];
    std::snprintf(line, sizeof(line), "%-*s  %*s  %*s  %-*s  %*s  %s\n", int(widths[0]),
                  row.kind.c_str(), int(widths[1]), row.ranks.c_str(), int(widths[2]),
                  row.points.c_str(), int(widths[3]), row.sizes.c_str(), int(widths[4]),
                  row.fastest.c_str(), row.rate.c_str());
    table += line;
  }
  table += "(gemm, conv2d: FLOP/s of forward and backward, 3 x the forward's FLOPs; "
           "communication: bytes of the whole tensor per second)\n";
  if (profile.machine.stealShare >= 0) {
    char line[128];
    std::snprintf(line, sizeof(line),
                  "steal while measuring: %.1f %% of the CPUs' time (other tenants')\n",
                  profile.machine.stealShare * 100);
    table += line;
  }
  return table;
}

} // namespace snn::runtime
