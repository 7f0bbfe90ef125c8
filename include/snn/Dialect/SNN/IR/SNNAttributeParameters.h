//===- SNNAttributeParameters.h - Parsing and printing parameters -*- C++ -*-===//
//
// The custom parameter spellings of SNNAttributes.td. Schema enums print with
// the names of snn/Schema/Enums.h (quoted when not a bare identifier, as 1f1b).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_IR_SNNATTRIBUTEPARAMETERS_H
#define SNN_DIALECT_SNN_IR_SNNATTRIBUTEPARAMETERS_H

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallVector.h"

#include "snn/Schema/Enums.h"

#include <optional>

namespace snn::detail {

template <typename E> mlir::FailureOr<E> parseSchemaEnum(mlir::AsmParser &parser) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  std::string text;
  if (parser.parseKeywordOrString(&text))
    return mlir::failure();
  std::optional<E> value = schema::parseEnum<E>(text);
  if (!value)
    return parser.emitError(loc, schema::unknownSpellingMessage<E>(text));
  return *value;
}

template <typename E> void printSchemaEnum(mlir::AsmPrinter &printer, E value) {
  printer.printKeywordOrString(schema::nameOf(value));
}

mlir::FailureOr<std::optional<schema::PipelineSchedule>>
parseOptionalSchedule(mlir::AsmParser &parser);
void printOptionalSchedule(mlir::AsmPrinter &printer,
                           std::optional<schema::PipelineSchedule> schedule);

mlir::FailureOr<bool> parseBool(mlir::AsmParser &parser);
mlir::FailureOr<llvm::APFloat> parseDouble(mlir::AsmParser &parser);
mlir::FailureOr<llvm::SmallVector<int64_t>> parseIntList(mlir::AsmParser &parser);
void printIntList(mlir::AsmPrinter &printer, llvm::ArrayRef<int64_t> values);

} // namespace snn::detail

#endif // SNN_DIALECT_SNN_IR_SNNATTRIBUTEPARAMETERS_H
