//===- ArtifactOpTableTest.cpp - The snn ops against the op table ---------===//
//
// The exporter writes every snn op as the node of the same name and copies its
// attributes; the runtime implements what the schema's table lists. So the
// table must list every snn op that can reach an artifact, with exactly its
// ODS attribute names and operand counts, and nothing else.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/ArtifactOps.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace mlir;
namespace schema = snn::schema;

namespace {

/// snn ops that never reach an artifact: parameters become initializers, and
/// ONNX nodes must be legalized before export.
bool exportedOp(StringRef name) { return name != "parameter" && name != "onnx_node"; }

std::vector<RegisteredOperationName> snnOps(MLIRContext &context) {
  context.getOrLoadDialect<snn::SNNDialect>();
  std::vector<RegisteredOperationName> ops;
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (name.getDialectNamespace() == "snn" && exportedOp(name.stripDialect()))
      ops.push_back(name);
  return ops;
}

/// Whether the op takes exactly `n` operands (n <= 5, what the table uses).
bool hasOperands(RegisteredOperationName name, int n) {
  switch (n) {
  case 0: return name.hasTrait<OpTrait::ZeroOperands>();
  case 1: return name.hasTrait<OpTrait::OneOperand>();
  case 2: return name.hasTrait<OpTrait::NOperands<2>::Impl>();
  case 3: return name.hasTrait<OpTrait::NOperands<3>::Impl>();
  case 5: return name.hasTrait<OpTrait::NOperands<5>::Impl>();
  }
  return false;
}

bool hasAtLeastOperands(RegisteredOperationName name, int n) {
  switch (n) {
  case 1: return name.hasTrait<OpTrait::AtLeastNOperands<1>::Impl>();
  case 2: return name.hasTrait<OpTrait::AtLeastNOperands<2>::Impl>();
  case 3: return name.hasTrait<OpTrait::AtLeastNOperands<3>::Impl>();
  }
  return false;
}

} // namespace

TEST(ArtifactOpTable, EveryExportedOpIsListedWithItsAttributes) {
  MLIRContext context;
  std::vector<RegisteredOperationName> ops = snnOps(context);
  ASSERT_FALSE(ops.empty());
  for (RegisteredOperationName name : ops) {
    const schema::ArtifactOp *entry = schema::findArtifactOp(name.stripDialect());
    ASSERT_NE(entry, nullptr) << name.getStringRef().str() << " is not in the op table";
    std::set<std::string> ods, table(entry->attributes.begin(), entry->attributes.end());
    for (StringAttr attribute : name.getAttributeNames())
      if (!attribute.getValue().starts_with("operandSegment"))
        ods.insert(attribute.str());
    EXPECT_EQ(ods, table) << entry->name;
    if (entry->minInputs == entry->maxInputs)
      EXPECT_TRUE(hasOperands(name, entry->minInputs)) << entry->name;
    else
      EXPECT_TRUE(hasAtLeastOperands(name, entry->minInputs)) << entry->name;
  }
}

TEST(ArtifactOpTable, EveryListedOpIsAnSnnOp) {
  MLIRContext context;
  std::set<std::string> names;
  for (RegisteredOperationName name : snnOps(context))
    names.insert(name.stripDialect().str());
  for (const schema::ArtifactOp &op : schema::artifactOps())
    EXPECT_TRUE(names.count(op.name)) << op.name << " has no snn op";
}
