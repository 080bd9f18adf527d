// Code generation for GEMM kernels (templates/gemm.cu, EmitGemm.cpp): linear
// (with and without bias, 1-d and 3-d inputs), matmul (2-d, batched with
// broadcast batch dims, 1-d operands), conv2d as implicit GEMM (stride,
// padding, dilation, groups, unbatched), and the fused epilogue stages: a row
// group_norm / layer_norm, a row min / max after it (with its +-inf fill), and
// partial statistics for batch_norm and for group_norm after conv2d. Symbolic
// and specialized dims, ragged M, N and K, M = 1. Generated GEMM kernels are
// compiled with NVRTC for sm_80 and sm_90 and, where the toolkit has nvcc,
// with nvcc -Werror all-warnings, checking ptxas reports no spills; hook
// values, the template variant (inner product, block, slice depth, 16-byte
// loads, cp.async stages), launch geometry and dynamic shared memory are
// checked; refusals name their reason.
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

// ---- contractions with pointwise epilogues ----

constexpr const char* kContractions = R"(
fusion lin_nobias {
  input x : f32[N, 100]
  param w : f32[48, 100]
  output y = relu(linear(x, w))
}
fusion lin3d {
  input x : f32[B, S, 64]
  input z : f32[S, 32]
  param w : f32[32, 64]
  param b : f32[32]
  h = linear(x, w, b)
  output h1 = h * 2.0
  output y = h1 + z
}
fusion lin1d {
  input x : f32[64]
  param w : f32[10, 64]
  param b : f32[10]
  output y = linear(x, w, b)
}
fusion bmm {
  input a : f32[B, 3, 17, 40]
  input b : f32[3, 40, 24]
  output y = matmul(a, b)
}
fusion mv {
  input a : f32[B, 17, 40]
  input v : f32[40]
  output y = matmul(a, v)
}
fusion vm {
  input v : f32[40]
  input c : f32[B, 40, 24]
  output y = matmul(v, c)
}
fusion dot {
  input u : f32[40]
  input v : f32[40]
  output y = matmul(u, v)
}
fusion m1 {
  input a : f32[1, 70]
  input c : f32[70, 5]
  output y = matmul(a, c)
}
fusion conv {
  input x : f32[N, 4, 20, 18]
  param w : f32[8, 2, 3, 3]
  param b : f32[8]
  param s : f32[8, 1, 1]
  h = conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)
  output y = relu(h) * s
}
fusion conv1x1 {
  input x : f32[12, 9, 7]
  param w : f32[70, 12, 1, 1]
  output y = conv2d(x, w)
}
fusion conv_wide {
  input x : f32[N, 4, 20, 18]
  param w : f32[144, 2, 3, 3]
  param b : f32[144]
  param s : f32[144, 1, 1]
  h = conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)
  output y = relu(h) * s
}
)";

TEST(CodegenGemm, ContractionsCompileSymbolicAndSpecialized) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 130}, {"B", 3}, {"S", 5}}}) {
    std::vector<Plan> plans = plans_of(kContractions, dims);
    ASSERT_EQ(plans.size(), 11u);
    for (const Plan& plan : plans)
      ASSERT_EQ(kinds_of(plan), std::vector<KernelKind>{KernelKind::Gemm}) << plan.fusion.name;
    expect_gemm_compiles(plans, Precision::Strict, dims.empty() ? "contractions" : "contractions_dims", dims.empty());
  }
}

TEST(CodegenGemm, LinearHooks) {
  GeneratedCode code = generate(plans_of(kContractions));
  // x [N, 100] . w[48, 100]^T: both operands contiguous along k, as pointers
  // (the template loads them); K = 100 is a multiple of 4 (16-byte loads, the
  // cp.async pipeline) but not of the 32-deep slice (bounds checks in the
  // template). Strict precision: 3xTF32; N is symbolic, so the largest block
  // strict precision allows.
  std::string lin = kernel_text(code, "lin_nobias_k0");
  EXPECT_TRUE(contains(lin, "constexpr bool kLoadAAlongK = true;"));
  EXPECT_TRUE(contains(lin, "constexpr bool kLoadBAlongK = true;"));
  EXPECT_TRUE(contains(lin, "return args.buf[0] + m * 100LL + k;"));
  EXPECT_TRUE(contains(lin, "return args.buf[1] + n * 100LL + k;"));
  EXPECT_FALSE(contains(lin, "return __ldg(")) << "operand hooks return addresses";
  EXPECT_TRUE(contains(lin, "__device__ __forceinline__ const float* a_address("));
  EXPECT_TRUE(contains(lin, "__device__ __forceinline__ const float* b_address("));
  EXPECT_TRUE(contains(lin, "const float v3 = fusegen_relu(acc);"));
  EXPECT_EQ(constant_of(lin, "kTileM"), "64");
  EXPECT_EQ(constant_of(lin, "kTileN"), "64");
  EXPECT_EQ(constant_of(lin, "kThreads"), "256");
  EXPECT_EQ(constant_of(lin, "kNormGroup"), "0");
  EXPECT_EQ(constant_of(lin, "kStatsGroup"), "0");
  EXPECT_EQ(constant_of(lin, "kRowReduce"), "0");
  EXPECT_EQ(variant_of(lin), "inner 1, block 128x64, tile_k 32, stages 4, vectors true/true");
  EXPECT_TRUE(contains(lin, "__launch_bounds__(kThreads, kMinBlocksPerSM) fusegen_lin_nobias_k0("));
  // 3-d input: leading dims flattened into m and decoded again for the
  // epilogue; z [S, 32] broadcast against [B, S, 32]; bias per column.
  std::string lin3d = kernel_text(code, "lin3d_k0");
  EXPECT_TRUE(contains(lin3d, "return (args.dim[0] * args.dim[1]);")) << "rows = B * S";
  EXPECT_TRUE(contains(lin3d, "const long long o1 = orest % args.dim[1];"));
  EXPECT_TRUE(contains(lin3d, "const float v4 = acc + args.buf[3][n];"));
  EXPECT_TRUE(contains(lin3d, "args.buf[1][o1 * 32LL + n]"));
  EXPECT_TRUE(contains(lin3d, "return args.buf[0] + m * 64LL + k;"));
  EXPECT_EQ(variant_of(lin3d), "inner 1, block 128x64, tile_k 32, stages 4, vectors true/true") << "rows symbolic";
  // 1-d input: one row, coordinates (n); one known row, so the skinny
  // template (test_codegen_skinny_gemm.cpp) with the same hooks.
  std::string lin1d = kernel_text(code, "lin1d_k0");
  EXPECT_TRUE(contains(lin1d, "return 1LL;"));
  EXPECT_TRUE(contains(lin1d, "const long long out = n;"));
  EXPECT_TRUE(contains(lin1d, "skinny_gemm_main(args);"));
}

