//===- SchemaEnumParser.h - Schema enums as command-line values --*- C++ -*-===//
//
// Lets a pass option (and so an snn-opt pass argument and an snn-compile flag)
// hold a schema enum directly: the value is parsed and printed with the spelling
// table of snn/Schema/Enums.h, --help shows every accepted spelling
// (`--mode=<auto|none|dp|...>`), and an unknown spelling gets the schema's one
// message ("unknown mode 'ddp' (expected ...)").
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SUPPORT_SCHEMAENUMPARSER_H
#define SNN_SUPPORT_SCHEMAENUMPARSER_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include "snn/Schema/Enums.h"

namespace snn {

template <typename E> class SchemaEnumParser : public llvm::cl::basic_parser<E> {
public:
  explicit SchemaEnumParser(llvm::cl::Option &option) : llvm::cl::basic_parser<E>(option) {
    schema::SpellingTable<E> table = schema::spellings<E>();
    for (const schema::Spelling<E> *s = table.begin; s != table.end; ++s)
      if (!s->alias)
        valueName += (valueName.empty() ? "" : "|") + std::string(s->name);
  }

  /// Returns true on error, as every llvm::cl parser does.
  bool parse(llvm::cl::Option &option, llvm::StringRef, llvm::StringRef arg, E &value) {
    if (std::optional<E> parsed = schema::parseEnum<E>(arg)) {
      value = *parsed;
      return false;
    }
    return option.error(schema::unknownSpellingMessage<E>(arg));
  }

  llvm::StringRef getValueName() const override { return valueName; }

  void printOptionDiff(const llvm::cl::Option &option, E value,
                       const llvm::cl::OptionValue<E> &, size_t globalWidth) const {
    this->printOptionName(option, globalWidth);
    llvm::outs() << "= " << schema::nameOf(value) << "\n";
  }

  /// How MLIR prints the option back into a pass pipeline.
  static void print(llvm::raw_ostream &os, E value) { os << schema::nameOf(value); }

private:
  std::string valueName;
};

} // namespace snn

/// The enums pass options hold. llvm::cl picks its parser by specialising
/// `parser<T>`, and MLIR's pass options follow it.
#define SNN_SCHEMA_ENUM_PARSER(E)                                                            \
  template <> class llvm::cl::parser<E> : public snn::SchemaEnumParser<E> {                  \
  public:                                                                                    \
    using snn::SchemaEnumParser<E>::SchemaEnumParser;                                        \
  };
SNN_SCHEMA_ENUM_PARSER(snn::schema::Objective)
SNN_SCHEMA_ENUM_PARSER(snn::schema::RequestedMode)
#undef SNN_SCHEMA_ENUM_PARSER

#endif // SNN_SUPPORT_SCHEMAENUMPARSER_H
