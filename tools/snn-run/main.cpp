//===- snn-run.cpp - Run a SpikeMesh artifact -----------------------------===//
//
// Thin driver: CLI11 turns the command line into typed options (enums from
// the kinds' name tables, numbers checked as they are read), the SNNRuntime
// library checks how they combine and does the work, and every failure
// becomes one `error: ...` line with exit code 1.
//
// Many ranks: `snn-run --nproc N CMD ...` is the launcher and a process
// started with torchrun's variables is one rank (Commands/Launch.h).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Commands/CalibrateCommand.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Commands/EvalCommand.h"
#include "snn/Runtime/Commands/ExportCommand.h"
#include "snn/Runtime/Commands/InferCommand.h"
#include "snn/Runtime/Commands/Launch.h"
#include "snn/Runtime/Commands/ReportCommand.h"
#include "snn/Runtime/Commands/TrainCommand.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/Launcher.h"
#include "snn/Runtime/Execution/EventKernelChoice.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/Enums.h"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <functional>
#include <type_traits>

using namespace snn::runtime;

namespace {

struct Commands {
  InferOptions infer;
  TrainOptions train;
  EvalOptions eval;
  ExportOptions exportWeights;
  CalibrateOptions calibrate;
  CalibrateRanksOptions calibrateRanks;
  ReportOptions report;
  /// --dist-timeout: bound on the rendezvous and every collective.
  double distTimeout = 60.0;
};

// The command line yields typed values: each flag's text becomes its enum or
// number here, and each value is checked on its own as CLI11 reads it; the
// commands check only how the values combine. The checks below throw
// snn::runtime::Error with the library's one-line message naming the flag;
// CLI11 lets it through unchanged (its validators catch only
// CLI::ValidationError), so the line is `error: <message>` exactly as when the
// commands checked the values, without CLI11's prefix or the --help hint.

/// Hands `require` the flag's value, converted as the option will convert
/// it. Text that does not convert is left to CLI11's own error.
template <typename T>
CLI::Validator valueCheck(std::function<void(T)> require) {
  return CLI::Validator(
      [require](std::string &text) {
        T value{};
        if (CLI::detail::lexical_cast(text, value))
          require(value);
        return std::string();
      },
      "");
}

/// "FLAG must be a finite number >= 0, got X".
CLI::Option *finiteNonNegative(CLI::Option *option) {
  std::string flag = option->get_name();
  return option->check(valueCheck<double>(
      [flag](double value) { requireFiniteNonNegative(value, flag); }));
}

/// "FLAG must be at least 1"; `zeroMeansUnset`: 0 is the default ("not
/// given") and passes.
CLI::Option *atLeastOne(CLI::Option *option, bool zeroMeansUnset = false) {
  std::string flag = option->get_name();
  return option->check(valueCheck<int64_t>([flag, zeroMeansUnset](int64_t v) {
    requireCount(v, flag, zeroMeansUnset);
  }));
}

/// An option taking the names of `names` (one table parses and formats
/// them) into an enum; the help shows TEXT, the default's name and, without
/// a `description`, the names. An unknown name ends the parse with the
/// table's error line.
template <typename Enum, std::size_t N>
CLI::Option *addNamed(CLI::App *command, const std::string &flag, Enum &value,
                      const EnumNames<Enum, N> &names,
                      std::string description = "") {
  if (description.empty())
    description = snn::schema::joinAlternatives(names.names());
  // CLI11 reads an enum as its underlying integer: the name becomes that.
  CLI::Validator toValue(
      [&names](std::string &text) {
        text = std::to_string(
            static_cast<std::underlying_type_t<Enum>>(names.parse(text)));
        return std::string();
      },
      "");
  return command->add_option(flag, value, description)
      ->type_name("TEXT")
      ->default_str(names.name(value))
      ->transform(toValue);
}

void addDistributedOptions(CLI::App *command, Commands &commands) {
  command
      ->add_option("--dist-timeout", commands.distTimeout,
                   "Multi-rank runs: seconds a rank waits for a peer (the "
                   "rendezvous, every collective) before it fails naming "
                   "the lost rank")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
}

/// A share of ones in [0, 1] up to which an event-driven kernel runs, or
/// `auto`: the crossover measured per layer shape (EventKernelChoice.h).
void addDensityOption(CLI::App *command, const std::string &name, double &value,
                      const std::string &help) {
  command
      ->add_option_function<std::string>(
          name,
          [&value, name](const std::string &text) {
            if (text == "auto") {
              value = kMeasuredDensity;
              return;
            }
            double density = -1.0;
            size_t used = 0;
            try {
              density = std::stod(text, &used);
            } catch (const std::exception &) {
              used = 0;
            }
            if (used != text.size() || !(density >= 0.0 && density <= 1.0))
              throw CLI::ValidationError(name, "'" + text +
                                                   "' is neither a share in [0, 1] nor auto");
            value = density;
          },
          help)
      ->type_name("D|auto");
}

/// The kernel flags (KernelChoice.h) on the commands that run programs.
void addKernelOptions(CLI::App *command, KernelChoice &kernels) {
  command->add_flag("!--no-fusion", kernels.fusion,
                    "Run every node alone, on every step: no spiking blocks (BatchNorm, neuron "
                    "and max pool in one pass) and no one-step conv2d of an input repeated over "
                    "time (the same values). For comparisons and debugging");
  command->add_flag("!--no-spike-bits", kernels.spikeBits,
                    "Training: a conv2d fed spikes keeps them for its backward as float32 "
                    "instead of as bits (1/32 of the memory; the same values). For "
                    "comparisons");
  command->add_flag("!--no-channels-last", kernels.channelsLast,
                    "Run conv2d on NCHW tensors, as eager PyTorch does, instead of handing "
                    "oneDNN channels-last (NHWC) ones, which spares it reordering every "
                    "convolution's input and output (float32 rounding of the convolutions' "
                    "sums differs). For comparisons");
  addDensityOption(command, "--spike-conv-density", kernels.spikeConvDensity,
                   "conv2d layers whose input is spikes with at most this share of ones run "
                   "the event-driven kernels (sums of the active inputs' weight taps; in "
                   "training also the weight gradient over the active inputs; within float32 "
                   "rounding of the dense convolution, not bit-equal); 0 keeps every conv2d "
                   "dense. Default auto: each layer shape's crossover density on this machine, "
                   "timed once on its first spike input and kept in "
                   "$SPIKEMESH_KERNEL_CROSSOVERS or ~/.cache/spikemesh/kernel-crossovers.json; "
                   "every call compares its input's density with it");
  addDensityOption(command, "--spike-linear-density", kernels.spikeLinearDensity,
                   "Linear layers whose input is spikes with at most this share of ones run "
                   "event-driven kernels (sums of the active inputs' weights; within float32 "
                   "rounding of the dense GEMM, not bit-equal); 0 keeps every Linear dense. "
                   "Default auto: each layer shape's crossover density on this machine (the "
                   "forward, and the weight gradient in training), as for "
                   "--spike-conv-density");
}

void addInferCommand(CLI::App &app, InferOptions &options, Commands &commands) {
  CLI::App *infer = app.add_subcommand(
      "infer", "Run an artifact on an input .npy (inference mode); a "
               "partitioned one on its ranks, rank 0 writing the output");
  infer->add_option("DIR", options.artifactDir, "Artifact directory")
      ->required();
  infer
      ->add_option("-i,--input", options.inputPath,
                   "Input .npy, float32: [T, N, ...], or [N, ...] with "
                   "--repeat-time or for a model that repeats its input over T")
      ->required();
  infer
      ->add_option("-o,--output", options.outputPath,
                   "Output .npy to write (float32)")
      ->required();
  infer
      ->add_option("--repeat-time", options.repeatTime,
                   "Repeat a static [N, ...] input T times (direct encoding)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  infer
      ->add_option("--threads", options.threads,
                   "Intra-op threads (default: hardware concurrency)")
      ->check(CLI::Range(1, 4096));
  infer
      ->add_option("--batch-size", options.batchSize,
                   "Stream the input N samples at a time: only one batch of the input and "
                   "of the output is in memory; prints samples/s to stderr (default: the "
                   "whole input at once)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
  infer->add_flag("-v,--verbose", options.verbose,
                  "Print a one-line timing summary to stderr");
  addKernelOptions(infer, options.kernels);
  addDistributedOptions(infer, commands);
}

void addDataOptions(CLI::App *command, DataOptions &data, int64_t &repeatTime) {
  command->add_option("--data", data.data,
                      "fashion-mnist or fashion-mnist:DIR (IDX gzip files; "
                      "default DIR /usr/share/datasets/fashion-mnist)");
  command->add_option("--data-npy", data.dataNpy,
                      "X.npy,Y.npy: X float32 [S, ...] or [S, T, ...], Y "
                      "int64/int32 class indices [S]");
  atLeastOne(command->add_option("--repeat-time", repeatTime,
                                 "T: repeat static samples T times (direct "
                                 "encoding; default: the artifact's T)"),
             true);
}

void addTrainOptimizerOptions(CLI::App *train, TrainOptions &o) {
  finiteNonNegative(train->add_option("--lr", o.lr, "Learning rate"))
      ->required();
  addNamed(train, "--optimizer", o.optimizer, kOptimizerKindNames);
  finiteNonNegative(train->add_option("--momentum", o.momentum, "SGD momentum"))
      ->capture_default_str();
  finiteNonNegative(train->add_option_function<double>(
      "--weight-decay", [&o](const double &value) { o.weightDecay = value; },
      "Weight decay (default 0; 0.01 for adamw)"));
  addNamed(train, "--schedule", o.schedule, kScheduleKindNames);
  atLeastOne(train->add_option("--step-size", o.stepSize,
                               "step schedule: steps between LR decays"),
             true);
  finiteNonNegative(
      train->add_option("--gamma", o.gamma, "step schedule: decay factor"))
      ->capture_default_str();
  finiteNonNegative(
      train->add_option("--eta-min", o.etaMin, "cosine schedule: final LR"))
      ->capture_default_str();
  addNamed(train, "--loss", o.loss, kLossKindNames,
           "mse (rate vs one-hot) or ce");
}

void addTrainRunOptions(CLI::App *train, TrainOptions &o) {
  // 0 = not given; validateTrainOptions wants exactly one of the two.
  auto notNegative = valueCheck<int64_t>([](int64_t value) {
    if (value < 0)
      throw Error("--epochs and --steps must be positive");
  });
  train->add_option("--epochs", o.epochs, "Epochs to train")
      ->check(notNegative);
  train->add_option("--steps", o.steps, "Optimizer steps to train")
      ->check(notNegative);
  atLeastOne(train->add_option("--batch-size", o.batchSize, "Batch size N"))
      ->required();
  train->add_option("--seed", o.seed, "Seeds the data order and Dropout")
      ->capture_default_str();
  train->add_flag("!--no-shuffle", o.shuffle, "Keep the file order");
  train->add_flag("--drop-last,!--keep-last", o.dropLast,
                  "Drop (default) or keep a final short batch");
  train->add_flag("--eval-every-epoch,!--no-eval", o.evalEveryEpoch,
                  "Evaluate on the eval split after every epoch (default) "
                  "or never");
  train
      ->add_option("--threads", o.threads,
                   "Intra-op threads (default: hardware concurrency)")
      ->check(CLI::Range(1, 4096));
  addKernelOptions(train, o.kernels);
  addNamed(train, "--progress", o.progress, kProgressSettingNames,
           "auto (bar on a terminal, lines otherwise), bar, lines or none");
}

void addTrainOutputOptions(CLI::App *train, TrainOptions &o) {
  train->add_option("--log", o.logPath, "JSON lines: one per step and epoch");
  train->add_option("--tensorboard", o.tensorboardDir,
                    "Rank 0 also writes the log's step and epoch numbers as TensorBoard "
                    "scalars into an event file in DIR (created if missing)");
  train->add_option("--checkpoint", o.checkpointDir,
                    "Checkpoint directory (saved at the end and every "
                    "--checkpoint-every steps)");
  atLeastOne(train->add_option("--checkpoint-every", o.checkpointEvery,
                               "Save a checkpoint every N steps"),
             true);
  atLeastOne(train->add_option("--keep-checkpoints", o.keepCheckpoints,
                               "Checkpoints to keep"))
      ->capture_default_str();
  train->add_flag("--resume", o.resume,
                  "Continue from the latest checkpoint in --checkpoint");
  train->add_flag("--checkpoint-sync", o.checkpointSync,
                  "Write each checkpoint before training goes on (default: "
                  "in the background while the next steps run)");
  addNamed(train, "--checkpoint-errors", o.checkpointErrors,
           kCheckpointErrorsNames,
           "stop (a failed save ends the run with an error) or continue "
           "(warn and try again at the next save)");
  train->add_flag("--skip-nonfinite-steps", o.skipNonFiniteSteps,
                  "A step whose loss is NaN or infinite changes nothing and "
                  "training goes on (default: the run stops)");
  train->add_flag("--recompute", o.recompute,
                  "Keep only each segment's input (spikes as bits, counts as bytes) and "
                  "recompute the rest in the backward: less memory for deep and residual "
                  "networks, a second forward's time; gradients unchanged (modes none, dp, "
                  "zero, tp)");
  train->add_flag("--no-firing-rates", o.noFiringRates,
                  "Log no per-layer firing rates (for overhead comparisons)");
  train->add_flag("--no-step-arena", o.noStepArena,
                  "Serve a step's tensors of 1 MiB and more from the heap instead of one "
                  "mapping laid out from a recorded step (the heap's high-water mark then "
                  "sits above the step's live peak). For comparisons");
  atLeastOne(
      train->add_option("--stop-after", o.stopAfter,
                        "Stop this invocation after N steps (checkpointed; "
                        "continue with --resume)"),
      true);
  train->add_option("--save-params", o.saveParamsDir,
                    "Write NAME.npy per parameter and buffer into DIR");
  train->add_option("--export-onnx", o.exportOnnxPath,
                    "Write the program ONNX with the trained weights");
  train->add_option("--trace", o.tracePath,
                    "Pipelines: rank 0 writes every rank's forward, backward, "
                    "weight-gradient, send and wait spans as one Chrome trace "
                    "JSON");
  train->add_flag("--comm-stats", o.commStats,
                  "Print each step's collectives (a partitioned program's "
                  "all_reduce / all_gather: calls and bytes per mesh axis; a "
                  "pipeline's: rank 0's stages') as a table on stdout");
}

void addTrainCommand(CLI::App &app, Commands &commands) {
  CLI::App *train = app.add_subcommand(
      "train", "Train an artifact (BPTT, surrogate gradients); dp, zero, "
               "fsdp, tp, fsdp_tp and pp artifacts on their ranks with --nproc "
               "or torchrun");
  TrainOptions &o = commands.train;
  train->add_option("DIR", o.artifactDir, "Artifact directory")->required();
  addDataOptions(train, o.data, o.repeatTime);
  train->add_option("--eval-data-npy", o.data.evalDataNpy,
                    "X.npy,Y.npy: the eval split for --data-npy");
  addTrainRunOptions(train, o);
  addTrainOptimizerOptions(train, o);
  addTrainOutputOptions(train, o);
  train->add_option("--freeze", o.freeze,
                    "NAME...: parameters (state_dict names) that training must "
                    "not change, as PyTorch's requires_grad=False; those "
                    "exported with requires_grad=False are frozen already");
  train->add_flag("!--no-sync-bn", o.syncBatchNorm,
                  "Data parallelism: BatchNorm with each rank's own batch "
                  "statistics instead of the global batch's");
  addDistributedOptions(train, commands);
}

void addEvalCommand(CLI::App &app, EvalOptions &o, Commands &commands) {
  CLI::App *eval = app.add_subcommand(
      "eval", "Loss and accuracy of an artifact on a dataset (eval mode)");
  eval->add_option("DIR", o.artifactDir, "Artifact directory")->required();
  addDataOptions(eval, o.data, o.repeatTime);
  atLeastOne(eval->add_option("--batch-size", o.batchSize, "Batch size"))
      ->capture_default_str();
  eval->add_option("--params", o.paramsDir,
                   "Weights from a --save-params directory");
  eval->add_option("--checkpoint", o.checkpointDir,
                   "Weights from the latest checkpoint in DIR");
  addNamed(eval, "--loss", o.loss, kLossKindNames);
  eval->add_option("--log", o.logPath,
                   "Write the result as a JSON line to FILE");
  eval->add_option("--threads", o.threads,
                   "Intra-op threads (default: hardware concurrency)")
      ->check(CLI::Range(1, 4096));
  addKernelOptions(eval, o.kernels);
  addDistributedOptions(eval, commands);
}

void addExportCommand(CLI::App &app, ExportOptions &o) {
  CLI::App *command = app.add_subcommand(
      "export", "Write trained weights (a checkpoint, also a sharded one, or "
                "--save-params) into one ONNX model, or the model as a NIR graph");
  command->add_option("DIR", o.artifactDir, "Artifact directory")->required();
  command->add_option("--checkpoint", o.checkpointDir,
                      "Weights of the latest checkpoint in DIR");
  command->add_option("--params", o.paramsDir,
                      "Weights from a --save-params directory");
  command->add_option("-o,--output", o.outputPath, "The ONNX (or NIR) file to write")->required();
  command
      ->add_option("--format", o.format,
                   "onnx: the program with its trained weights (default); nir: the "
                   "model as a NIR graph (docs/nir.md)")
      ->check(CLI::IsMember({"onnx", "nir"}));
  command
      ->add_option("--nir-dt", o.nirDt,
                   "--format nir: the time step the neurons' equations are written for "
                   "(default 1; snn-compile --nir-dt must match to re-import)")
      ->check(CLI::PositiveNumber);
}

void addCalibrateCommand(CLI::App &app, CalibrateOptions &o) {
  CLI::App *command = app.add_subcommand(
      "calibrate", "Measure this machine's kernels and collectives and write a "
                   "device profile, which snn-compile and spikemesh.plan then plan with "
                   "(under a minute; --quick: seconds)");
  command->add_option("--out", o.outPath,
                      "The device profile to write (JSON; default: this user's, "
                      "$SPIKEMESH_DEVICE_PROFILE or ~/.cache/spikemesh/device-profile.json, "
                      "which plans read when given no profile)");
  atLeastOne(command->add_option("--threads", o.threads,
                                 "Intra-op threads of the measurements and of "
                                 "each rank (recorded in the profile)"))
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  command
      ->add_option("--ranks", o.ranks,
                   "Group sizes of the communication curves, comma-separated "
                   "(sizes above the CPU count are skipped)")
      ->delimiter(',')
      ->check(valueCheck<int64_t>(requireCalibrateGroupSize))
      ->default_str("2,4");
  command->add_flag("--quick", o.quick,
                    "A few small sizes and fewer repeats (seconds; for tests)");
  command->add_option("--model", o.models,
                      "Also time the whole training step of this compiled model (an "
                      "artifact of one whole-model program; repeatable), which the planner "
                      "scales its op curves to; also as data-parallel replicas on each "
                      "--ranks group (the ranks' waits for each other)");
  command
      ->add_option("--model-batches", o.modelBatches,
                   "Samples per step of the --model measurements, comma-separated and "
                   "ascending")
      ->delimiter(',')
      ->default_str("1,2,4,8,16,32,64");
  addNamed(command, "--progress", o.progress, kProgressSettingNames,
           "auto (bar on a terminal, lines otherwise), bar, lines or none");
  command
      ->add_option("--dist-timeout", o.distTimeout,
                   "Seconds a rank waits for a peer before it fails naming it")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
}

void addReportCommand(CLI::App &app, ReportOptions &o) {
  CLI::App *command = app.add_subcommand(
      "report", "Write one self-contained HTML page of a training run from its --log "
                "(and the rank logs beside it): loss, accuracy, firing rates, step times "
                "per rank, the plan's prediction; the pipeline schedule with --trace");
  command->add_option("LOG", o.logPath, "The run's --log file (JSON lines)")->required();
  command->add_option("--trace", o.tracePath,
                      "The run's pipeline trace (snn-run train --trace): draw its schedule");
  command->add_option("-o,--output", o.outputPath, "The HTML page to write")->required();
}

/// The ranks of `calibrate` run this; hidden from --help (empty group).
void addCalibrateRanksCommand(CLI::App &app, CalibrateRanksOptions &o) {
  CLI::App *command = app.add_subcommand(
      "calibrate-ranks", "One rank of calibrate's communication measurement");
  command->group("");
  command->add_option("--result", o.resultPath, "Rank 0's results file")->required();
  command->add_option("--threads", o.threads)->check(CLI::Range(1, 4096));
  command->add_flag("--quick", o.quick);
  command->add_flag("--send-recv", o.sendRecv);
  command->add_option("--model", o.models);
  command->add_option("--model-batches", o.modelBatches)->delimiter(',');
  addNamed(command, "--progress", o.progress, kProgressSettingNames);
  command->add_option("--dist-timeout", o.distTimeout)->check(CLI::Range(0.001, 86400.0));
}

/// calibrate and calibrate-ranks start or are ranks themselves; the
/// launcher flags and torchrun's variables mean something else there.
int runCalibration(const CLI::App &app, Commands &commands,
                   const snn::dist::LauncherArguments &arguments) {
  if (app.got_subcommand("calibrate-ranks"))
    return runCalibrateRanks(commands.calibrateRanks);
  checkCalibrateLaunch(arguments.nproc);
  return runCalibrate(commands.calibrate);
}

void dispatch(const CLI::App &app, Commands &commands) {
  if (app.got_subcommand("export"))
    return runExport(commands.exportWeights);
  if (app.got_subcommand("infer"))
    return runInfer(commands.infer);
  if (app.got_subcommand("train"))
    return runTrain(commands.train);
  runEval(commands.eval);
}

/// What the launcher checks of the parsed command.
LaunchRequest launchRequest(const CLI::App &app, const Commands &commands) {
  if (app.got_subcommand("infer"))
    return {"infer", commands.infer.artifactDir};
  if (app.got_subcommand("train"))
    return {"train", commands.train.artifactDir, &commands.train};
  if (app.got_subcommand("export"))
    return {"export", commands.exportWeights.artifactDir};
  return {"eval", commands.eval.artifactDir};
}

/// A rank's commands join its run and, without --threads, share this host's
/// cores with the other local ranks.
void joinRun(Commands &commands, const DistributedRun &run, int threads) {
  commands.train.distributed = &run;
  commands.eval.distributed = &run;
  commands.infer.distributed = &run;
  for (int *t : {&commands.train.threads, &commands.eval.threads,
                 &commands.infer.threads})
    if (*t == 0)
      *t = threads;
}

int runTool(int argc, char **argv);

/// A rank forked from the launcher (LaunchRequest::rankMain): this program on its arguments.
int forkedRankMain(const std::vector<std::string> &argv) {
  std::vector<char *> args;
  for (const std::string &argument : argv)
    args.push_back(const_cast<char *>(argument.c_str()));
  args.push_back(nullptr);
  exitFlushed(runReportingErrors([&] { return runTool(int(argv.size()), args.data()); }));
}

int runTool(int argc, char **argv) {
  snn::dist::LauncherArguments arguments =
      snn::dist::extractLauncherArguments(argc, argv);
  CLI::App app("Runs and trains SpikeMesh artifacts with LibTorch.", "snn-run");
  app.set_version_flag("--version", "snn-run " SNN_VERSION);
  app.footer("Many ranks: snn-run --nproc N [--master-port P] [--master-addr A] "
             "[--max-restarts K] CMD ... starts N local ranks; torchrun --nproc_per_node N --no_python snn-run "
             "CMD ... too (docs/snn-run.md).");
  app.require_subcommand(1);
  Commands commands;
  addInferCommand(app, commands.infer, commands);
  addTrainCommand(app, commands);
  addEvalCommand(app, commands.eval, commands);
  addExportCommand(app, commands.exportWeights);
  addCalibrateCommand(app, commands.calibrate);
  addCalibrateRanksCommand(app, commands.calibrateRanks);
  addReportCommand(app, commands.report);
  commands.calibrate.createdBy = "snn-run calibrate " SNN_VERSION;
  std::vector<const char *> args;
  for (const std::string &argument : arguments.argv)
    args.push_back(argument.c_str());
  try {
    app.parse(int(args.size()), args.data());
  } catch (const CLI::ParseError &e) {
    // --help and --version arrive as "errors" with exit code 0.
    if (e.get_exit_code() == 0)
      return app.exit(e);
    throw Error(std::string(e.what()) + " (run 'snn-run --help')");
  }
  if (app.got_subcommand("calibrate") || app.got_subcommand("calibrate-ranks"))
    return runCalibration(app, commands, arguments);
  if (app.got_subcommand("report")) {
    if (arguments.nproc > 0)
      throw Error("--nproc starts ranks of train, eval and infer; 'snn-run report' reads "
                  "logs in one process");
    runReport(commands.report);
    return 0;
  }
  if (arguments.nproc > 0) {
    LaunchRequest request = launchRequest(app, commands);
    request.rankMain = forkedRankMain;
    return launchRanks(request, arguments);
  }
  if (snn::dist::torchrunEnvironmentPresent())
    return runRank(commands.distTimeout, [&](const DistributedRun &run, int threads) {
      joinRun(commands, run, threads);
      dispatch(app, commands);
    });
  dispatch(app, commands);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  snn::runtime::keepLargeAllocationsOnTheHeap();
  exitFlushed(runReportingErrors([&] { return runTool(argc, argv); }));
}