TEST(CodegenGemm, MatmulHooks) {
  GeneratedCode code = generate(plans_of(kContractions));
  // Batch dims [B, 3] folded into the batch index; b [3, 40, 24] broadcasts
  // over B and is read along n. Both contiguous extents (40, 24) are
  // multiples of 4: 16-byte loads and 32-deep slices, but B is not along k,
  // so no cp.async pipeline (2 stages). B symbolic: the largest block.
  std::string bmm = kernel_text(code, "bmm_k0");
  EXPECT_TRUE(contains(bmm, "return (3LL * args.dim[0]);")) << "batches";
  EXPECT_TRUE(contains(bmm, "return (b0 * 3LL + b1) * (17LL * 40LL);")) << "a's batch offset";
  EXPECT_TRUE(contains(bmm, "return (b1) * (40LL * 24LL);")) << "b broadcasts over B";
  EXPECT_TRUE(contains(bmm, "(void)b0;"));
  EXPECT_TRUE(contains(bmm, "constexpr bool kLoadAAlongK = true;"));
  EXPECT_TRUE(contains(bmm, "constexpr bool kLoadBAlongK = false;"));
  EXPECT_TRUE(contains(bmm, "return args.buf[0] + a_base + m * 40LL + k;"));
  EXPECT_TRUE(contains(bmm, "return args.buf[1] + b_base + k * 24LL + n;"));
  EXPECT_EQ(variant_of(bmm), "inner 1, block 64x64, tile_k 32, stages 2, vectors true/true") << "17 rows";
  // 1-d operands are promoted: [B, 17, 40] x [40] has one column, [40] x
  // [B, 40, 24] one row; [40] x [40] is a 0-d result. A 1-d B is read along
  // k (cp.async pipeline); a 2-d one along n (none).
  std::string mv = kernel_text(code, "mv_k0");
  EXPECT_TRUE(contains(mv, "return args.buf[1] + b_base + k;"));
  EXPECT_TRUE(contains(mv, "const long long out = b0 * 17LL + m;"));
  EXPECT_TRUE(contains(mv, "constexpr bool kLoadBAlongK = true;"));
  EXPECT_EQ(variant_of(mv), "inner 1, block 64x64, tile_k 32, stages 4, vectors true/true") << "17 rows";
  std::string vm = kernel_text(code, "vm_k0");
  EXPECT_TRUE(contains(vm, "return args.buf[0] + a_base + k;"));
  EXPECT_TRUE(contains(vm, "const long long out = b0 * 24LL + n;"));
  EXPECT_EQ(variant_of(vm), "inner 1, block 64x64, tile_k 32, stages 2, vectors true/true") << "1 row";
  std::string dot = kernel_text(code, "dot_k0");
  EXPECT_TRUE(contains(dot, "const long long out = 0;"));
  EXPECT_TRUE(contains(dot, "skinny_gemm_main(args);")) << "one element, one row: the skinny template";
  // K = 70 and N = 5 are not multiples of 4: element loads, 16-deep slices.
  std::string m1 = kernel_text(code, "m1_k0");
  EXPECT_TRUE(contains(m1, "return args.buf[0] + a_base + m * 70LL + k;"));
  EXPECT_TRUE(contains(m1, "return args.buf[1] + b_base + k * 5LL + n;"));
  // One block, 9 slices: split-K by 4 (sm_90 clusters).
  EXPECT_EQ(variant_of(m1), "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false, split 4");
}

TEST(CodegenGemm, ConvHooks) {
  GeneratedCode code = generate(plans_of(kContractions));
  // Implicit GEMM: batch = (sample, conv group), m = (oh, ow), n = channel of
  // the group, k = (c, kh, kw); A gathered along m with zero padding (a null
  // address). 4 columns of depth 18 take the narrow template (one row per
  // thread); its hooks are the same text as gemm.cu's.
  std::string conv = kernel_text(code, "conv_k0");
  EXPECT_TRUE(contains(conv, "narrow_gemm_main(args);"));
  EXPECT_EQ(constant_of(conv, "kCols"), "4") << "8 / 2 channels per group";
  EXPECT_EQ(constant_of(conv, "kDepth"), "18") << "2 * 3 * 3";
  EXPECT_EQ(constant_of(conv, "kASplit"), "false") << "padding: a_address() checks bounds";
  EXPECT_EQ(constant_of(conv, "kStatsGroup"), "0");
  EXPECT_TRUE(contains(conv, "return (args.dim[0] * 2LL);")) << "batches = N * groups";
  EXPECT_TRUE(contains(conv, "return 180LL;")) << "rows = 9 * 20 output positions";
  EXPECT_TRUE(contains(conv, "return (batch / 2LL) * 1440LL + (batch % 2LL) * 720LL;"));
  EXPECT_TRUE(contains(conv, "return (batch % 2LL) * 72LL;"));
  EXPECT_TRUE(contains(conv, "const int ih = oh * 2 - 1 + i * 2;"));
  EXPECT_TRUE(contains(conv, "const int iw = ow - 2 + j;"));
  EXPECT_TRUE(contains(conv, "if (ih < 0 || ih >= 20 || iw < 0 || iw >= 18) return nullptr; // zero padding"));
  EXPECT_TRUE(contains(conv, "return args.buf[0] + a_base + c * 360 + ih * 18 + iw;"));
  EXPECT_TRUE(contains(conv, "return args.buf[1] + b_base + n * 18LL + k;"));
  EXPECT_FALSE(contains(conv, "__ldg(args.buf"));
  EXPECT_TRUE(contains(conv, "const long long o = (batch % 2LL) * 4LL + n;"));
  EXPECT_TRUE(contains(conv, "const float v4 = acc + args.buf[2][o];"));
  EXPECT_TRUE(contains(conv, "args.buf[3][o]")) << "scale [8, 1, 1] by channel";
  // 72 columns per group are past the narrow template: gemm.cu, whose
  // gathered operands are never 16-byte vectors.
  std::string wide = kernel_text(code, "conv_wide_k0");
  EXPECT_TRUE(contains(wide, "gemm_main(args);"));
  EXPECT_FALSE(contains(wide, "narrow_gemm_main"));
  EXPECT_TRUE(contains(wide, "constexpr bool kLoadAAlongK = false;"));
  EXPECT_TRUE(contains(wide, "constexpr bool kLoadBAlongK = true;"));
  EXPECT_TRUE(contains(wide, "return 72LL;")) << "cols = 144 / 2 channels per group";
  EXPECT_TRUE(contains(wide, "return 18LL;")) << "depth = 2 * 3 * 3";
  EXPECT_TRUE(contains(wide, "return (batch % 2LL) * 1296LL;"));
  EXPECT_TRUE(contains(wide, "if (ih < 0 || ih >= 20 || iw < 0 || iw >= 18) return nullptr; // zero padding"));
  EXPECT_EQ(variant_of(wide), "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false") << "N symbolic";
  // 1x1 kernel without padding: no tap decoding, no bounds checks; unbatched.
  // K = 12 and the weight rows are multiples of 4, still element loads (fewer
  // than 16 channels: no channels-last copies).
  std::string conv1x1 = kernel_text(code, "conv1x1_k0");
  EXPECT_TRUE(contains(conv1x1, "const int c = kq, i = 0, j = 0;"));
  EXPECT_FALSE(contains(conv1x1, "zero padding"));
  EXPECT_TRUE(contains(conv1x1, "return args.buf[0] + a_base + c * 63 + ih * 7 + iw;"));
  EXPECT_TRUE(contains(conv1x1, "return 1LL;")) << "one batch";
  EXPECT_TRUE(contains(conv1x1, "const long long out = o * 63LL + oh * 7LL + ow;"));
  EXPECT_EQ(variant_of(conv1x1), "inner 1, block 64x64, tile_k 8, stages 2, vectors false/false")
      << "63 x 70 outputs: 2 blocks of 64x64, fewer of any larger block";
}

