//===- SNNAttributeParameters.cpp - Custom parameter spellings ------------===//
#include "snn/Dialect/SNN/IR/SNNAttributeParameters.h"

using namespace mlir;

namespace snn::detail {

FailureOr<std::optional<schema::PipelineSchedule>> parseOptionalSchedule(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("none")))
    return std::optional<schema::PipelineSchedule>();
  FailureOr<schema::PipelineSchedule> schedule =
      parseSchemaEnum<schema::PipelineSchedule>(parser);
  if (failed(schedule))
    return failure();
  return std::optional<schema::PipelineSchedule>(*schedule);
}

void printOptionalSchedule(AsmPrinter &printer,
                           std::optional<schema::PipelineSchedule> schedule) {
  if (!schedule)
    printer << "none";
  else
    printSchemaEnum(printer, *schedule);
}

FailureOr<bool> parseBool(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(), "expected true or false");
}

FailureOr<llvm::APFloat> parseDouble(AsmParser &parser) {
  double value = 0;
  if (parser.parseFloat(value))
    return failure();
  return llvm::APFloat(value);
}

FailureOr<llvm::SmallVector<int64_t>> parseIntList(AsmParser &parser) {
  llvm::SmallVector<int64_t> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() -> ParseResult {
        return parser.parseInteger(values.emplace_back());
      }))
    return failure();
  return values;
}

void printIntList(AsmPrinter &printer, llvm::ArrayRef<int64_t> values) {
  printer << '[';
  llvm::interleaveComma(values, printer);
  printer << ']';
}

} // namespace snn::detail
