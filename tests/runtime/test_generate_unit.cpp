// The runtime's generation of one fusion (generate_unit): a fusion whose
// outputs no kernel writes still gets a launch plan (its copies), and the
// offline launcher's copies agree with it.
#include "support/TestSupport.h"

#include "Generate.h"

#include <gtest/gtest.h>

namespace fusegen::runtime {
namespace {

// `output y = x` has no kernel: the plan is one copy and no workspace (it
// failed with "workspace size is not a constant after specialization").
TEST(GenerateUnit, OutputsThatOnlyCopyGetALaunchPlan) {
  auto loaded =
      testing::load_module(testing::read_text(testing::source_path("tests/regressions/offline_launcher_outputs.fg")));
  ASSERT_TRUE(loaded);
  const Fusion* passthru = loaded->module.find("passthru");
  ASSERT_NE(passthru, nullptr);
  GeneratedUnit unit = generate_unit(*passthru, {{"N", 5}}, Precision::Strict, 90, &loaded->sources);
  EXPECT_TRUE(unit.launch.kernels.empty());
  EXPECT_EQ(unit.launch.workspace_bytes, 0);
  ASSERT_EQ(unit.launch.copies.size(), 1u);
  EXPECT_EQ(unit.launch.copies[0].output, "y");
  EXPECT_EQ(unit.launch.copies[0].bytes, 5 * 8 * 4);

  const Fusion* alias = loaded->module.find("alias");
  ASSERT_NE(alias, nullptr);
  GeneratedUnit both = generate_unit(*alias, {{"N", 5}}, Precision::Strict, 90, &loaded->sources);
  EXPECT_EQ(both.launch.kernels.size(), 1u);
  ASSERT_EQ(both.launch.copies.size(), 1u);
  EXPECT_EQ(both.launch.copies[0].output, "z");
}

} // namespace
} // namespace fusegen::runtime
