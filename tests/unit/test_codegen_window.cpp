// Code generation for window kernels (templates/window.cu, EmitWindow.cpp):
// max/avg/adaptive pooling with prologue and epilogue, padding, strides,
// uneven adaptive bins, 3-d inputs, symbolic and specialized dims, tiny and
// large windows, and the group_norm apply whose statistics are combined from
// a conv's partials (specs/kernelbench/85). Generated source is compiled
// with NVRTC for sm_80 and sm_90 and its key structure checked.
#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"
#include "support/Nvrtc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace fusegen {
namespace {

std::string read_source_file(const std::string& path) {
  std::ifstream in(std::string(FUSEGEN_SOURCE_DIR) + "/" + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The plan of the spec's only fusion, specialized when `dims` is not empty.
Plan plan_of(const std::string& text, const DimBindings& dims = {}) {
  SourceManager sources;
  uint32_t file = sources.add_buffer("test.fg", text);
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, file, diags);
  EXPECT_TRUE(module) << diags.render(sources);
  if (!module || module->fusions.size() != 1)
    return {};
  Fusion fusion = module->fusions[0];
  if (!dims.empty()) {
    std::optional<Fusion> concrete = specialize(fusion, dims, diags);
    EXPECT_TRUE(concrete) << diags.render(sources);
    if (!concrete)
      return {};
    fusion = *concrete;
  }
  return plan_fusion(fusion);
}

// Drops the kernels of other kinds (e.g. a GEMM whose emitter is elsewhere):
// the remaining kernels still read the buffers those would have written.
Plan only_kinds(Plan plan, std::vector<KernelKind> kinds) {
  std::erase_if(plan.kernels, [&](const KernelStep& step) {
    return std::find(kinds.begin(), kinds.end(), step.kind) == kinds.end();
  });
  return plan;
}

GeneratedCode generate(const Plan& plan) {
  CodegenOptions options;
  options.source_name = "test.fg";
  Result<GeneratedCode> code = generate_cuda({plan}, options);
  EXPECT_TRUE(code) << code.error();
  return code ? code.value() : GeneratedCode{};
}

std::string generate_error(const Plan& plan) {
  Result<GeneratedCode> code = generate_cuda({plan}, CodegenOptions{});
  return code ? std::string("(no error)") : code.error();
}

void expect_compiles(const GeneratedCode& code, const std::string& what) {
  if (!testing::have_nvrtc())
    return;
  for (int arch : {80, 90})
    EXPECT_EQ(testing::nvrtc_compile(code.source, what + ".cu", arch), "") << what << " for sm_" << arch;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const KernelLaunch& only_window(const GeneratedCode& code) {
  const auto& kernels = code.fusions.at(0).kernels;
  auto it =
      std::find_if(kernels.begin(), kernels.end(), [](const KernelLaunch& k) { return k.kind == KernelKind::Window; });
  EXPECT_NE(it, kernels.end());
  return *it;
}

// Every hook was replaced: no template default survives.
void expect_hooks_filled(const std::string& source) {
  EXPECT_FALSE(contains(source, "fusegen_window(")) << "entry not renamed";
  EXPECT_FALSE(contains(source, "args.buf[0][(plane * 8 + h) * 8 + w]")) << "default load_input left";
  EXPECT_FALSE(contains(source, "FUSEGEN_HOOK(\"")) << "hook annotation left";
}

constexpr const char* kMaxPool = R"(
fusion maxpool {
  input x : f32[N, 16, 33, 29]
  param bias : f32[16, 1, 1]
  h = relu(x + bias)
  h = max_pool2d(h, kernel_size=(3, 2), stride=(2, 3), padding=(1, 1))
  output y = sigmoid(h) * 2.0
}
)";

TEST(CodegenWindow, MaxPoolWithPrologueEpilogueStridePadding) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  Plan plan = plan_of(kMaxPool);
  ASSERT_EQ(plan.kernels.size(), 1u);
  ASSERT_EQ(plan.kernels[0].kind, KernelKind::Window);
  GeneratedCode code = generate(plan);
  expect_hooks_filled(code.source);
  expect_compiles(code, "maxpool");
  const std::string& s = code.source;
  EXPECT_TRUE(contains(s, "constexpr int kPoolMode = 0;"));
  EXPECT_TRUE(contains(s, "constexpr int kKernelH = 3;"));
  EXPECT_TRUE(contains(s, "constexpr int kKernelW = 2;"));
  EXPECT_TRUE(contains(s, "constexpr int kStrideW = 3;"));
  EXPECT_TRUE(contains(s, "constexpr int kPadH = 1;"));
  EXPECT_TRUE(contains(s, "constexpr int kOutH = 17;"));
  EXPECT_TRUE(contains(s, "constexpr int kOutW = 10;"));
  // Prologue on input coordinates (bias per channel), epilogue on outputs.
  EXPECT_TRUE(contains(s, "(plane / 16LL) * 15312LL + (plane % 16LL) * 957LL + h * 29LL + w))"));
  EXPECT_TRUE(contains(s, " + ((plane % 16LL)))"));
  EXPECT_TRUE(contains(s, "fusegen_relu("));
  EXPECT_TRUE(contains(s, "fusegen_sigmoid(pooled)"));
  EXPECT_TRUE(contains(s, "[plane * 170LL + oh * 10LL + ow] = "));
  // Symbolic N: the launch grid is an expression over N.
  const KernelLaunch& launch = only_window(code);
  EXPECT_FALSE(launch.grid[0].value);
  EXPECT_TRUE(contains(launch.grid[0].c, "N")) << launch.grid[0].c;
  EXPECT_EQ(launch.block, 256);
}

TEST(CodegenWindow, SpecializedDimsGiveConstantGrid) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  GeneratedCode code = generate(plan_of(kMaxPool, {{"N", 32}}));
  expect_compiles(code, "maxpool_n32");
  const KernelLaunch& launch = only_window(code);
  // 170 outputs per plane, 32 * 16 planes: 4 rounds of 256 would put 6
  // planes in a block, 86 blocks; too few to fill the GPU (1056), and so
  // are 171 blocks of 2 rounds, so one round: a plane per block.
  EXPECT_TRUE(contains(code.source, "constexpr int kPlanesPerBlock = 1;"));
  ASSERT_TRUE(launch.grid[0].value);
  EXPECT_EQ(*launch.grid[0].value, 32 * 16);
  EXPECT_EQ(launch.grid[1].value, 1);
  EXPECT_FALSE(contains(code.source, "args.dim["));
}

