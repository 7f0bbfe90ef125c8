//===- ToolCommandLine.cpp - One error line for a bad command line --------===//
//
// llvm::cl reports a bad value ("for the --mode option: ...") through the
// option itself, straight to stderr, and only the structural errors through
// the stream ParseCommandLineOptions is given. Both are collected here (stderr
// is redirected to a temporary file while parsing) so the user sees one line.
//
//===----------------------------------------------------------------------===//
#include "snn/Support/ToolCommandLine.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>
#include <unistd.h>

namespace snn {

namespace {

/// Runs `parse` with file descriptor 2 pointing at a temporary file; returns what was written.
template <typename Parse> std::string captureStderr(Parse parse) {
  llvm::errs().flush();
  std::FILE *capture = std::tmpfile();
  int saved = capture ? ::dup(2) : -1;
  if (saved < 0 || ::dup2(::fileno(capture), 2) < 0) {
    parse();
    return "";
  }
  parse();
  llvm::errs().flush();
  ::dup2(saved, 2);
  ::close(saved);
  std::string text;
  std::rewind(capture);
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), capture))
    text.append(buffer, n);
  std::fclose(capture);
  return text;
}

llvm::StringRef firstLine(llvm::StringRef text) {
  text = text.trim();
  return text.take_until([](char c) { return c == '\n'; });
}

} // namespace

bool parseToolCommandLine(int argc, char **argv, llvm::StringRef overview,
                          llvm::ArrayRef<const llvm::cl::OptionCategory *> categories) {
  if (!categories.empty())
    llvm::cl::HideUnrelatedOptions(categories);
  std::string message;
  llvm::raw_string_ostream stream(message);
  bool ok = false;
  std::string printed = captureStderr([&] {
    ok = llvm::cl::ParseCommandLineOptions(argc, argv, overview, &stream);
  });
  if (ok) {
    llvm::errs() << printed; // warnings, if any, stay visible
    return true;
  }
  llvm::StringRef text = firstLine(printed);
  if (text.empty())
    text = firstLine(message);
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
