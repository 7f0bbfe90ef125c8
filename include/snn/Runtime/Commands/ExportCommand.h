//===- ExportCommand.h - The `snn-run export` command -----------*- C++ -*-===//
//
// Writes trained weights -- a checkpoint (whole, or the shards of a zero or
// fsdp run, merged) or a --save-params directory -- into one ONNX model, as
// `train --export-onnx` does at the end of a run.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_COMMANDS_EXPORTCOMMAND_H
#define SNN_RUNTIME_COMMANDS_EXPORTCOMMAND_H

#include <string>

namespace snn::runtime {

struct ExportOptions {
  std::string artifactDir;
  /// Exactly one of the two: the latest checkpoint of a --checkpoint
  /// directory, or a --save-params directory.
  std::string checkpointDir;
  std::string paramsDir;
  std::string outputPath;
  /// "onnx" (the program with its trained weights) or "nir" (docs/nir.md).
  std::string format = "onnx";
  /// NIR: the time step its neurons' equations are written for.
  double nirDt = 1.0;
};

void runExport(const ExportOptions &options);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_EXPORTCOMMAND_H
