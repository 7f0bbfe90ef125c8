//===- snn-run.cpp - Run a SpikeMesh artifact -----------------------------===//
//
// Thin driver: CLI11 parses the command line, the SNNRuntime library does the
// work, and every failure becomes one `error: ...` line with exit code 1.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Error.h"
#include "snn/Runtime/Infer.h"

#include <CLI/CLI.hpp>

using namespace snn::runtime;

static void addInferCommand(CLI::App &app, InferOptions &options) {
  CLI::App *infer = app.add_subcommand(
      "infer", "Run a single-rank artifact on an input .npy (inference mode)");
  infer->add_option("DIR", options.artifactDir, "Artifact directory")
      ->required();
  infer->add_option("-i,--input", options.inputPath,
                    "Input .npy, float32: [T, N, ...], or [N, ...] with "
                    "--repeat-time")
      ->required();
  infer->add_option("-o,--output", options.outputPath,
                    "Output .npy to write (float32)")
      ->required();
  infer->add_option("--repeat-time", options.repeatTime,
                    "Repeat a static [N, ...] input T times (direct encoding)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  infer->add_option("--threads", options.threads,
                    "Intra-op threads (default: hardware concurrency)")
      ->check(CLI::Range(1, 4096));
  infer->add_flag("-v,--verbose", options.verbose,
                  "Print a one-line timing summary to stderr");
}

static int runTool(int argc, char **argv) {
  CLI::App app("Runs a SpikeMesh artifact with LibTorch.", "snn-run");
  app.set_version_flag("--version", "snn-run " SNN_VERSION);
  app.require_subcommand(1);
  InferOptions options;
  addInferCommand(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // --help and --version arrive as "errors" with exit code 0.
    if (e.get_exit_code() == 0)
      return app.exit(e);
    throw Error(std::string(e.what()) + " (run 'snn-run --help')");
  }
  runInfer(options);
  return 0;
}

int main(int argc, char **argv) {
  return runReportingErrors([&] { return runTool(argc, argv); });
}