// A convolution over 16+ input channels per group reads channels-last copies
// of its input and weight that two passes before it write (bench/NOTES.md
// v44): both operands 16-byte vectors along k, A's rows gathered per copy.
// A transposed one's weight is copied per output phase, zero-padded.
TEST(CodegenGemm, ConvolutionsOverManyChannelsReadChannelsLastCopies) {
  std::vector<Plan> plans = plans_of(R"(
fusion forward {
  input x : f32[N, 32, 12, 13]
  param w : f32[80, 16, 3, 3]
  output y = conv2d(x, w, padding=1, groups=2)
}
fusion transposed {
  input x : f32[N, 32, 5, 6, 7]
  param w : f32[32, 72, 3, 2, 3]
  output y = conv_transpose3d(x, w, stride=(2, 1, 3), padding=1)
}
)");
  ASSERT_EQ(plans.size(), 2u);
  for (const Plan& plan : plans) {
    const KernelStep& step = plan.kernels.at(0);
    ASSERT_NE(step.a_layout, kNoId) << plan.fusion.name;
    ASSERT_NE(step.b_layout, kNoId) << plan.fusion.name;
    EXPECT_EQ(plan.buffer(step.a_layout).role, PlanBuffer::Role::Scratch);
  }
  EXPECT_EQ(shape_str(plans[0].buffer(plans[0].kernels[0].a_layout).shape), "[N, 12, 13, 32]");
  EXPECT_EQ(shape_str(plans[0].buffer(plans[0].kernels[0].b_layout).shape), "[80, 3, 3, 16]");
  // 6 phases (2 x 1 x 3), each with 2 x 2 x 1 taps of 32 channels, 72 columns.
  EXPECT_EQ(shape_str(plans[1].buffer(plans[1].kernels[0].b_layout).shape),
            "[" + std::to_string(6 * 4 * 32 * 72) + "]");
  for (Precision precision : {Precision::Strict, Precision::TF32}) {
    GeneratedCode code = generate(plans, precision);
    for (const char* kernel : {"forward_k0", "transposed_k0"}) {
      std::string text = kernel_text(code, kernel);
      EXPECT_TRUE(contains(variant_of(text), "vectors true/true")) << kernel;
      EXPECT_TRUE(contains(text, "constexpr bool kAAffine = false;")) << kernel;
      EXPECT_TRUE(contains(text, "constexpr bool kLoadAAlongK = true;")) << kernel;
    }
    for (size_t f = 0; f < 2; ++f) {
      const std::vector<KernelLaunch>& launches = code.fusions[f].kernels;
      ASSERT_EQ(launches.size(), 3u) << "two copies, then the GEMM";
      EXPECT_TRUE(contains(launches[0].name, "_channels_last")) << launches[0].name;
      EXPECT_TRUE(contains(launches[1].name, "_channels_last")) << launches[1].name;
      EXPECT_EQ(launches[2].kind, KernelKind::Gemm);
    }
  }
  // Fewer than 16 channels per group: the gathered operands, no copies.
  std::vector<Plan> few = plans_of("fusion f {\n  input x : f32[N, 12, 9, 9]\n  param w : f32[80, 12, 3, 3]\n"
                                   "  output y = conv2d(x, w)\n}\n");
  EXPECT_EQ(few.at(0).kernels.at(0).a_layout, kNoId);
}

TEST(CodegenGemm, LaunchGeometry) {
  // Grid = (ceil(cols / kBlockN), ceil(rows / kBlockM), batches); every
  // kernel uses tensor cores and dynamic shared memory of
  // kDynamicSharedFloats floats.
  GeneratedCode code = generate(plans_of(kContractions, {{"N", 130}, {"B", 3}, {"S", 5}}));
  using G = std::array<std::optional<int64_t>, 3>;
  auto grid = [&](size_t fusion, int threads = 256) {
    const KernelLaunch& launch = launch_of(code, fusion, 0);
    EXPECT_EQ(launch.block, threads);
    EXPECT_TRUE(launch.fills.empty());
    return G{launch.grid[0].value, launch.grid[1].value, launch.grid[2].value};
  };
  auto block = [&](const char* kernel) {
    std::string text = kernel_text(code, kernel);
    return constant_of(text, "kBlockM") + "x" + constant_of(text, "kBlockN");
  };
  // Few blocks of any size: the smallest block, and split-K into clusters
  // along x where k has enough slices (two per block at least).
  EXPECT_EQ(grid(0), (G{2, 3, 1})) << "lin_nobias: 48 columns, 130 rows, 4 slices of 32: split by 2";
  EXPECT_EQ(block("lin_nobias_k0"), "64x64") << "2 blocks of 128x64 < 3 of 64x64";
  EXPECT_EQ(grid(1, 32), (G{64, 1, 1})) << "lin3d: 15 rows, the skinny template: 2 tiles of 8 rows, a column "
                                           "per block, one warp";
  EXPECT_EQ(launch_of(code, 1, 0).template_file, "skinny_gemm.cu");
  EXPECT_EQ(grid(3), (G{1, 1, 9})) << "bmm: 3 * 3 batches";
  EXPECT_EQ(block("bmm_k0"), "64x64");
  EXPECT_EQ(grid(7), (G{4, 1, 1})) << "m1: 9 slices of 8, split by 4";
  // The narrow template: one row per thread, 128 rows per block.
  EXPECT_EQ(grid(8, 128), (G{1, 2, 260})) << "conv: 180 positions, 130 samples * 2 groups";
  EXPECT_EQ(launch_of(code, 8, 0).shared_bytes, 0) << "static shared memory only";
  EXPECT_EQ(launch_of(code, 8, 0).template_file, "narrow_gemm.cu");
  // Gathered operands take 64x64 blocks: 180 positions in 3 row blocks.
  EXPECT_EQ(grid(10), (G{2, 3, 260})) << "conv_wide: 72 channels, 180 positions, 130 samples * 2 groups";
  EXPECT_EQ(block("conv_wide_k0"), "64x64");
  EXPECT_EQ(launch_of(code, 10, 0).template_file, "gemm.cu");
  EXPECT_EQ(grid(9), (G{2, 1, 1})) << "conv1x1: 70 channels";
  EXPECT_EQ(block("conv1x1_k0"), "64x64");
  for (const char* kernel : {"lin_nobias_k0", "bmm_k0", "mv_k0", "vm_k0", "m1_k0", "conv1x1_k0", "conv_wide_k0"}) {
    size_t fusion = 0;
    while (fusion < code.fusions.size() && "fusegen_" + std::string(kernel) != code.fusions[fusion].kernels.at(0).name)
      ++fusion;
    ASSERT_LT(fusion, code.fusions.size()) << kernel;
    expect_dynamic_shared_memory(code, fusion, kernel);
  }
  // Symbolic: launcher expressions over 128-row blocks (the largest strict
  // block), rows and batches clamped to [1, 65535].
  GeneratedCode symbolic = generate(plans_of(kContractions));
  const KernelLaunch& lin = launch_of(symbolic, 0, 0);
  EXPECT_EQ(lin.grid[0].value, 1) << "48 columns";
  EXPECT_FALSE(lin.grid[1].value);
  EXPECT_EQ(lin.grid[1].c,
            "((((N) + 127) / 128) < 1LL ? 1LL : ((((N) + 127) / 128) > 65535LL ? 65535LL : (((N) + 127) / 128)))");
  EXPECT_EQ(launch_of(symbolic, 8, 0).grid[1].value, 2) << "conv: 180 positions in 128-row blocks";
  EXPECT_EQ(launch_of(symbolic, 10, 0).grid[1].value, 3) << "conv_wide: 180 positions in 64-row blocks";
  EXPECT_EQ(launch_of(symbolic, 8, 0).grid[2].c,
            "(((N) * 2LL) < 1LL ? 1LL : (((N) * 2LL) > 65535LL ? 65535LL : ((N) * 2LL)))");
  expect_dynamic_shared_memory(symbolic, 0, "lin_nobias_k0");
  expect_dynamic_shared_memory(symbolic, 10, "conv_wide_k0");
}

