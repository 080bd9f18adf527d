#include "fusegen/OpRegistry.h"

#include <gtest/gtest.h>

namespace fusegen {
namespace {

TEST(Registry, ConstantOpIsRegistered) {
  const OpDef* op = OpRegistry::builtin().find("constant");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->kind, OpKind::Constant);
  EXPECT_EQ(OpRegistry::builtin().find("no_such_op"), nullptr);
}

TEST(Registry, EveryOpHasInferenceAndReference) {
  const OpRegistry& registry = OpRegistry::builtin();
  for (const std::string& name : registry.names()) {
    const OpDef* op = registry.find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->infer) << name;
    EXPECT_TRUE(op->reference) << name;
  }
}

TEST(DimUnifier, FixesSymbolsAndReportsConflicts) {
  DimUnifier dims;
  EXPECT_EQ(dims.unify(Dim::symbol("K"), Dim::constant(8), {}), "");
  EXPECT_EQ(dims.resolve(Dim::symbol("K")), Dim::constant(8));
  EXPECT_EQ(dims.unify(Dim::constant(16), Dim::symbol("K"), {}),
            "dim K is bound to both 8 (at line 0:0) and 16");
  EXPECT_EQ(dims.unify(Dim::constant(16), Dim::constant(8), {}), "16 vs 8");
  EXPECT_NE(dims.unify(Dim::symbol("N"), Dim::symbol("M"), {}), "");
  EXPECT_EQ(dims.unify(Dim::symbol("N"), Dim::symbol("N"), {}), "");
}

} // namespace
} // namespace fusegen
