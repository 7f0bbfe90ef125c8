#ifndef SNN_SUPPORT_TOOLCOMMANDLINE_H
#define SNN_SUPPORT_TOOLCOMMANDLINE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace snn {

/// Parses LLVM command-line options; a bad command line prints one `error: ...` line (LLVM's
/// own message, without the tool-name prefix) and returns false. `categories`: the tool's own
/// option categories; --help lists only those (LLVM's backend options stay in --help-hidden).
bool parseToolCommandLine(int argc, char **argv, llvm::StringRef overview,
                          llvm::ArrayRef<const llvm::cl::OptionCategory *> categories = {});

} // namespace snn

#endif
