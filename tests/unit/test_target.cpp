// The target model: what each supported compute capability offers, and that
// generation and NVRTC's options follow it rather than the arch number.
#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/NvrtcOptions.h"
#include "fusegen/Planner.h"
#include "fusegen/Target.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace fusegen {
namespace {

TEST(Target, FeaturesByArch) {
  Result<Target> a100 = target_for_arch(80), h100 = target_for_arch(90), b200 = target_for_arch(100);
  ASSERT_TRUE(a100 && h100 && b200);
  EXPECT_EQ(a100.value().sm_count, 108);
  EXPECT_FALSE(a100.value().wgmma || a100.value().clusters || a100.value().dependent_launches);
  EXPECT_EQ(a100.value().compile_arch(), "sm_80");
  EXPECT_EQ(h100.value().sm_count, 132);
  EXPECT_TRUE(h100.value().wgmma && h100.value().clusters && h100.value().dependent_launches);
  EXPECT_EQ(h100.value().compile_arch(), "sm_90a");
  // wgmma is 9.0's alone; clusters stay.
  EXPECT_FALSE(b200.value().wgmma);
  EXPECT_TRUE(b200.value().clusters);
  EXPECT_EQ(b200.value().compile_arch(), "sm_100");
  // What a block may opt into: 163 KiB, 227 KiB (sm_90 and sm_100), 99 KiB
  // on the workstation parts.
  EXPECT_EQ(a100.value().max_shared_bytes_per_block, 166912);
  EXPECT_EQ(h100.value().max_shared_bytes_per_block, 232448);
  EXPECT_EQ(b200.value().max_shared_bytes_per_block, 232448);
  EXPECT_EQ(target_for_arch(89).value().max_shared_bytes_per_block, 101376);
  // An arch between generations takes the one below.
  EXPECT_EQ(target_for_arch(87).value().sm_count, 84);
  EXPECT_EQ(target_for_arch(87).value().max_shared_bytes_per_block, 101376);
  EXPECT_EQ(target_for_arch(75).error(), "sm_75 is not supported (fusegen targets sm_80 and newer)");
}

TEST(Target, NvrtcCompilesForTheTargetsArch) {
  auto arch_option = [](int arch, bool cubin) {
    std::vector<std::string> options = nvrtc_options({arch, cubin}, Precision::Strict);
    return *std::find_if(options.begin(), options.end(),
                         [](const std::string& o) { return o.starts_with("--gpu-architecture="); });
  };
  EXPECT_EQ(arch_option(90, true), "--gpu-architecture=sm_90a");
  EXPECT_EQ(arch_option(100, true), "--gpu-architecture=sm_100");
  EXPECT_EQ(arch_option(80, true), "--gpu-architecture=sm_80");
  EXPECT_EQ(arch_option(90, false), "--gpu-architecture=compute_90");
}

// A GEMM chain generated for a GPU without wgmma takes the mma.sync path's
// blocks (strict: at most 128x64, so twice the blocks of wgmma's 128x128);
// it used to take wgmma's 128x128 on sm_100, which the template then ran on
// mma.sync. Read from the launch metadata.
TEST(Target, GemmBlocksFollowTheTargetsFeatures) {
  SourceManager sources;
  uint32_t file = sources.add_buffer("t.fg", R"(fusion g {
  input x : f32[8192, 512]
  param w : f32[1024, 512]
  output y = relu(linear(x, w))
})");
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, file, diags);
  ASSERT_TRUE(module) << diags.render(sources);
  Plan plan = plan_fusion(module->fusions[0]);
  auto blocks = [&](int arch) -> int64_t {
    CodegenOptions options;
    options.arch = arch;
    Result<GeneratedCode> code = generate_cuda({plan}, options);
    EXPECT_TRUE(code) << code.error();
    if (!code || code.value().fusions[0].kernels.empty())
      return 0;
    int64_t total = 1;
    for (const SizeExpr& extent : code.value().fusions[0].kernels[0].grid)
      total *= extent.value.value_or(0);
    return total;
  };
  EXPECT_EQ(blocks(90), 8192 / 128 * (1024 / 128));
  EXPECT_EQ(blocks(100), 8192 / 128 * (1024 / 64));
  EXPECT_EQ(blocks(80), 8192 / 128 * (1024 / 64));
}

} // namespace
} // namespace fusegen