TEST(CodegenGemm, DeterministicAndStrictAndTf32UseDifferentInnerProducts) {
  std::vector<Plan> plans = plans_of(kContractions);
  GeneratedCode strict = generate(plans);
  EXPECT_EQ(strict.source, generate(plans).source);
  GeneratedCode tf32 = generate(plans, Precision::TF32);
  EXPECT_EQ(tf32.source, generate(plans, Precision::TF32).source);
  // Strict precision: 3xTF32 (1); tf32 precision: plain TF32 (2), the
  // template's only inner products.
  // (lin1d and dot have one known row: the skinny template's fp32 FMAs.)
  for (const char* kernel :
       {"lin_nobias_k0", "lin3d_k0", "bmm_k0", "mv_k0", "vm_k0", "m1_k0", "conv1x1_k0", "conv_wide_k0"}) {
    EXPECT_EQ(constant_of(kernel_text(strict, kernel), "kInnerProduct"), "1") << kernel << " strict";
    EXPECT_EQ(constant_of(kernel_text(tf32, kernel), "kInnerProduct"), "2") << kernel << " tf32";
  }
  // The narrow template's fp32 FMAs serve both precisions alike.
  EXPECT_EQ(kernel_text(strict, "conv_k0"), kernel_text(tf32, "conv_k0"));
  EXPECT_FALSE(contains(strict.source, "constexpr int kInnerProduct = 0;"));
  EXPECT_FALSE(contains(tf32.source, "constexpr int kInnerProduct = 0;"));
  // 48 columns: a 128-column block would be half empty, so tf32 takes
  // 128x64 too, with the same hooks otherwise.
  std::string lin = kernel_text(tf32, "lin_nobias_k0");
  EXPECT_EQ(variant_of(lin), "inner 2, block 128x64, tile_k 32, stages 5, vectors true/true");
  std::string strict_lin = kernel_text(strict, "lin_nobias_k0");
  size_t at = strict_lin.find("constexpr int kInnerProduct = 1;");
  ASSERT_NE(at, std::string::npos);
  strict_lin.replace(at, std::string("constexpr int kInnerProduct = 1;").size(), "constexpr int kInnerProduct = 2;");
  // Shared memory, the larger of the mma.sync and wgmma layouts. Strict: 4
  // stages of 192 rows x 36 floats (27648) or 4 of 192 x 32 plus the small
  // parts of B (64 x 32) for two slices and 256 floats of alignment slack
  // (28928). tf32: 5
  // stages (wgmma keeps one group of products in flight) of 192 x 36 (34560)
  // or 192 x 32 plus the slack (30976).
  const std::string strict_shared = constant_of(strict_lin, "kDynamicSharedFloats");
  const std::string tf32_shared = constant_of(lin, "kDynamicSharedFloats");
  EXPECT_EQ(strict_shared, "28928");
  EXPECT_EQ(tf32_shared, "34560");
  at = strict_lin.find("constexpr int kStages = 4;");
  ASSERT_NE(at, std::string::npos);
  strict_lin.replace(at, std::string("constexpr int kStages = 4;").size(), "constexpr int kStages = 5;");
  at = strict_lin.find("constexpr int kDynamicSharedFloats = " + strict_shared + ";");
  ASSERT_NE(at, std::string::npos);
  strict_lin.replace(at, ("constexpr int kDynamicSharedFloats = " + strict_shared + ";").size(),
                     "constexpr int kDynamicSharedFloats = " + tf32_shared + ";");
  EXPECT_EQ(strict_lin, lin) << "strict and tf32 differ only in kInnerProduct, kStages and the shared memory";
}

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
  input x : f32[N, 12, 34, 34]
  param w : f32[64, 12, 4, 4]
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
// known columns (32 in tf32 precision) and a depth of at most 128 whose
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
  EXPECT_EQ(launch_of(code, 0, 0).grid[1].value, std::optional<int64_t>(8)) << "900 positions in 128-row blocks";
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

// ---- fused row norms and row reductions ----

constexpr const char* kRowStages = R"(
fusion ln {
  input x : f32[N, 80]
  param w : f32[64, 80]
  param b : f32[64]
  param lw : f32[64]
  param lb : f32[64]
  h = linear(x, w, b)
  h = layer_norm(h, normalized_shape=64, weight=lw, bias=lb, eps=1e-5)
  output y = gelu(h)
}
fusion gn_min {
  input x : f32[N, 45]
  param w : f32[256, 45]
  param b : f32[256]
  param gw : f32[256]
  param gb : f32[256]
  h = linear(x, w, b)
  h = group_norm(h, num_groups=8, weight=gw, bias=gb, eps=1e-5)
  output m = min(h, dim=1, keepdim=true)
}
fusion gn_max {
  input x : f32[N, 37]
  param w : f32[37, 128]
  h = matmul(x, w)
  h = group_norm(h, num_groups=4, eps=1e-3)
  h = relu(h)
  output y = max(h, dim=1)
}
fusion gn_amax {
  input x : f32[N, 33]
  param w : f32[96, 33]
  h = linear(x, w)
  h = group_norm(h, num_groups=24)
  output y = amax(h, dim=1, keepdim=true)
}
fusion gn_single {
  input x : f32[N, 20]
  param w : f32[72, 20]
  output y = group_norm(linear(x, w), num_groups=72)
}
)";

TEST(CodegenGemm, RowStagesCompile) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 70}}}) {
    std::vector<Plan> plans = plans_of(kRowStages, dims);
    ASSERT_EQ(plans.size(), 5u);
    for (const Plan& plan : plans) {
      ASSERT_EQ(kinds_of(plan), std::vector<KernelKind>{KernelKind::Gemm}) << plan.fusion.name;
      EXPECT_GE(plan.kernels[0].stages.size(), 2u) << plan.fusion.name << ": the norm is fused";
    }
    expect_gemm_compiles(plans, Precision::Strict, dims.empty() ? "row_stages" : "row_stages_dims", dims.empty());
  }
}

