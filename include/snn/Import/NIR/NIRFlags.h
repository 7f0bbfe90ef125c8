//===- NIRFlags.h - The command-line flags of the NIR import ----*- C++ -*-===//
//
// --nir-dt and --nir-steps, as snn-compile and snn-translate offer them.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_IMPORT_NIR_NIRFLAGS_H
#define SNN_IMPORT_NIR_NIRFLAGS_H

#include "snn/Import/NIR/NIRImporter.h"

#include "llvm/Support/CommandLine.h"

namespace snn {

struct NIRFlags {
  llvm::cl::opt<double> dt;
  llvm::cl::opt<int64_t> steps;

  explicit NIRFlags(llvm::cl::OptionCategory &category)
      : dt("nir-dt",
           llvm::cl::desc("NIR input: the time step its continuous-time equations are stepped "
                          "by, in the unit of its time constants (seconds)"),
           llvm::cl::value_desc("SECONDS"), llvm::cl::cat(category)),
        steps("nir-steps",
              llvm::cl::desc("NIR input: the number of time steps T of the model's inputs "
                             "(default: left open, set by the data)"),
              llvm::cl::value_desc("T"), llvm::cl::init(0), llvm::cl::cat(category)) {}

  /// The options as given; false with a one-line message for a bad value.
  bool read(NIRImportOptions &options, std::string &error) const {
    if (steps.getNumOccurrences() && steps < 1) {
      error = "--nir-steps must be >= 1, got " + std::to_string(steps);
      return false;
    }
    options.steps = steps;
    if (dt.getNumOccurrences())
      options.dt = dt;
    return true;
  }
};

} // namespace snn

#endif // SNN_IMPORT_NIR_NIRFLAGS_H
