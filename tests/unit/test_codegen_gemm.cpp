// Code generation for GEMM kernels (templates/gemm.cu, EmitGemm.cpp): linear
// (with and without bias, 1-d and 3-d inputs), matmul (2-d, batched with
// broadcast batch dims, 1-d operands), conv2d as implicit GEMM (stride,
// padding, dilation, groups, unbatched), and the fused epilogue stages: a row
// group_norm / layer_norm, a row min / max after it (with its +-inf fill), and
// partial statistics for batch_norm and for group_norm after conv2d. Symbolic
// and specialized dims, ragged M, N and K, M = 1. Generated GEMM kernels are
// compiled with NVRTC for sm_80 and sm_90 and, where the toolkit has nvcc,
// with nvcc -Werror all-warnings, checking ptxas reports no spills; hook
// values, launch geometry and dynamic shared memory are checked; refusals
// name their reason. The template variant a kernel takes is in
// test_codegen_gemm_variants.cpp, its scheduling (split tail, rastering,
// late waits, the weight split) in test_codegen_gemm_schedule.cpp.
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
      ASSERT_EQ(launches.size(), 2u) << "one launch for both copies, then the GEMM";
      EXPECT_TRUE(contains(launches[0].name, "_operand_copies")) << launches[0].name;
      EXPECT_EQ(launches[1].kind, KernelKind::Gemm);
    }
  }
  // Copies of the call's arguments, for every convolution, run in one launch
  // before the first kernel; a copy of an intermediate runs right before the
  // convolution that reads it.
  std::vector<Plan> chained = plans_of(R"(
fusion two {
  input x : f32[N, 32, 12, 13]
  param w1 : f32[32, 32, 3, 3]
  param w2 : f32[32, 32, 3, 3]
  output y = conv2d(conv2d(x, w1, padding=1), w2, padding=1)
}
)");
  ASSERT_EQ(chained.at(0).kernels.size(), 2u);
  GeneratedCode code = generate(chained);
  std::vector<std::string> names;
  for (const KernelLaunch& launch : code.fusions.at(0).kernels)
    names.push_back(launch.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fusegen_two_k0_operand_copies", "fusegen_two_k0",
                                             "fusegen_two_k1_input_channels_last", "fusegen_two_k1"}));
  const std::string copies = kernel_text(code, "two_k0_operand_copies");
  for (BufferId layout :
       {chained[0].kernels[0].a_layout, chained[0].kernels[0].b_layout, chained[0].kernels[1].b_layout})
    EXPECT_TRUE(contains(copies, "args.buf[" + std::to_string(layout) + "][index] = value;")) << copies;
  EXPECT_FALSE(contains(copies, "args.buf[" + std::to_string(chained[0].kernels[1].a_layout) + "]")) << copies;
  expect_compiles(gemm_source(code), "chained_convolution_copies", false);
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
  EXPECT_EQ(grid(1), (G{1, 1, 1})) << "lin3d: 15 rows, the skinny template's tiled form: one block of 16 rows "
                                      "x 32 columns, k = 64 (two stages) too short to split";
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
  // mv: 3 batches of 17 rows along k, the skinny template's tiled form.
  EXPECT_EQ(launch_of(code, 4, 0).template_file, "skinny_gemm.cu");
  EXPECT_EQ(grid(4), (G{1, 1, 3}));
  for (const char* kernel : {"lin_nobias_k0", "bmm_k0", "vm_k0", "m1_k0", "conv1x1_k0", "conv_wide_k0"}) {
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
  EXPECT_TRUE(contains(single, "constexpr int kNormStores = 1;"));
  EXPECT_TRUE(contains(single, "stores.at[0] = args.buf[2] + out;"));
  EXPECT_TRUE(contains(single, "stores.value[0] = normalized;"));
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
  EXPECT_TRUE(contains(bn, "constexpr int kEpilogueStores = 1;"));
  EXPECT_TRUE(contains(bn, "stores.at[0] = args.buf[7] + out;"));
  EXPECT_TRUE(contains(bn, "stores.value[0] = v7;"));
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