TEST(CodegenGemm, RowNormAndReductionHooks) {
  GeneratedCode code = generate(plans_of(kRowStages, {{"N", 70}}));
  std::string ln = kernel_text(code, "ln_k0");
  EXPECT_TRUE(contains(ln, "constexpr int kNormGroup = 64;"));
  EXPECT_TRUE(contains(ln, "constexpr float kNormEps = 9.99999975e-06f;"));
  EXPECT_TRUE(contains(ln, "const float v6 = normalized * args.buf[3][n] + args.buf[4][n];"));
  EXPECT_TRUE(contains(ln, "fusegen_gelu(v6)"));
  EXPECT_TRUE(contains(ln, "constexpr int kRowReduce = 0;"));
  EXPECT_TRUE(launch_of(code, 0, 0).fills.empty());

  // min: +inf fill of the [N, 1] result, combined per row with atomics.
  std::string gn_min = kernel_text(code, "gn_min_k0");
  EXPECT_TRUE(contains(gn_min, "constexpr int kNormGroup = 32;"));
  EXPECT_TRUE(contains(gn_min, "constexpr int kRowReduce = 1;"));
  EXPECT_TRUE(contains(gn_min, "return args.buf[5] + m;"));
  const KernelLaunch& min_launch = launch_of(code, 1, 0);
  ASSERT_EQ(min_launch.fills.size(), 1u);
  EXPECT_EQ(min_launch.fills[0].buffer, 5u);
  EXPECT_EQ(min_launch.fills[0].value, std::numeric_limits<float>::infinity());
  EXPECT_EQ(min_launch.grid[0].value, 8) << "256 columns, 6 slices of 8 split by 2";
  EXPECT_EQ(min_launch.grid[1].value, 2) << "70 rows";

  // max over relu(group_norm) without affine params: -inf fill.
  std::string gn_max = kernel_text(code, "gn_max_k0");
  EXPECT_TRUE(contains(gn_max, "constexpr int kRowReduce = 2;"));
  EXPECT_TRUE(contains(gn_max, "constexpr float kNormEps = 0.00100000005f;"));
  EXPECT_TRUE(contains(gn_max, "const float v4 = fusegen_relu(normalized);"));
  EXPECT_TRUE(contains(gn_max, "return v4;"));
  ASSERT_EQ(launch_of(code, 2, 0).fills.size(), 1u);
  EXPECT_EQ(launch_of(code, 2, 0).fills[0].value, -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(contains(kernel_text(code, "gn_amax_k0"), "constexpr int kRowReduce = 2;"));
  EXPECT_TRUE(contains(kernel_text(code, "gn_amax_k0"), "constexpr int kNormGroup = 4;"));
  // One channel per group (variance 0) and a ragged 72-wide row: stores the norm.
  std::string single = kernel_text(code, "gn_single_k0");
  EXPECT_TRUE(contains(single, "constexpr int kNormGroup = 1;"));
  EXPECT_TRUE(contains(single, "args.buf[2][out] = normalized;"));
}

// ---- partial statistics ----

constexpr const char* kStatistics = R"(
fusion bn {
  input x : f32[N, 50]
  param w : f32[50, 72]
  param g : f32[72]
  param bb : f32[72]
  state rm : f32[72]
  state rv : f32[72]
  h = sigmoid(matmul(x, w))
  output y = batch_norm(h, rm, rv, weight=g, bias=bb, training=true, momentum=0.1, eps=1e-5)
}
fusion conv_gn {
  input x : f32[N, 4, 15, 13]
  param w : f32[16, 2, 3, 3]
  param b : f32[16]
  h = conv2d(x, w, b, padding=1, groups=2)
  output y = group_norm(h, num_groups=4)
}
)";

TEST(CodegenGemm, StatisticsCompile) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 70}}}) {
    std::vector<Plan> plans = plans_of(kStatistics, dims);
    ASSERT_EQ(plans.size(), 2u);
    for (const Plan& plan : plans)
      ASSERT_NE(plan.kernels.at(0).stats_out, kNoId) << plan.fusion.name;
    expect_gemm_compiles(plans, Precision::Strict, dims.empty() ? "statistics" : "statistics_dims", dims.empty());
  }
}

TEST(CodegenGemm, StatisticsHooks) {
  GeneratedCode code = generate(plans_of(kStatistics));
  // batch_norm: one group per column; the triple of (row tile, column) in
  // partials [ceil(N / 64), 72, 3]; the sigmoid result is stored for the apply.
  std::string bn = kernel_text(code, "bn_k0");
  EXPECT_TRUE(contains(bn, "constexpr int kStatsGroup = 1;"));
  EXPECT_TRUE(contains(bn, "return args.buf[8] + (row_tile * 72LL + n) * 3;"));
  EXPECT_TRUE(contains(bn, "args.buf[7][out] = v7;"));
  EXPECT_TRUE(contains(bn, "return v7;"));
  // group_norm after a grouped conv: 4 channels per group; (sample, group,
  // row tile of 195 positions = 4 tiles) triples; channel from (conv group, n).
  std::string conv = kernel_text(code, "conv_gn_k0");
  EXPECT_TRUE(contains(conv, "constexpr int kStatsGroup = 4;"));
  EXPECT_TRUE(contains(conv, "const long long channel = (batch % 2LL) * 8LL + n;"));
  EXPECT_TRUE(contains(conv, "return args.buf[5] + ((sample * 4LL + channel / 4LL) * 4LL + row_tile) * 3;"));
}

TEST(CodegenGemm, KernelBenchSpecs) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  const std::string root = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/";
  for (const char* dir : {"", "small/"})
    for (const char* name : {"39_gemm_scale_batchnorm", "62_matmul_groupnorm_leakyrelu_sum",
                             "75_gemm_groupnorm_min_biasadd", "85_conv2d_groupnorm_scale_maxpool_clamp"}) {
      std::string spec = read_file(root + dir + name + ".fg");
      ASSERT_FALSE(spec.empty()) << dir << name;
      for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 128}}}) {
        std::string what = std::string(dir[0] ? "small_" : "") + name + (dims.empty() ? "" : "_dims");
        std::vector<Plan> plans = plans_of(spec, dims);
        ASSERT_EQ(plans.size(), 1u);
        ASSERT_EQ(plans[0].kernels.at(0).kind, KernelKind::Gemm) << what;
        GeneratedCode code = generate(plans);
        ASSERT_EQ(gemm_kernel_count(code), 1u) << what;
        std::string source = gemm_source(code);
        expect_compiles(source, what, dims.empty());
        if (dims.empty())
          expect_nvcc_clean(source, what, 1);
      }
    }
  // The fused stages each spec exercises.
  std::string text = read_file(root + "75_gemm_groupnorm_min_biasadd.fg");
  GeneratedCode code = generate(plans_of(text, {{"N", 128}}));
  std::string k0 = kernel_text(code, "gemm_groupnorm_min_biasadd_k0");
  EXPECT_TRUE(contains(k0, "constexpr int kNormGroup = 16;"));
  EXPECT_TRUE(contains(k0, "constexpr int kRowReduce = 1;"));
  // 128 rows x 8192 columns: 128 blocks of 128x64 are too few, 256 of 64x64.
  EXPECT_EQ(variant_of(k0), "inner 1, block 64x64, tile_k 32, stages 4, vectors true/true");
  EXPECT_EQ(launch_of(code, 0, 0).grid[0].value, 128);
  EXPECT_EQ(launch_of(code, 0, 0).grid[1].value, 2);
  expect_dynamic_shared_memory(code, 0, "gemm_groupnorm_min_biasadd_k0");
  // tf32 at N = 1024: 8 * 32 = 256 blocks of 128x256.
  code = generate(plans_of(text, {{"N", 1024}}), Precision::TF32);
  EXPECT_EQ(variant_of(kernel_text(code, "gemm_groupnorm_min_biasadd_k0")),
            "inner 2, block 128x256, tile_k 32, stages 4, vectors true/true");
  EXPECT_EQ(launch_of(code, 0, 0).grid[0].value, 32);
  EXPECT_EQ(launch_of(code, 0, 0).grid[1].value, 8);
  expect_dynamic_shared_memory(code, 0, "gemm_groupnorm_min_biasadd_k0");
  // 64 output channels of depth 72: the narrow template in strict precision
  // (128 rows per block), gemm.cu in tf32; partials per 64-row tile in both.
  const std::string spec85 = read_file(root + "85_conv2d_groupnorm_scale_maxpool_clamp.fg");
  code = generate(plans_of(spec85, {{"N", 128}}));
  std::string narrow = kernel_text(code, "conv2d_groupnorm_scale_maxpool_clamp_k0");
  EXPECT_EQ(constant_of(narrow, "kStatsGroup"), "4");
  EXPECT_EQ(constant_of(narrow, "kCols"), "64");
  EXPECT_EQ(launch_of(code, 0, 0).grid[1].value, 125) << "126 * 126 positions in 128-row blocks";
  EXPECT_TRUE(contains(narrow, ") * 249LL + row_tile) * 3;")) << "ceil(126 * 126 / 64) = 249 row tiles";
  code = generate(plans_of(spec85, {{"N", 128}}), Precision::TF32);
  std::string conv = kernel_text(code, "conv2d_groupnorm_scale_maxpool_clamp_k0");
  EXPECT_TRUE(contains(conv, "constexpr int kStatsGroup = 4;"));
  EXPECT_EQ(variant_of(conv), "inner 2, block 64x64, tile_k 8, stages 2, vectors false/false");
  EXPECT_EQ(launch_of(code, 0, 0).grid[0].value, 1) << "64 channels";
  EXPECT_EQ(launch_of(code, 0, 0).grid[1].value, 249) << "126 * 126 positions in 64-row blocks";
  EXPECT_EQ(launch_of(code, 0, 0).grid[2].value, 128) << "samples";
  EXPECT_TRUE(contains(conv, "+ row_tile) * 3;")) << "partials per 64-row tile";
  EXPECT_TRUE(contains(conv, ") * 249LL + row_tile) * 3;")) << "ceil(126 * 126 / 64) = 249 row tiles";
  expect_dynamic_shared_memory(code, 0, "conv2d_groupnorm_scale_maxpool_clamp_k0");
}

