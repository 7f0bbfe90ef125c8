#ifndef SNN_SUPPORT_TOOLDIAGNOSTICS_H
#define SNN_SUPPORT_TOOLDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace snn {

/// The first file a location names (empty if none).
inline std::string fileOfLocation(mlir::Location loc) {
  std::string file;
  loc->walk([&](mlir::Location inner) {
    if (auto fileLoc = llvm::dyn_cast<mlir::FileLineColLoc>(inner)) {
      file = fileLoc.getFilename().str();
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return file;
}

/// A diagnostic as the one line the user-facing tools promise, `error: <file>: <message>`
/// (without a newline). The node an error is about is named in the message by the pass that
/// reports it.
inline std::string formatToolDiagnostic(mlir::Diagnostic &diag) {
  std::string line;
  switch (diag.getSeverity()) {
  case mlir::DiagnosticSeverity::Error: line = "error: "; break;
  case mlir::DiagnosticSeverity::Warning: line = "warning: "; break;
  case mlir::DiagnosticSeverity::Note: line = "note: "; break;
  case mlir::DiagnosticSeverity::Remark: line = "remark: "; break;
  }
  if (std::string file = fileOfLocation(diag.getLocation()); !file.empty())
    line += file + ": ";
  std::string message = diag.str();
  for (char &c : message)
    if (c == '\n')
      c = ' ';
  return line + message;
}

/// Prints every diagnostic on stderr as formatToolDiagnostic's line.
class ToolDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  explicit ToolDiagnosticHandler(mlir::MLIRContext *context)
      : mlir::ScopedDiagnosticHandler(context, [](mlir::Diagnostic &diag) {
          llvm::errs() << formatToolDiagnostic(diag) << "\n";
          return mlir::success();
        }) {}
};

} // namespace snn

#endif
