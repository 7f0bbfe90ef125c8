//===- Compile.h - The compile pipeline as a library call -------*- C++ -*-===//
//
// model.onnx or model.nir -> import -> legalize [-> analyze -> plan -> partition or split into
// stages]
// -> artifact directory, in the calling process, with every diagnostic returned as a line
// instead of printed. The Python API calls it; the header names no MLIR type, so a caller
// built with exceptions and LibTorch (the Python extension) includes it as plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DRIVER_COMPILE_H
#define SNN_DRIVER_COMPILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::driver {

struct CompileRequest {
  /// The model to compile: an ONNX model (the profile of docs/onnx-profile.md) or a NIR
  /// graph (docs/nir.md), told apart by content.
  std::string modelPath;
  /// The artifact directory to write; empty: nothing is written (an explanation only).
  std::string artifactDir;
  /// Runs --snn-analyze and --snn-plan after legalization, with these options: the passes'
  /// own option text (`roots=features experimental-conv-tp=true`, `topology=dp=2
  /// batch-size=8 mode=dp`), as `snn-opt --snn-plan="..."` takes it.
  bool plan = false;
  std::string analyzeOptions;
  std::string planOptions;
  /// A NIR model's time step (none: the file's own, where it has one) and number of time
  /// steps (0: left open); see NIRImportOptions.
  std::optional<double> nirDt;
  int64_t nirSteps = 0;
};

struct CompileResult {
  bool succeeded = false;
  /// Every diagnostic, one line each (`error: model.onnx: ...`), in the order reported.
  std::vector<std::string> diagnostics;
  /// With `plan`: the analysis, the plan and its rationale, as `snn-compile --explain-json`
  /// writes them and as `--explain` prints them.
  std::string explanationJSON;
  std::string explanationText;
};

/// Compiles `request.modelPath`; never throws and never prints.
CompileResult compileModel(const CompileRequest &request);

} // namespace snn::driver

#endif // SNN_DRIVER_COMPILE_H