// A launch of full waves of 128x128 blocks (132 per wave) and a few blocks
// more leaves those to a split tail: a second launch whose clusters each
// take one of them (templates/gemm.cu "block_begin"); the first launch's
// blocks from there on return at once ("block_end").
TEST(CodegenGemm, SplitTailTakesAShortLastWave) {
  const std::string spec = read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/39_gemm_scale_batchnorm.fg");
  // 16384 rows: 128 x 32 = 4096 blocks, 31 waves and 4 blocks, split 8 ways.
  GeneratedCode code = generate(plans_of(spec, {{"N", 16384}}));
  ASSERT_EQ(code.fusions.at(0).kernels.size(), 5u) << "split_b, k0, k0_tail, k1, k2";
  const KernelLaunch& main = launch_of(code, 0, 1);
  const KernelLaunch& tail = launch_of(code, 0, 2);
  EXPECT_EQ(main.name, "fusegen_gemm_scale_batchnorm_k0");
  EXPECT_EQ(main.cluster, 1);
  EXPECT_EQ(main.grid[0].value, 32);
  EXPECT_EQ(main.grid[1].value, 128);
  EXPECT_EQ(tail.name, "fusegen_gemm_scale_batchnorm_k0_tail");
  EXPECT_EQ(tail.kind, KernelKind::Gemm);
  EXPECT_EQ(tail.cluster, 8);
  EXPECT_EQ(tail.grid[0].value, 32);
  EXPECT_EQ(tail.grid[1].value, 1);
  const std::string k0 = kernel_text(code, "gemm_scale_batchnorm_k0");
  const std::string k0_tail = kernel_text(code, "gemm_scale_batchnorm_k0_tail");
  EXPECT_EQ(constant_of(k0, "kBlockEnd"), "4092");
  EXPECT_EQ(constant_of(k0, "kBlockBegin"), "0");
  EXPECT_EQ(constant_of(k0_tail, "kBlockEnd"), "0");
  EXPECT_EQ(constant_of(k0_tail, "kBlockBegin"), "4092");
  EXPECT_EQ(variant_of(k0_tail), "inner 1, block 128x128, tile_k 32, stages 4, vectors true/true, split 8");
  EXPECT_EQ(std::to_string(tail.shared_bytes),
            std::to_string(std::stoll(constant_of(k0_tail, "kDynamicSharedFloats")) * 4));
  // It reads nothing the launch before it writes: it lets the next kernel
  // start first and waits for the grids before it last.
  EXPECT_TRUE(contains(k0_tail, "__cluster_dims__(kSplitK, 1, 1) fusegen_gemm_scale_batchnorm_k0_tail(const "
                                "FusegenArgs args) {\n  fusegen_grid_launch_dependents();\n  gemm_main(args);\n  "
                                "fusegen_grid_wait();\n}"))
      << k0_tail;
  EXPECT_TRUE(contains(code.source, "fusegen_gemm_scale_batchnorm_k0_tail<<<dim3((unsigned)32LL, (unsigned)1LL"));
  expect_compiles(gemm_source(code), "split_tail", false);
  expect_nvcc_clean(gemm_source(code), "split_tail", 2);
  // 600 rows: 5 x 32 = 160 blocks, one wave and 28: split 4 ways.
  code = generate(plans_of(spec, {{"N", 600}}));
  EXPECT_EQ(launch_of(code, 0, 1).cluster, 4);
  EXPECT_EQ(launch_of(code, 0, 1).grid[0].value, 112);
  EXPECT_EQ(constant_of(kernel_text(code, "gemm_scale_batchnorm_k0"), "kBlockEnd"), "132");
  // Not taken: 1024 rows (256 blocks, one wave and 124), tf32 (128x256
  // blocks), sm_80 (no clusters), a forced block, an unknown batch.
  auto kernels = [](const GeneratedCode& c) { return c.fusions.at(0).kernels.size(); };
  EXPECT_EQ(kernels(generate(plans_of(spec, {{"N", 1024}}))), 3u);
  EXPECT_EQ(kernels(generate(plans_of(spec, {{"N", 16384}}), Precision::TF32)), 3u);
  EXPECT_EQ(kernels(generate(plans_of(spec, {{"N", 16384}}), Precision::Strict, 80)), 3u);
  EXPECT_EQ(kernels(generate(plans_of(spec))), 3u);
  CodegenOptions forced;
  forced.gemm_block = GemmBlock{128, 128, 1};
  Result<GeneratedCode> plain = generate_cuda(plans_of(spec, {{"N", 16384}}), forced);
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(kernels(plain.value()), 4u) << "split_b, k0, k1, k2";
  EXPECT_EQ(constant_of(kernel_text(plain.value(), "gemm_scale_batchnorm_k0"), "kBlockEnd"), "0");
}

