// Code generation for GEMM kernels: which template variant a kernel takes
// (inner product, block, slice depth, 16-byte loads, cp.async stages,
// split-K) at symbolic and specialized sizes, the narrow template for few
// columns and shallow depth, and every variant compiling with NVRTC. The
// hooks and fused stages are in test_codegen_gemm.cpp.

#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"
#include "support/CodegenTesting.h"
#include "support/Nvrtc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <unistd.h>

namespace fusegen {
namespace {

using namespace fusegen::testing;

// ---- the template variant: block, slice depth, vectors, pipeline ----

constexpr const char* kVariants = R"(
fusion big {
  input x : f32[N, 1024]
  param w : f32[1024, 1024]
  output y = linear(x, w)
}
fusion k10 {
  input x : f32[N, 10]
  param w : f32[512, 10]
  output y = linear(x, w)
}
fusion mm {
  input a : f32[N, 256]
  input b : f32[256, 512]
  output y = matmul(a, b)
}
fusion conv64 {
  input x : f32[N, 12, 40, 40]
  param w : f32[64, 12, 10, 10]
  output y = conv2d(x, w)
}
)";

// Per fusion of kVariants: (kernel, expected variant, expected grid).
struct VariantCase {
  const char* kernel;
  const char* variant;
  std::array<std::optional<int64_t>, 3> grid;
};

void expect_variants(const DimBindings& dims, Precision precision, const std::vector<VariantCase>& cases) {
  std::string what = std::string(precision == Precision::TF32 ? "tf32" : "strict") +
                     (dims.empty() ? ", N symbolic" : ", N = " + std::to_string(dims.at("N")));
  GeneratedCode code = generate(plans_of(kVariants, dims), precision);
  ASSERT_EQ(code.fusions.size(), cases.size()) << what;
  for (size_t f = 0; f < cases.size(); ++f) {
    std::string kernel = kernel_text(code, cases[f].kernel);
    const KernelLaunch& launch = launch_named(code, f, cases[f].kernel);
    std::array<std::optional<int64_t>, 3> grid{launch.grid[0].value, launch.grid[1].value, launch.grid[2].value};
    EXPECT_EQ(grid, cases[f].grid) << cases[f].kernel << ", " << what << ": grid";
    if (std::string(cases[f].variant) == "skinny") { // test_codegen_skinny_gemm.cpp
      EXPECT_EQ(launch.template_file, "skinny_gemm.cu") << cases[f].kernel << ", " << what;
      continue;
    }
    EXPECT_EQ(variant_of(kernel), cases[f].variant) << cases[f].kernel << ", " << what;
    expect_dynamic_shared_memory(code, f, cases[f].kernel);
    if (std::string(cases[f].kernel) == "conv64_k0") {
      EXPECT_EQ(constant_of(kernel, "kBlockN"), "64") << "64 output channels never take 128-column blocks, " << what;
    }
  }
}

TEST(CodegenGemm, VariantChoice) {
  // The largest block giving >= 132 blocks (strict precision at most 128x64
  // unless the operands take wgmma on sm_90: here `big`), else 64x64; 128
  // columns only with more than 64 columns; symbolic extents take the
  // largest. K % 4 == 0 along k on both operands: 16-byte loads, 32-deep
  // slices and a 4-stage cp.async pipeline; matmul's B is read along n
  // (vectors and 32-deep slices, 2 stages); K = 10 and conv2d's gather:
  // element loads, always 64x64 blocks with 8-deep slices, 2 stages.
  using P = Precision;
  const std::optional<int64_t> none;
  const char* big_strict = "inner 1, block 128x128, tile_k 32, stages 4, vectors true/true";
  const char* big_tf32 = "inner 2, block 128x128, tile_k 32, stages 5, vectors true/true";
  // tf32 on wgmma takes 256 columns where that still gives enough blocks
  // (4 stages: 128x256 slices fill shared memory).
  const char* wide_tf32 = "inner 2, block 128x256, tile_k 32, stages 4, vectors true/true";
  expect_variants({}, P::Strict,
                  {{"big_k0", big_strict, {8, none, 1}},
                   {"k10_k0", "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false", {8, none, 1}},
                   {"mm_k0", "inner 1, block 128x64, tile_k 32, stages 2, vectors true/true", {8, none, 1}},
                   {"conv64_k0", "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false", {1, 16, none}}});
  expect_variants({}, P::TF32,
                  {{"big_k0", wide_tf32, {4, none, 1}},
                   {"k10_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false", {8, none, 1}},
                   {"mm_k0", "inner 2, block 128x128, tile_k 32, stages 2, vectors true/true", {4, none, 1}},
                   {"conv64_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false", {1, 16, none}}});
  // Big: 8192 rows.
  expect_variants({{"N", 8192}}, P::Strict,
                  {{"big_k0", big_strict, {8, 64, 1}},
                   {"k10_k0", "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false", {8, 128, 1}},
                   {"mm_k0", "inner 1, block 128x64, tile_k 32, stages 2, vectors true/true", {8, 64, 1}},
                   {"conv64_k0", "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false", {1, 16, 8192}}});
  expect_variants({{"N", 8192}}, P::TF32,
                  {{"big_k0", wide_tf32, {4, 64, 1}},
                   {"k10_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false", {8, 128, 1}},
                   {"mm_k0", "inner 2, block 128x128, tile_k 32, stages 2, vectors true/true", {4, 64, 1}},
                   {"conv64_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false", {1, 16, 8192}}});
  // The threshold (132 blocks). 1024 columns: 2048 rows give 16 * 8 = 128
  // blocks of 128x128 (too few) and 256 of 128x64; 2049 rows give 17 * 8 =
  // 136 of 128x128. 512 columns: 2048 rows give 64 of 128x128 and 128 of
  // 128x64 (too few), so 64x64; 2049 rows give 136 of 128x64.
  expect_variants({{"N", 2048}}, P::TF32,
                  {{"big_k0", "inner 2, block 128x64, tile_k 32, stages 5, vectors true/true", {16, 16, 1}},
                   {"k10_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false", {8, 32, 1}},
                   {"mm_k0", "inner 2, block 64x64, tile_k 32, stages 2, vectors true/true", {8, 32, 1}},
                   {"conv64_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false", {1, 16, 2048}}});
  expect_variants({{"N", 2049}}, P::TF32,
                  {{"big_k0", big_tf32, {8, 17, 1}},
                   {"k10_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false", {8, 33, 1}},
                   {"mm_k0", "inner 2, block 128x64, tile_k 32, stages 2, vectors true/true", {8, 17, 1}},
                   {"conv64_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false", {1, 16, 2049}}});
  // Small: 64 rows are one block row. Over a long k (`big`: 32 slices)
  // the weights stream through 128x128 blocks split by 8 into clusters
  // along x (8 blocks, 64 in all). Otherwise 64 rows (16 blocks of 64x64
  // at most) fall back to 64x64; 64 conv samples have 512 blocks of
  // 128x64, one sample (1024 positions) 8, so 64x64. Still too few blocks:
  // split-K, the largest split that keeps the launch within 132 blocks and
  // two slices per block: `mm` (8 blocks, 8 slices) by 4, one conv sample
  // (16 blocks, 18 slices of 8) by 8; `k10` has 2 slices, too few to
  // split. One row: linears take the skinny template, B along n with 512
  // columns is too few blocks for it.
  expect_variants({{"N", 64}}, P::Strict,
                  {{"big_k0", "inner 1, block 128x128, tile_k 32, stages 4, vectors true/true, split 8", {64, 1, 1}},
                   {"k10_k0", "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false", {8, 1, 1}},
                   {"mm_k0", "inner 1, block 64x64, tile_k 32, stages 2, vectors true/true, split 4", {32, 1, 1}},
                   {"conv64_k0", "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false", {1, 16, 64}}});
  expect_variants(
      {{"N", 1}}, P::TF32,
      {{"big_k0", "skinny", {1024, 1, 1}},
       {"k10_k0", "skinny", {512, 1, 1}},
       {"mm_k0", "inner 2, block 64x64, tile_k 32, stages 2, vectors true/true, split 4", {32, 1, 1}},
       {"conv64_k0", "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false, split 8", {8, 16, 1}}});
}

TEST(CodegenGemm, SplitKIsClusteredAndOnlyWhereItApplies) {
  std::vector<Plan> plans = plans_of(kVariants, {{"N", 64}});
  GeneratedCode code = generate(plans);
  const KernelLaunch& big = launch_of(code, 0, 0);
  EXPECT_EQ(big.cluster, 8);
  std::string kernel = kernel_text(code, "big_k0");
  EXPECT_TRUE(contains(kernel, "__cluster_dims__(kSplitK, 1, 1) fusegen_big_k0(")) << kernel;
  // The accumulators of a 128x128 block are staged for the cluster's sum.
  EXPECT_GE(std::stoll(constant_of(kernel, "kDynamicSharedFloats")), 128 * 128);
  EXPECT_EQ(launch_of(code, 1, 0).cluster, 1) << "k10: two slices do not split";
  EXPECT_FALSE(contains(kernel_text(code, "k10_k0"), "__cluster_dims__(kSplitK, 1, 1) fusegen_k10_k0("));
  // sm_80 has no clusters; a big launch has enough blocks.
  CodegenOptions sm80;
  sm80.arch = 80;
  Result<GeneratedCode> old = generate_cuda(plans, sm80);
  ASSERT_TRUE(old) << old.error();
  EXPECT_EQ(old.value().fusions.at(0).kernels.at(0).cluster, 1);
  EXPECT_EQ(constant_of(kernel_text(old.value(), "big_k0"), "kSplitK"), "1");
  EXPECT_EQ(launch_of(generate(plans_of(kVariants, {{"N", 8192}})), 0, 0).cluster, 1);
  // Forced splits: taken where they apply, refused with the reason elsewhere.
  CodegenOptions forced;
  forced.gemm_block = GemmBlock{64, 64, 2};
  Result<GeneratedCode> two = generate_cuda({plans.at(0)}, forced);
  ASSERT_TRUE(two) << two.error();
  EXPECT_EQ(two.value().fusions.at(0).kernels.at(0).cluster, 2);
  EXPECT_EQ(two.value().fusions.at(0).kernels.at(0).grid[0].value, std::optional<int64_t>(32));
  forced.arch = 80;
  Result<GeneratedCode> refused = generate_cuda({plans.at(0)}, forced);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(contains(refused.error(), "cannot take 64x64:2 blocks (split-K needs sm_90")) << refused.error();
  forced.arch = 90;
  refused = generate_cuda(plans_of(kVariants, {{"N", 8192}}), forced);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(contains(refused.error(), "split-K is for launches of fewer than 132 blocks")) << refused.error();
  forced.gemm_block = GemmBlock{64, 64, 4};
  refused = generate_cuda({plans.at(1)}, forced);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(contains(refused.error(), "k has 2 slices of 8, fewer than the split")) << refused.error();
  refused = generate_cuda({plans_of(kVariants).at(0)}, forced);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(contains(refused.error(), "split-K needs known extents")) << refused.error();
}

// The narrow template (templates/narrow_gemm.cu) takes a GEMM of at most 64
// known columns (32 in tf32 precision unless deep) and a depth of at most
// 128 (1024 where A is gathered element by element; B in parts of the
// columns that fit 32 KB) whose
// output is contiguous along m (conv2d's pixels), with a pointwise epilogue
// or partial statistics; gemm.cu takes the rest, and every forced block.
constexpr const char* kNarrow = R"(
fusion stats {
  input x : f32[N, 3, 32, 32]
  param w : f32[16, 3, 3, 3]
  param g : f32[16]
  param b : f32[16]
  h = conv2d(x, w)
  output y = group_norm(h, num_groups=8, weight=g, bias=b, eps=1e-5)
}
fusion cols33 {
  input x : f32[N, 3, 32, 32]
  param w : f32[33, 3, 3, 3]
  output y = conv2d(x, w)
}
fusion cols65 {
  input x : f32[N, 3, 32, 32]
  param w : f32[65, 3, 3, 3]
  output y = conv2d(x, w)
}
fusion deep {
  input x : f32[N, 16, 32, 32]
  param w : f32[8, 16, 3, 3]
  output y = conv2d(x, w)
}
fusion cols32 {
  input x : f32[N, 14, 32, 32]
  param w : f32[32, 14, 3, 3]
  output y = conv2d(x, w, padding=1)
}
fusion lin {
  input x : f32[N, 20]
  param w : f32[16, 20]
  output y = linear(x, w)
}
fusion deep3d {
  input x : f32[N, 8, 6, 10, 10]
  param w : f32[32, 8, 3, 3, 3]
  output y = conv3d(x, w)
}
fusion deep3d_wide {
  input x : f32[N, 8, 6, 10, 10]
  param w : f32[40, 8, 3, 3, 3]
  output y = conv3d(x, w)
}
)";

