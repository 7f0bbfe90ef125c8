#ifndef SNN_SUPPORT_TOOLCOMMANDLINE_H
#define SNN_SUPPORT_TOOLCOMMANDLINE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace snn {

/// Parses LLVM command-line options; a bad command line prints one `error: ...` line (LLVM's
/// own message, without the tool-name prefix) and returns false. `categories`: the tool's own
/// option categories; --help lists only those (LLVM's backend options stay in --help-hidden).
inline bool parseToolCommandLine(int argc, char **argv, llvm::StringRef overview,
                                 llvm::ArrayRef<const llvm::cl::OptionCategory *> categories = {}) {
  if (!categories.empty())
    llvm::cl::HideUnrelatedOptions(categories);
  std::string message;
  llvm::raw_string_ostream stream(message);
  if (llvm::cl::ParseCommandLineOptions(argc, argv, overview, &stream))
    return true;
  llvm::StringRef text = llvm::StringRef(message).trim();
  text = text.take_until([](char c) { return c == '\n'; });
  llvm::StringRef tool = llvm::StringRef(argv[0]).rsplit('/').second;
  if (tool.empty())
    tool = argv[0];
  if (text.starts_with(tool) && text.drop_front(tool.size()).starts_with(": "))
    text = text.drop_front(tool.size() + 2);
  if (text.empty())
    text = "invalid command line";
  llvm::errs() << "error: " << text << " (see --help)\n";
  return false;
}

} // namespace snn

#endif