// On sm_90 tensor cores, where one block makes one output block, the grid is
// rastered: groups of 16 row blocks walked column by column
// (templates/gemm.cu "raster_rows"), the split tail the same way; not with
// split-K clusters or on sm_80 (not measured there).
TEST(CodegenGemm, RastersTensorCoreGridsOnSm90) {
  const std::string spec = read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/39_gemm_scale_batchnorm.fg");
  const GeneratedCode tail = generate(plans_of(spec, {{"N", 16384}}));
  EXPECT_EQ(constant_of(kernel_text(tail, "gemm_scale_batchnorm_k0"), "kRasterRows"), "16");
  EXPECT_EQ(constant_of(kernel_text(tail, "gemm_scale_batchnorm_k0_tail"), "kRasterRows"), "16");
  EXPECT_EQ(
      constant_of(kernel_text(generate(plans_of(spec, {{"N", 16384}}), Precision::TF32), "gemm_scale_batchnorm_k0"),
                  "kRasterRows"),
      "16");
  const GeneratedCode symbolic = generate(plans_of(spec));
  EXPECT_EQ(constant_of(kernel_text(symbolic, "gemm_scale_batchnorm_k0"), "kRasterRows"), "16")
      << "the kernel checks the batch and grid.y itself";
  CodegenOptions split;
  split.gemm_block = GemmBlock{128, 128, 2};
  Result<GeneratedCode> split_k = generate_cuda(plans_of(spec, {{"N", 256}}), split);
  ASSERT_TRUE(split_k) << split_k.error();
  EXPECT_EQ(constant_of(kernel_text(split_k.value(), "gemm_scale_batchnorm_k0"), "kSplitK"), "2");
  EXPECT_EQ(constant_of(kernel_text(split_k.value(), "gemm_scale_batchnorm_k0"), "kRasterRows"), "0");
  EXPECT_EQ(constant_of(
                kernel_text(generate(plans_of(spec, {{"N", 16384}}), Precision::Strict, 80), "gemm_scale_batchnorm_k0"),
                "kRasterRows"),
            "0");
  expect_compiles(gemm_source(tail), "raster", false);
}

// Chain 75 small (256 columns, 4 tiles): each tile stores its row minimum in
// a slot of its own and the bias add combines the 4 (no fill launch, no
// atomics); at 8192 columns the tiles combine it with atomics after a fill.
TEST(CodegenGemm, RowMinimumOverFewTilesIsPartialsTheReaderCombines) {
  const std::string small_spec =
      read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/small/75_gemm_groupnorm_min_biasadd.fg");
  for (int arch : {80, 90}) {
    SCOPED_TRACE("sm_" + std::to_string(arch));
    const GeneratedCode small = generate(plans_of(small_spec, {{"N", 128}}), Precision::Strict, arch);
    ASSERT_EQ(small.fusions.at(0).kernels.size(), 2u);
    EXPECT_TRUE(launch_of(small, 0, 0).fills.empty()) << "no +inf fill before the GEMM";
    const std::string gemm = kernel_text(small, "gemm_groupnorm_min_biasadd_k0");
    EXPECT_EQ(constant_of(gemm, "kRowReduceParts"), "true");
    EXPECT_TRUE(contains(gemm, "return args.buf[7] + (n / 64) * 128LL + m;")) << "slot [tile, row]";
    const std::string add = kernel_text(small, "gemm_groupnorm_min_biasadd_k1");
    EXPECT_TRUE(contains(add, "fusegen_minimum(fusegen_minimum(fusegen_minimum(args.buf[7][c2], args.buf[7][1LL * "
                              "128LL + c2]), args.buf[7][2LL * 128LL + c2]), args.buf[7][3LL * 128LL + c2])"))
        << add;
    expect_compiles(small.source, "row reduce parts", arch == 80);
  }
  const std::string large_spec =
      read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/75_gemm_groupnorm_min_biasadd.fg");
  const GeneratedCode large = generate(plans_of(large_spec, {{"N", 64}}));
  EXPECT_EQ(launch_of(large, 0, 0).fills.size(), 1u);
  EXPECT_EQ(constant_of(kernel_text(large, "gemm_groupnorm_min_biasadd_k0"), "kRowReduceParts"), "false");
}

// Chain 75's [N, 1] row minimum plus its [1, 8192, 1, 1] bias gives
// [1, 8192, N, 1]: consecutive elements step N, so the add runs four at a
// time along that dim (the [N, 1] minimum read as a float4, the bias once),
// though the last dim is 1. One element per thread in 32768 blocks took 42
// us for its 32 MB on the H100 (bench/NOTES.md v36).
TEST(CodegenGemm, ElementwiseVectorsAlongTheInnermostDimThatIsNotOne) {
  const std::string chain75 =
      read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/75_gemm_groupnorm_min_biasadd.fg");
  const GeneratedCode code = generate(plans_of(chain75, {{"N", 1024}}));
  const std::string add = kernel_text(code, "gemm_groupnorm_min_biasadd_k1");
  EXPECT_EQ(constant_of(add, "kVectorWidth"), "4");
  EXPECT_TRUE(contains(add, "const float4 in8 = *reinterpret_cast<const float4*>(args.buf[7] + c2);")) << add;
  EXPECT_TRUE(contains(add, "const float in5 = args.buf[5][c1];")) << add;
  EXPECT_TRUE(contains(add, "*reinterpret_cast<float4*>(args.buf[6] + index) = out0;")) << add;
  EXPECT_EQ(launch_of(code, 0, 1).grid[0].value, 8192) << "8M elements, 4 per thread";
  expect_compiles(code.source, "vector along N", false);
  // N = 1022 is not a multiple of 4: one element at a time.
  const GeneratedCode odd = generate(plans_of(chain75, {{"N", 1022}}));
  EXPECT_EQ(constant_of(kernel_text(odd, "gemm_groupnorm_min_biasadd_k1"), "kVectorWidth"), "1");
}

// A GEMM whose products read nothing a kernel before it in the call writes
// lets the next kernel start at once and waits for the one before only after
// its products, before its epilogue, and again at its end
// (templates/gemm.cu "wait_late"): chain 75's GEMM (8192 columns: its row
// minimum combined with atomics) runs its k loop beside the fill of its row
// minimum. Where a kernel before it writes its operand, or its own pass
// splits B first, it waits first.
TEST(CodegenGemm, WaitsLateWhereNoKernelBeforeItWritesWhatItReads) {
  auto entry_of = [](const std::string& text) { return text.substr(text.find("__global__ void")); };
  const std::string chain75 =
      read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/75_gemm_groupnorm_min_biasadd.fg");
  const GeneratedCode small = generate(plans_of(chain75, {{"N", 128}}));
  EXPECT_EQ(launch_of(small, 0, 0).fills.size(), 1u) << "+inf before the row minimum, launched before the GEMM";
  const std::string gemm = kernel_text(small, "gemm_groupnorm_min_biasadd_k0");
  EXPECT_EQ(constant_of(gemm, "kWaitLate"), "true");
  EXPECT_TRUE(contains(entry_of(gemm), "fusegen_grid_launch_dependents();\n  gemm_main(args);\n  fusegen_grid_wait();"))
      << entry_of(gemm);
  expect_compiles(gemm_source(small), "wait late", false);

  const std::string chain39 =
      read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/39_gemm_scale_batchnorm.fg");
  const GeneratedCode split_b = generate(plans_of(chain39, {{"N", 16384}}));
  for (const char* kernel : {"gemm_scale_batchnorm_k0", "gemm_scale_batchnorm_k0_tail"})
    EXPECT_EQ(constant_of(kernel_text(split_b, kernel), "kWaitLate"), "false") << kernel;
  EXPECT_TRUE(contains(entry_of(kernel_text(split_b, "gemm_scale_batchnorm_k0")),
                       "fusegen_grid_dependencies();\n  gemm_main(args);"));

  const GeneratedCode after_softmax = generate(plans_of(R"(
fusion f {
  input  x : f32[N, 64]
  param  w : f32[32, 64]
  h = softmax(x, dim=1)
  output y = linear(h, w)
}
)",
                                                        {{"N", 128}}));
  EXPECT_EQ(constant_of(kernel_text(after_softmax, "f_k1"), "kWaitLate"), "false");
}

