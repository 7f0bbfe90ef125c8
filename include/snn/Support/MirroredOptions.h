//===- MirroredOptions.h - A pass's options as a tool's flags ----*- C++ -*-===//
//
// snn-compile offers the planning passes' options as its own top-level flags
// without declaring them again: each mirror takes its name, help and value
// kind from the pass option, --help prints the pass option's own help line
// (enum spellings included), and every occurrence on the command line is
// handed to the pass option itself, which parses and checks it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SUPPORT_MIRROREDOPTIONS_H
#define SNN_SUPPORT_MIRROREDOPTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"

#include <memory>
#include <vector>

namespace snn {

/// The options of one llvm::cl sub-command (a pass's options live in one), by name.
using CommandLineOptions = decltype(llvm::cl::SubCommand::OptionsMap);

class MirroredOptions {
public:
  explicit MirroredOptions(llvm::cl::OptionCategory &category);
  ~MirroredOptions();

  /// Mirrors every option of `options` but those named in `skip`. A name mirrored already
  /// forwards to this option as well (a flag two passes share is given once).
  void add(const snn::CommandLineOptions &options,
           llvm::ArrayRef<llvm::StringRef> skip = {});

  /// Whether the command line gave any mirrored flag.
  bool anyGiven() const;

private:
  class Mirror;
  llvm::cl::OptionCategory &category;
  std::vector<std::unique_ptr<Mirror>> mirrors;
};

} // namespace snn

#endif // SNN_SUPPORT_MIRROREDOPTIONS_H
