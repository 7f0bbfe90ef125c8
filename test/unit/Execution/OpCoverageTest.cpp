//===- OpCoverageTest.cpp - The runtime implements every artifact op ------===//
//
// The schema's op table (snn/Schema/ArtifactOps.h) is what the compiler may
// write into an artifact (test/artifact-op-table holds the compiler to it);
// every op in it needs a kernel builder here, with the table's input counts.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Schema/ArtifactOps.h"

#include <gtest/gtest.h>

#include <set>

using namespace snn::runtime;
namespace schema = snn::schema;

TEST(OpCoverage, EveryArtifactOpHasAKernel) {
  const OpRegistry &registry = OpRegistry::builtin();
  for (const schema::ArtifactOp &op : schema::artifactOps()) {
    const OpDef *def = registry.lookup(op.name);
    ASSERT_NE(def, nullptr) << "no kernel for artifact op '" << op.name << "'";
    EXPECT_EQ(def->minInputs, op.minInputs) << op.name;
    EXPECT_EQ(def->maxInputs, op.maxInputs) << op.name;
    EXPECT_TRUE(def->build) << op.name;
  }
}

TEST(OpCoverage, TheRegistryHoldsOnlyArtifactOps) {
  std::set<std::string> table;
  for (const schema::ArtifactOp &op : schema::artifactOps())
    table.insert(op.name);
  for (const std::string &opType : OpRegistry::builtin().opTypes())
    EXPECT_TRUE(table.count(opType)) << opType;
  EXPECT_THROW(OpRegistry().add("no_such_op", nullptr), std::logic_error);
}
