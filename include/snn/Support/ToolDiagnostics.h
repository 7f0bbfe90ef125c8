#ifndef SNN_SUPPORT_TOOLDIAGNOSTICS_H
#define SNN_SUPPORT_TOOLDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

namespace snn {

/// Prints every diagnostic as one line, `error: <file>: <message>`, as the user-facing tools
/// promise. The node an error is about is named in the message by the pass that reports it.
class ToolDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  explicit ToolDiagnosticHandler(mlir::MLIRContext *context)
      : mlir::ScopedDiagnosticHandler(context, [](mlir::Diagnostic &diag) {
          llvm::raw_ostream &os = llvm::errs();
          switch (diag.getSeverity()) {
          case mlir::DiagnosticSeverity::Error: os << "error: "; break;
          case mlir::DiagnosticSeverity::Warning: os << "warning: "; break;
          case mlir::DiagnosticSeverity::Note: os << "note: "; break;
          case mlir::DiagnosticSeverity::Remark: os << "remark: "; break;
          }
          if (std::string file = fileOf(diag.getLocation()); !file.empty())
            os << file << ": ";
          std::string message = diag.str();
          for (char &c : message)
            if (c == '\n')
              c = ' ';
          os << message << "\n";
          return mlir::success();
        }) {}

private:
  static std::string fileOf(mlir::Location loc) {
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
};

} // namespace snn

#endif