TEST(CodegenWindow, AvgPoolCountsPadding) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  GeneratedCode code = generate(plan_of(R"(
fusion avgpool {
  input x : f32[N, 8, 20, 20]
  output y = avg_pool2d(x * 0.5, kernel_size=5, stride=3, padding=2)
}
)"));
  expect_compiles(code, "avgpool");
  EXPECT_TRUE(contains(code.source, "constexpr int kPoolMode = 1;"));
  EXPECT_TRUE(contains(code.source, "constexpr int kPadW = 2;"));
  // 25 taps: two threads per output.
  EXPECT_TRUE(contains(code.source, "constexpr int kTeamSize = 2;"));
}

TEST(CodegenWindow, AdaptiveUnevenBins) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  GeneratedCode code = generate(plan_of(R"(
fusion adaptive {
  input x : f32[N, 4, 13, 11]
  output y = adaptive_avg_pool2d(tanh(x), output_size=(5, 3))
}
)"));
  expect_compiles(code, "adaptive");
  EXPECT_TRUE(contains(code.source, "constexpr int kPoolMode = 2;"));
  // Largest bins: 13 -> 5 rows gives spans of up to 4, 11 -> 3 columns up to 5.
  EXPECT_TRUE(contains(code.source, "constexpr int kKernelH = 4;"));
  EXPECT_TRUE(contains(code.source, "constexpr int kKernelW = 5;"));
  EXPECT_TRUE(contains(code.source, "tanhf(") || contains(code.source, "fusegen_tanh("));
}

TEST(CodegenWindow, AdaptiveOverSymbolicSpatialDims) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  const char* spec = R"(
fusion adaptive_hw {
  input x : f32[N, 6, H, W]
  output y = adaptive_avg_pool2d(x, output_size=1)
}
)";
  GeneratedCode code = generate(plan_of(spec));
  expect_compiles(code, "adaptive_hw");
  // H and W come from the launch; global pooling splits a window over the block.
  EXPECT_TRUE(contains(code.source, "constexpr int kKernelH = 0;"));
  EXPECT_TRUE(contains(code.source, "constexpr int kTeamSize = 256;"));
  // Specialized: the bin is the whole 40 x 40 plane, 1600 taps over 128 threads.
  GeneratedCode fixed = generate(plan_of(spec, {{"N", 2}, {"H", 40}, {"W", 40}}));
  expect_compiles(fixed, "adaptive_hw_fixed");
  EXPECT_TRUE(contains(fixed.source, "constexpr int kKernelH = 40;"));
  EXPECT_TRUE(contains(fixed.source, "constexpr int kTeamSize = 128;"));
}

