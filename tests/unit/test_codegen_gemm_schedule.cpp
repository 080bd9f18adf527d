// Code generation for GEMM kernels: how launches are scheduled and what
// runs beside the products: the split tail of a short last wave, rastered
// grids on sm_90, row minimum partials, float4 element-wise readers, the
// late wait for the kernel before, fused batch_norm blocks and the weight
// split once per call. The hooks are in test_codegen_gemm.cpp.

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

// A strict convolution over many output positions splits its weight's dense
// channels-last copy once per call, in the pass that writes the copy; B's
// small parts mirror the copy, so they are read where b_address reads
// (groups: each group's slice).
TEST(CodegenGemm, ConvolutionSplitsItsDenseWeightCopyOncePerCall) {
  const std::string spec = R"(
fusion conv {
  input x : f32[N, 64, 34, 34]
  param w : f32[128, 32, 3, 3]
  param b : f32[128]
  output y = relu(conv2d(x, w, b, groups=2))
}
)";
  std::vector<Plan> plans = plans_of(spec, {{"N", 16}}); // 16384 output positions: 128-row blocks
  const KernelStep& step = plans.at(0).kernels.at(0);
  ASSERT_NE(step.b_layout, kNoId);
  ASSERT_NE(step.b_split, kNoId);
  EXPECT_EQ(plans.at(0).buffer(step.b_split).name, "tf32_small_channels_last_w");
  GeneratedCode code = generate(plans);
  const std::string layout = "args.buf[" + std::to_string(step.b_layout) + "]";
  const std::string small = "args.buf[" + std::to_string(step.b_split) + "]";
  const std::string copy = kernel_text(code, "conv_k0_operand_copies"); // x's and w's
  EXPECT_TRUE(contains(copy, layout + "[index] = value;")) << copy;
  EXPECT_TRUE(contains(copy, small + "[index] = fusegen_tf32_rest(value);")) << copy;
  const std::string text = kernel_text(code, "conv_k0");
  EXPECT_EQ(constant_of(text, "kBSplit"), "true");
  EXPECT_TRUE(contains(text, "return " + small + " + (b_address(args, b_base, k, n) - " + layout + ");")) << text;
  // The copy runs before the GEMM, and no separate split pass.
  const std::vector<KernelLaunch>& launches = code.fusions.at(0).kernels;
  auto position = [&](const std::string& name) {
    for (size_t i = 0; i < launches.size(); ++i)
      if (launches[i].name == "fusegen_" + name)
        return static_cast<int>(i);
    return -1;
  };
  EXPECT_GE(position("conv_k0_operand_copies"), 0);
  EXPECT_LT(position("conv_k0_operand_copies"), position("conv_k0"));
  EXPECT_EQ(position("conv_k0_split_b"), -1);
  expect_compiles(gemm_source(code), "conv_b_split", false);
  // Fewer output positions, tf32, or FP16x3 products: split in the loop.
  EXPECT_EQ(plans_of(spec, {{"N", 7}}).at(0).kernels.at(0).b_split, kNoId);
  EXPECT_EQ(constant_of(kernel_text(generate(plans, Precision::TF32), "conv_k0"), "kBSplit"), "false");
}

} // namespace
} // namespace fusegen
