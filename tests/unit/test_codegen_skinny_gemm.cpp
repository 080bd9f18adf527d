// Code generation for GEMMs with few rows (templates/skinny_gemm.cu,
// SkinnyGemm.cpp): which GEMMs the template takes (known rows up to 12, or
// tiled up to 48 in strict precision along k; a pointwise epilogue, no
// convolution, no forced block), the shape it is
// given for the problem (rows per tile, columns per block, 16-byte loads,
// warps splitting K, B along k or along n), its launch geometry, and that the
// generated kernels compile with NVRTC for sm_80 and sm_90 and with nvcc
// without register spills. The GPU op matrix runs them against the reference.
#include "support/CodegenTesting.h"
#include "support/Nvrtc.h"

#include <gtest/gtest.h>

#include <string>

namespace fusegen {
namespace {

using namespace fusegen::testing;

constexpr const char* kSkinny = R"(
fusion ffn {
  input x : f32[N, 4096]
  param w : f32[11008, 4096]
  param b : f32[11008]
  output y = silu(linear(x, w, b))
}
fusion odd {
  input x : f32[N, 3, 1027]
  param w : f32[257, 1027]
  output y = linear(x, w)
}
fusion along_n {
  input x : f32[N, 300]
  param w : f32[300, 5000]
  output y = matmul(x, w) * 2.0
}
fusion narrow_n {
  input x : f32[N, 300]
  param w : f32[300, 64]
  output y = matmul(x, w)
}
fusion normed {
  input x : f32[N, 512]
  param w : f32[256, 512]
  output y = group_norm(linear(x, w), num_groups=8)
}
fusion conv {
  input x : f32[N, 64, 1, 1]
  param w : f32[256, 64, 1, 1]
  output y = conv2d(x, w)
}
fusion short_k {
  input x : f32[N, 36]
  param w : f32[20, 36]
  output y = linear(x, w)
}
)";

std::string template_of(const GeneratedCode& code, size_t fusion) {
  for (const KernelLaunch& launch : code.fusions.at(fusion).kernels)
    if (launch.kind == KernelKind::Gemm)
      return launch.template_file;
  return "none";
}

TEST(CodegenSkinnyGemm, TakesKnownFewRowsWithPointwiseEpilogues) {
  GeneratedCode one = generate(plans_of(kSkinny, {{"N", 1}}));
  EXPECT_EQ(template_of(one, 0), "skinny_gemm.cu");
  EXPECT_EQ(template_of(one, 1), "skinny_gemm.cu") << "3 rows of a 3-d input";
  EXPECT_EQ(template_of(one, 2), "skinny_gemm.cu") << "B along n";
  EXPECT_EQ(template_of(one, 3), "gemm.cu") << "64 columns along n: too few blocks";
  EXPECT_EQ(template_of(one, 4), "gemm.cu") << "a group norm in the epilogue";
  EXPECT_NE(template_of(one, 5), "skinny_gemm.cu") << "a convolution";
  EXPECT_EQ(template_of(generate(plans_of(kSkinny, {{"N", 16}})), 0), "skinny_gemm.cu");
  GeneratedCode seventeen = generate(plans_of(kSkinny, {{"N", 17}}));
  EXPECT_EQ(template_of(seventeen, 0), "skinny_gemm.cu") << "17 rows, tiled";
  EXPECT_EQ(template_of(seventeen, 1), "gemm.cu") << "51 rows of k 1027: no 16-byte vectors to stage";
  EXPECT_EQ(template_of(seventeen, 2), "gemm.cu") << "B along n";
  EXPECT_EQ(template_of(generate(plans_of(kSkinny, {{"N", 48}})), 0), "skinny_gemm.cu") << "48 rows, tiled";
  EXPECT_EQ(template_of(generate(plans_of(kSkinny, {{"N", 49}})), 0), "gemm.cu") << "49 rows";
  EXPECT_EQ(template_of(generate(plans_of(kSkinny, {{"N", 17}}), Precision::TF32), 0), "gemm.cu")
      << "tf32's single tensor-core product beats FMAs from 13 rows";
  EXPECT_EQ(template_of(generate(plans_of(kSkinny)), 0), "gemm.cu") << "rows unknown offline";
  EXPECT_EQ(template_of(generate(plans_of(kSkinny, {{"N", 1}}), Precision::TF32), 0), "skinny_gemm.cu")
      << "fp32 FMAs serve both precisions";
  // A forced block (autotuning's candidates) is gemm.cu's.
  CodegenOptions forced;
  forced.gemm_block = GemmBlock{64, 64, 1};
  Result<GeneratedCode> gemm = generate_cuda({plans_of(kSkinny, {{"N", 1}}).at(0)}, forced);
  ASSERT_TRUE(gemm) << gemm.error();
  EXPECT_EQ(gemm.value().fusions.at(0).kernels.at(0).template_file, "gemm.cu");
}

TEST(CodegenSkinnyGemm, ShapeFollowsTheProblem) {
  GeneratedCode one = generate(plans_of(kSkinny, {{"N", 1}}));
  // One row: 8 columns per block (8 accumulators), 16-byte loads, 8 warps
  // over K = 4096 in chunks of 128; 11008 / 8 = 1376 blocks.
  std::string ffn = kernel_text(one, "ffn_k0");
  EXPECT_EQ(constant_of(ffn, "kRows"), "1");
  EXPECT_EQ(constant_of(ffn, "kCols"), "8");
  EXPECT_EQ(constant_of(ffn, "kVector"), "4");
  EXPECT_EQ(constant_of(ffn, "kWarps"), "8");
  EXPECT_EQ(constant_of(ffn, "kBAlongK"), "true");
  EXPECT_EQ(launch_of(one, 0, 0).grid[0].value, std::optional<int64_t>(1376));
  EXPECT_EQ(launch_of(one, 0, 0).grid[1].value, std::optional<int64_t>(1));
  EXPECT_EQ(launch_of(one, 0, 0).block, 256);
  // K = 1027 is no multiple of 4: scalar loads.
  EXPECT_EQ(constant_of(kernel_text(one, "odd_k0"), "kVector"), "1");
  EXPECT_EQ(constant_of(kernel_text(one, "odd_k0"), "kRows"), "4") << "3 rows in a tile of 4";
  // B along n: a block owns 32 * kVector columns; 5000 / 128 = 40 blocks
  // leave SMs idle, so scalar columns (157 blocks).
  std::string along_n = kernel_text(one, "along_n_k0");
  EXPECT_EQ(constant_of(along_n, "kBAlongK"), "false");
  EXPECT_EQ(constant_of(along_n, "kVector"), "1");
  EXPECT_EQ(launch_of(one, 2, 0).grid[0].value, std::optional<int64_t>(157));
  // 12 rows: two tiles of 8 (A's traffic per column of B stays low), 4
  // columns per block keep 32 accumulators; a block's tiles are adjacent
  // items of the grid: 11008 / 4 * 2 = 5504.
  GeneratedCode sixteen = generate(plans_of(kSkinny, {{"N", 12}}));
  EXPECT_EQ(constant_of(kernel_text(sixteen, "ffn_k0"), "kRows"), "8");
  EXPECT_EQ(constant_of(kernel_text(sixteen, "ffn_k0"), "kCols"), "4");
  EXPECT_EQ(launch_of(sixteen, 0, 0).grid[0].value, std::optional<int64_t>(5504));
  EXPECT_EQ(constant_of(kernel_text(sixteen, "along_n_k0"), "kWarps"), "8") << "partial sums: 32 KiB";
}

TEST(CodegenSkinnyGemm, TiledShapeFollowsTheProblem) {
  // 48 rows: 11008 / 128 = 86 blocks of columns, split 8 ways over k (k =
  // 4096: 16 stages a share): 688 blocks, under four waves of two blocks
  // per SM on 132 SMs; four stages of (48 + 128) x 36 floats.
  GeneratedCode forty_eight = generate(plans_of(kSkinny, {{"N", 48}}));
  std::string ffn = kernel_text(forty_eight, "ffn_k0");
  EXPECT_EQ(constant_of(ffn, "kTiled"), "true");
  EXPECT_EQ(constant_of(ffn, "kRows"), "48");
  EXPECT_EQ(constant_of(ffn, "kTileCols"), "128");
  EXPECT_EQ(constant_of(ffn, "kSplit"), "8");
  EXPECT_EQ(constant_of(ffn, "kStages"), "4");
  const KernelLaunch& launch = launch_of(forty_eight, 0, 0);
  EXPECT_EQ(launch.grid[0].value, std::optional<int64_t>(688));
  EXPECT_EQ(launch.cluster, 8);
  EXPECT_EQ(launch.block, 256);
  EXPECT_EQ(launch.shared_bytes, 4 * 176 * 36 * 4);
  // 17 rows in a tile of 24; a short k (two stages) is not split, and 20
  // columns take a block of 32.
  GeneratedCode seventeen = generate(plans_of(kSkinny, {{"N", 17}}));
  EXPECT_EQ(constant_of(kernel_text(seventeen, "ffn_k0"), "kRows"), "24");
  std::string short_k = kernel_text(seventeen, "short_k_k0");
  EXPECT_EQ(constant_of(short_k, "kTileCols"), "32");
  EXPECT_EQ(constant_of(short_k, "kSplit"), "1");
  EXPECT_EQ(launch_of(seventeen, 6, 0).grid[0].value, std::optional<int64_t>(1));
  EXPECT_EQ(launch_of(seventeen, 6, 0).cluster, 1);
  // Without clusters (sm_80) one block takes all of k, and the stages fit
  // two blocks in its smaller shared memory.
  GeneratedCode sm80 = generate({plans_of(kSkinny, {{"N", 48}}).at(0)}, Precision::Strict, 80);
  EXPECT_EQ(constant_of(kernel_text(sm80, "ffn_k0"), "kSplit"), "1");
  EXPECT_EQ(launch_of(sm80, 0, 0).cluster, 1);
  EXPECT_EQ(launch_of(sm80, 0, 0).shared_bytes, 3 * 176 * 36 * 4);
}

TEST(CodegenSkinnyGemm, KernelsCompile) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (int64_t rows : {1, 5, 16}) {
    std::vector<Plan> plans = plans_of(kSkinny, {{"N", rows}});
    plans.resize(3); // the skinny ones
    expect_gemm_compiles(plans, Precision::Strict, "skinny_" + std::to_string(rows), /*all_archs=*/rows == 1);
  }
  for (int64_t rows : {16, 48}) { // tiled, split over clusters or not
    std::vector<Plan> plans = plans_of(kSkinny, {{"N", rows}});
    expect_gemm_compiles({plans.at(0), plans.at(6)}, Precision::Strict, "skinny_tiled_" + std::to_string(rows),
                         /*all_archs=*/rows == 48);
  }
}

} // namespace
} // namespace fusegen