TEST(CodegenWindow, ThreeDimInputAndTinyPlanes) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  GeneratedCode code = generate(plan_of(R"(
fusion pool3d {
  input x : f32[3, 17, 17]
  output y = max_pool2d(x, 2) + 1.0
}
)"));
  expect_compiles(code, "pool3d");
  EXPECT_TRUE(contains(code.source, " + (plane * 289LL + h * 17LL + w))"));
  EXPECT_EQ(only_window(code).grid[0].value, 1);

  GeneratedCode tiny = generate(plan_of(R"(
fusion tiny {
  input x : f32[N, 64, 8, 8]
  output y = max_pool2d(x, 4)
}
)"));
  expect_compiles(tiny, "tiny");
  // 4 outputs per plane: 256 planes share a block.
  EXPECT_TRUE(contains(tiny.source, "constexpr int kPlanesPerBlock = 256;"));
}

TEST(CodegenWindow, LargePlanesSplitOverBlocks) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  GeneratedCode code = generate(plan_of(R"(
fusion large {
  input x : f32[2, 3, 256, 256]
  output y = avg_pool2d(x, kernel_size=3, stride=1, padding=1)
}
)"));
  expect_compiles(code, "large");
  const KernelLaunch& launch = only_window(code);
  // 65536 outputs per plane in chunks of 256 one-thread teams: 4 rounds
  // would make 6 * 64 blocks, 2 rounds 6 * 128, both fewer than fill the GPU
  // (1056), so one round, 6 * 256.
  EXPECT_TRUE(contains(code.source, "constexpr int kTeamSize = 1;"));
  EXPECT_TRUE(contains(code.source, "constexpr int kOutputsPerBlock = 256;"));
  EXPECT_EQ(launch.grid[0].value, 6);
  EXPECT_EQ(launch.grid[1].value, 256);
}

TEST(CodegenWindow, AppliesFinalizedBatchNormInPrologue) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  Plan plan = plan_of(R"(
fusion bn_pool {
  input x : f32[N, 16, 32, 32]
  state rm : f32[16]
  state rv : f32[16]
  h = batch_norm(x, rm, rv)
  output y = max_pool2d(relu(h), 2)
}
)");
  GeneratedCode code = generate(only_kinds(plan, {KernelKind::Window}));
  expect_compiles(code, "bn_pool");
  // Statistics read from the finalized [C, 2] buffer, not combined in the block.
  EXPECT_TRUE(contains(code.source, "constexpr int kPlaneStats = 0;"));
  EXPECT_TRUE(contains(code.source, "[2 * (plane % 16LL) + 1]"));
}

TEST(CodegenWindow, RefusesPlanesBeyondIntIndexing) {
  std::string error = generate_error(plan_of(R"(
fusion huge {
  input x : f32[1, 1, 50000, 50000]
  output y = max_pool2d(x, 2)
}
)"));
  EXPECT_TRUE(contains(error, "max_pool2d over planes of more than 2147483647 elements is not supported")) << error;
}

// specs/kernelbench/85: conv2d -> group_norm (partials from the conv) ->
// scale -> max_pool2d -> clamp. The window kernel combines the partials.
void check_conv_groupnorm_pool(const Plan& plan, const std::string& what) {
  ASSERT_EQ(plan.kernels.size(), 2u);
  ASSERT_EQ(plan.kernels[1].kind, KernelKind::Window);
  GeneratedCode code = generate(only_kinds(plan, {KernelKind::Window}));
  expect_hooks_filled(code.source);
  expect_compiles(code, what);
  const std::string& s = code.source;
  EXPECT_TRUE(contains(s, "constexpr int kPlaneStats = 1;"));
  EXPECT_TRUE(contains(s, "constexpr float kStatsEps = 9.99999975e-06f;"));
  // 126 x 126 positions in row tiles of 64: 249 partials per (sample, group).
  EXPECT_TRUE(contains(s, "return 249LL;"));
  EXPECT_TRUE(contains(s, "+ ((plane / 64LL) * 16LL + (plane % 64LL) / 4LL) * 747LL;"));
  // The apply uses the block's statistics, then the affine params per channel.
  EXPECT_TRUE(contains(s, " - mean) * rstd)"));
  EXPECT_TRUE(contains(s, "fusegen_clamp(pooled, 0.0f, 1.0f)"));
}

TEST(CodegenWindow, GroupNormFromConvPartials85) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  std::string spec = read_source_file("specs/kernelbench/85_conv2d_groupnorm_scale_maxpool_clamp.fg");
  check_conv_groupnorm_pool(plan_of(spec), "kb85");
  Plan fixed = plan_of(spec, {{"N", 128}});
  check_conv_groupnorm_pool(fixed, "kb85_n128");
  GeneratedCode code = generate(only_kinds(fixed, {KernelKind::Window}));
  const KernelLaunch& launch = only_window(code);
  ASSERT_TRUE(launch.grid[0].value);
  EXPECT_EQ(*launch.grid[0].value, 128 * 64); // one plane (31 x 31 outputs) per block
  EXPECT_EQ(launch.grid[1].value, 1);
}

TEST(CodegenWindow, WholeKernelbench85WhenGemmExists) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  Plan plan = plan_of(read_source_file("specs/kernelbench/85_conv2d_groupnorm_scale_maxpool_clamp.fg"));
  Result<GeneratedCode> code = generate_cuda({plan}, CodegenOptions{});
  if (!code && contains(code.error(), "no emitter"))
    GTEST_SKIP() << code.error();
  ASSERT_TRUE(code) << code.error();
  expect_compiles(code.value(), "kb85_full");
}

} // namespace
} // namespace fusegen