// A training batch_norm fused into its GEMM (the planner's rule: one block
// holds every row) takes blocks one tile wide that hold all the rows, 128x64
// at 128 rows and 64x64 up to 64, split over k as any small launch; the
// block's running stats updates come through column_stats (templates/gemm.cu
// "column_norm"). A forced block that cannot hold the rows is refused.
TEST(CodegenGemm, FusedBatchNormTakesBlocksHoldingEveryRow) {
  const std::string spec =
      read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/small/39_gemm_scale_batchnorm.fg");
  const GeneratedCode rows128 = generate(plans_of(spec, {{"N", 128}}));
  ASSERT_EQ(gemm_kernel_count(rows128), 1u);
  const std::string k0 = kernel_text(rows128, "gemm_scale_batchnorm_k0");
  EXPECT_EQ(constant_of(k0, "kColumnNorm"), "true");
  EXPECT_EQ(constant_of(k0, "kBlockM"), "128");
  EXPECT_EQ(constant_of(k0, "kBlockN"), "64");
  EXPECT_EQ(constant_of(k0, "kSplitK"), "8");
  EXPECT_TRUE(contains(k0, "const FusegenWelford total{count, mean, m2};")) << k0;
  EXPECT_TRUE(contains(k0, "args.buf[6][n] = 0.899999976f * args.buf[6][n] + 0.100000001f * mean;")) << k0;
  EXPECT_EQ(launch_of(rows128, 0, 0).shared_bytes, std::stoll(constant_of(k0, "kDynamicSharedFloats")) * 4);
  expect_compiles(gemm_source(rows128), "column norm", false);
  EXPECT_EQ(constant_of(kernel_text(generate(plans_of(spec, {{"N", 64}})), "gemm_scale_batchnorm_k0"), "kBlockM"),
            "64");
  EXPECT_EQ(
      constant_of(kernel_text(generate(plans_of(spec, {{"N", 100}}), Precision::TF32, 80), "gemm_scale_batchnorm_k0"),
                  "kColumnNorm"),
      "true");
  CodegenOptions forced;
  forced.gemm_block = GemmBlock{64, 64, 8};
  Result<GeneratedCode> refused = generate_cuda(plans_of(spec, {{"N", 128}}), forced);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(contains(refused.error(), "a fused batch_norm takes blocks 64 columns wide that hold all 128 rows"))
      << refused.error();
  EXPECT_EQ(constant_of(kernel_text(generate(plans_of(spec, {{"N", 129}})), "gemm_scale_batchnorm_k0"), "kColumnNorm"),
            "false");
}

// A strict linear over 8192 rows or more (the planner's scratch) on wgmma
// splits its weight into tf32 parts in a pass before the GEMM, which copies
// the small parts per slice beside B instead of splitting B in every block
// (templates/gemm.cu "b_split"); elsewhere the scratch gets no memory.
TEST(CodegenGemm, WeightSplitOncePerCallForManyRows) {
  const std::string spec = read_file(std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/39_gemm_scale_batchnorm.fg");
  std::vector<Plan> plans = plans_of(spec, {{"N", 16384}});
  ASSERT_NE(plans.at(0).kernels.at(0).b_split, kNoId);
  const BufferId scratch = plans.at(0).kernels.at(0).b_split;
  EXPECT_EQ(plans.at(0).buffer(scratch).name, "tf32_small_w");
  EXPECT_EQ(plans.at(0).buffer(scratch).role, PlanBuffer::Role::Scratch);
  GeneratedCode code = generate(plans);
  const KernelLaunch& pass = launch_of(code, 0, 0);
  EXPECT_EQ(pass.name, "fusegen_gemm_scale_batchnorm_k0_split_b");
  EXPECT_EQ(pass.kind, KernelKind::Elementwise);
  EXPECT_EQ(pass.template_file, "elementwise.cu");
  const std::string split = kernel_text(code, "gemm_scale_batchnorm_k0_split_b");
  const std::string b = "args.buf[" + std::to_string(scratch) + "]";
  EXPECT_TRUE(contains(split, b + "[index] = fusegen_tf32_rest(args.buf[1][index]);")) << split;
  EXPECT_TRUE(contains(split, "return 16777216LL;")) << "4096 x 4096 weights";
  for (const char* kernel : {"gemm_scale_batchnorm_k0", "gemm_scale_batchnorm_k0_tail"}) {
    const std::string text = kernel_text(code, kernel);
    EXPECT_EQ(constant_of(text, "kBSplit"), "true") << kernel;
    EXPECT_TRUE(contains(text, "return " + b + " + n * 4096LL + k;")) << kernel;
    EXPECT_EQ(std::to_string(launch_named(code, 0, kernel).shared_bytes),
              std::to_string(std::stoll(constant_of(text, "kDynamicSharedFloats")) * 4));
  }
  auto scratch_bytes = [&](const GeneratedCode& c) {
    for (const WorkspaceSlot& slot : c.fusions.at(0).workspace)
      if (slot.buffer == scratch)
        return slot.bytes.value.value_or(-1);
    return int64_t{-1};
  };
  EXPECT_EQ(scratch_bytes(code), int64_t{4096} * 4096 * 4);
  expect_compiles(gemm_source(code), "b_split", false);
  expect_nvcc_clean(gemm_source(code), "b_split", 2);
  // Not used in tf32 precision or on sm_80: no pass, no memory.
  for (const GeneratedCode& other : {generate(plans, Precision::TF32), generate(plans, Precision::Strict, 80)}) {
    EXPECT_EQ(scratch_bytes(other), 0);
    EXPECT_EQ(constant_of(kernel_text(other, "gemm_scale_batchnorm_k0"), "kBSplit"), "false");
  }
  // Fewer rows: no scratch.
  EXPECT_EQ(plans_of(spec, {{"N", 8191}}).at(0).kernels.at(0).b_split, kNoId);
}

// ---- plans the GEMM kernel cannot fuse stay unfused ----
// The planner fuses a normalization into the GEMM only where the tile can
// compute its statistics; otherwise it runs as its own kernel.

TEST(CodegenGemm, NormOverBatchedMatrixVectorResultIsNotFused) {
  // [B, 16, 40] x [40] gives [B, 16]: its "columns" are GEMM rows.
  std::vector<Plan> plans = plans_of(R"(
fusion mv_gn {
  input a : f32[B, 16, 40]
  input v : f32[40]
  output y = group_norm(matmul(a, v), num_groups=4)
}
)",
                                     {});
  ASSERT_EQ(plans[0].kernels.size(), 2u);
  EXPECT_EQ(plans[0].kernels[1].kind, KernelKind::RowReduce);
  generate(plans);
}

TEST(CodegenGemm, GroupNormStraddlingConvGroupsIsNotSplitIntoTheConv) {
  std::vector<Plan> plans = plans_of(R"(
fusion conv_gn_straddle {
  input x : f32[N, 4, 10, 10]
  param w : f32[12, 2, 3, 3]
  output y = group_norm(conv2d(x, w, groups=2), num_groups=3)
}
)",
                                     {});
  ASSERT_EQ(plans[0].kernels.size(), 2u);
  EXPECT_EQ(plans[0].kernels[0].stats_out, kNoId);
  EXPECT_EQ(plans[0].kernels[1].kind, KernelKind::RowReduce);
  generate(plans);
}

} // namespace
} // namespace fusegen