TEST(CodegenGemm, NarrowTemplateTakesFewColumnsAndShallowDepth) {
  std::vector<Plan> plans = plans_of(kNarrow, {{"N", 128}});
  GeneratedCode code = generate(plans);
  // The GEMM's launch (a channels-last copy may come before it).
  auto template_of = [&](size_t fusion) {
    for (const KernelLaunch& launch : code.fusions.at(fusion).kernels)
      if (launch.kind == KernelKind::Gemm)
        return launch.template_file;
    return std::string("none");
  };
  EXPECT_EQ(template_of(0), "narrow_gemm.cu");
  EXPECT_EQ(template_of(1), "narrow_gemm.cu") << "33 columns, strict";
  EXPECT_EQ(template_of(2), "gemm.cu") << "65 columns";
  EXPECT_EQ(template_of(3), "gemm.cu") << "depth 144";
  EXPECT_EQ(template_of(4), "narrow_gemm.cu") << "32 columns, depth 126";
  EXPECT_EQ(template_of(5), "gemm.cu") << "linear: the output is contiguous along n";
  EXPECT_EQ(template_of(6), "narrow_gemm.cu") << "8 channels gathered, depth 216";
  EXPECT_EQ(template_of(7), "narrow_gemm.cu") << "B of 216 x 40 in two parts of 20 columns";
  // Up to 32 columns a thread owns two rows: blocks of 256 rows.
  std::string deep = kernel_text(code, "deep3d_k0");
  EXPECT_EQ(constant_of(deep, "kThreadRows"), "2");
  EXPECT_EQ(constant_of(deep, "kDepth"), "216");
  EXPECT_EQ(launch_of(code, 6, 0).grid[1].value, std::optional<int64_t>(1)) << "4 x 8 x 8 = 256 rows a sample";
  EXPECT_EQ(constant_of(kernel_text(code, "cols33_k0"), "kThreadRows"), "1");
  std::string parts = kernel_text(code, "deep3d_wide_k0");
  EXPECT_EQ(constant_of(parts, "kBlockCols"), "20");
  EXPECT_EQ(constant_of(parts, "kThreadRows"), "2");
  EXPECT_EQ(launch_of(code, 7, 0).grid[0].value, std::optional<int64_t>(2)) << "grid x over the column parts";
  EXPECT_EQ(constant_of(deep, "kBlockCols"), "32");
  EXPECT_EQ(constant_of(kernel_text(code, "cols32_k0"), "kThreadRows"), "1") << "padding: addresses per element";
  // tf32: past 32 columns the tensor cores' single product is faster.
  GeneratedCode tf32 = generate(plans, Precision::TF32);
  EXPECT_EQ(launch_of(tf32, 1, 0).template_file, "gemm.cu") << "33 columns, tf32";
  EXPECT_EQ(launch_of(tf32, 4, 0).template_file, "narrow_gemm.cu") << "32 columns, tf32";
  // Group statistics of 2 channels per 64-row tile, the layout gemm.cu
  // writes; no padding, so A's addresses split into row and tap offsets.
  std::string stats = kernel_text(code, "stats_k0");
  EXPECT_EQ(constant_of(stats, "kStatsGroup"), "2");
  EXPECT_EQ(constant_of(stats, "kStatsRows"), "64");
  EXPECT_EQ(constant_of(stats, "kASplit"), "true");
  EXPECT_EQ(constant_of(stats, "kCols"), "16");
  EXPECT_EQ(constant_of(stats, "kDepth"), "27");
  EXPECT_EQ(launch_of(code, 0, 0).grid[1].value, std::optional<int64_t>(4)) << "900 positions in 256-row blocks";
  EXPECT_EQ(launch_of(code, 0, 0).grid[2].value, std::optional<int64_t>(128));
  EXPECT_EQ(launch_of(code, 0, 0).cluster, 1);
  EXPECT_EQ(constant_of(kernel_text(code, "cols32_k0"), "kASplit"), "false") << "padding";
  EXPECT_EQ(constant_of(kernel_text(code, "cols33_k0"), "kCols"), "33");
  // A forced block is gemm.cu's.
  CodegenOptions forced;
  forced.gemm_block = GemmBlock{64, 64, 1};
  Result<GeneratedCode> gemm = generate_cuda({plans.at(0)}, forced);
  ASSERT_TRUE(gemm) << gemm.error();
  EXPECT_EQ(gemm.value().fusions.at(0).kernels.at(0).template_file, "gemm.cu");
  // Symbolic batch: the same template, the batch grid an expression.
  GeneratedCode symbolic = generate(plans_of(kNarrow));
  EXPECT_EQ(launch_of(symbolic, 0, 0).template_file, "narrow_gemm.cu");
  EXPECT_FALSE(launch_of(symbolic, 0, 0).grid[2].value);
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  expect_gemm_compiles(plans, Precision::Strict, "narrow", /*all_archs=*/true);
}

TEST(CodegenGemm, VariantsCompile) {
  // Every block (128x128 only with tf32), with and without the cp.async
  // pipeline, 16- and 32-deep slices, for both inner products.
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (Precision precision : {Precision::Strict, Precision::TF32})
    for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 64}}}) {
      std::string what =
          std::string("variants_") + (precision == Precision::TF32 ? "tf32" : "strict") + (dims.empty() ? "" : "_dims");
      expect_gemm_compiles(plans_of(kVariants, dims), precision, what, dims.empty());
    }
}

} // namespace
} // namespace fusegen
