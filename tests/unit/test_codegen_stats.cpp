// Code generation for split-normalization statistics: column-statistics
// kernels (templates/column_stats.cu) computing batch_norm partials of a
// plain input, and stats-finalize kernels (templates/stats_finalize.cu)
// combining batch_norm partials (with the running-stat update) or group_norm
// partials. Generated source is compiled with NVRTC for sm_80 and sm_90 and
// its key structure checked.
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
  Result<GeneratedCode> code = generate_cuda({plan}, CodegenOptions{});
  EXPECT_TRUE(code) << code.error();
  return code ? code.value() : GeneratedCode{};
}

void expect_compiles(const GeneratedCode& code, const std::string& what) {
  if (!testing::have_nvrtc())
    return;
  for (int arch : {80, 90})
    EXPECT_EQ(testing::nvrtc_compile(code.source, what + ".cu", arch), "") << what << " for sm_" << arch;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const KernelLaunch& launch_of(const GeneratedCode& code, KernelKind kind) {
  const auto& kernels = code.fusions.at(0).kernels;
  auto it = std::find_if(kernels.begin(), kernels.end(), [&](const KernelLaunch& k) { return k.kind == kind; });
  EXPECT_NE(it, kernels.end()) << kernel_kind_name(kind);
  return *it;
}

// The text of one generated kernel instance (its namespace).
std::string kernel_text(const std::string& source, const std::string& kernel) {
  size_t begin = source.find("namespace " + kernel + "_impl {");
  size_t end = source.find("} // namespace " + kernel + "_impl");
  if (begin == std::string::npos || end == std::string::npos)
    return "";
  return source.substr(begin, end - begin);
}

constexpr const char* kBatchNorm2d = R"(
fusion bn_plain {
  input x : f32[N, 100]
  param w : f32[100]
  param b : f32[100]
  state rm : f32[100]
  state rv : f32[100]
  output y = relu(batch_norm(x, rm, rv, weight=w, bias=b, training=true, momentum=0.1, eps=1e-5))
}
)";

TEST(CodegenStats, BatchNormOnPlainInput) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  Plan plan = plan_of(kBatchNorm2d);
  ASSERT_EQ(plan.kernels.size(), 3u);
  EXPECT_EQ(plan.kernels[0].kind, KernelKind::ColumnStats);
  EXPECT_EQ(plan.kernels[1].kind, KernelKind::StatsFinalize);
  EXPECT_EQ(plan.kernels[2].kind, KernelKind::Elementwise);
  GeneratedCode code = generate(plan);
  expect_compiles(code, "bn_plain");
  std::string stats = kernel_text(code.source, "fusegen_bn_plain_k0");
  EXPECT_FALSE(contains(code.source, "fusegen_column_stats(")) << "entry not renamed";
  EXPECT_FALSE(contains(code.source, "fusegen_stats_finalize(")) << "entry not renamed";
  // [N, C]: channels across lanes, 64-row tiles.
  EXPECT_TRUE(contains(stats, "constexpr int kColumnMode = 1;"));
  EXPECT_TRUE(contains(stats, "constexpr int kTileM = 64;"));
  EXPECT_TRUE(contains(stats, "return 100LL;"));
  std::string finalize = kernel_text(code.source, "fusegen_bn_plain_k1");
  EXPECT_TRUE(contains(finalize, "return ((args.dim[0] + 63LL) / 64LL);")) << "partials per channel";
  EXPECT_TRUE(contains(finalize, "(part * 100LL + row) * 3"));
  EXPECT_TRUE(contains(finalize, "1.0f / sqrtf(fmaxf(total.m2 / total.count, 0.0f) + 9.99999975e-06f)"));
  // Running stats updated in place like torch: momentum-weighted, unbiased variance.
  EXPECT_TRUE(contains(finalize, "= 0.899999976f * args.buf[3][row] + 0.100000001f * mean;"));
  EXPECT_TRUE(contains(finalize, "= 0.899999976f * args.buf[4][row] + 0.100000001f * (total.m2 / (total.count - 1.0f));"));
  // Symbolic N: column-statistics grid over N; finalize grid over the 100 channels.
  EXPECT_TRUE(contains(launch_of(code, KernelKind::ColumnStats).grid[0].c, "N"));
  EXPECT_EQ(launch_of(code, KernelKind::StatsFinalize).grid[0].value, 4);
  // Few channels: 32 threads merge each channel's row tiles.
  EXPECT_TRUE(contains(finalize, "constexpr int kPartLanes = 32;"));
  EXPECT_EQ(launch_of(code, KernelKind::StatsFinalize).block, 1024);
}

TEST(CodegenStats, BatchNormSpecialized) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  GeneratedCode code = generate(plan_of(kBatchNorm2d, {{"N", 1000}}));
  expect_compiles(code, "bn_plain_n1000");
  // 16 row tiles x 4 chunks of 32 channels.
  EXPECT_EQ(launch_of(code, KernelKind::ColumnStats).grid[0].value, 64);
  EXPECT_TRUE(contains(kernel_text(code.source, "fusegen_bn_plain_k1"), "return 16LL;"));
  EXPECT_FALSE(contains(code.source, "args.dim["));
}

// At most 4 row tiles (N <= 256, known): no finalize kernel; the apply
// merges each channel's partials in row-tile order and row 0's elements
// update the running stats.
TEST(CodegenStats, FewRowsApplyMergesThePartials) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  Plan plan = plan_of(kBatchNorm2d, {{"N", 200}});
  ASSERT_EQ(plan.kernels.size(), 2u);
  EXPECT_EQ(plan.kernels[0].kind, KernelKind::ColumnStats);
  EXPECT_EQ(plan.kernels[1].kind, KernelKind::Elementwise);
  GeneratedCode code = generate(plan);
  expect_compiles(code, "bn_plain_n200");
  std::string apply = kernel_text(code.source, "fusegen_bn_plain_k1");
  // Four tiles merged in order, in the scalar and the vector body.
  EXPECT_TRUE(contains(apply, "fusegen_welford_merge(fusegen_welford_merge(fusegen_welford_merge(fusegen_welford_at("
                              "args.buf[6] + (0LL * 100LL + c1) * 3), fusegen_welford_at(args.buf[6] + (1LL * 100LL "
                              "+ c1) * 3))"))
      << apply;
  EXPECT_TRUE(contains(apply, "fusegen_welford_at(args.buf[6] + (3LL * 100LL + (c1 + 3)) * 3))"));
  EXPECT_TRUE(contains(apply, "if (c0 == 0) args.buf[3][(c1 + 2)] = 0.899999976f * args.buf[3][(c1 + 2)] + "
                              "0.100000001f * mean0_2;"));
  EXPECT_TRUE(contains(apply, "if (c0 == 0) args.buf[4][c1] = 0.899999976f * args.buf[4][c1] + 0.100000001f * "
                              "(total0_0.m2 / (total0_0.count - 1.0f));"));
  // 5 tiles, no rows, or an unknown N: a finalize kernel as before.
  EXPECT_EQ(plan_of(kBatchNorm2d, {{"N", 257}}).kernels.size(), 3u);
  EXPECT_EQ(plan_of(kBatchNorm2d, {{"N", 0}}).kernels.size(), 3u);
  EXPECT_EQ(plan_of(kBatchNorm2d).kernels.size(), 3u);
}

TEST(CodegenStats, BatchNorm4d) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  const char* spec = R"(
fusion bn_4d {
  input x : f32[N, 12, 9, 7]
  state rm : f32[12]
  state rv : f32[12]
  output y = batch_norm(x, rm, rv, training=true, momentum=0.3, eps=1e-3)
}
)";
  GeneratedCode code = generate(plan_of(spec));
  expect_compiles(code, "bn_4d");
  std::string stats = kernel_text(code.source, "fusegen_bn_4d_k0");
  EXPECT_TRUE(contains(stats, "constexpr int kColumnMode = 0;"));
  EXPECT_TRUE(contains(stats, "constexpr int kBlockSize = 256;"));
  EXPECT_TRUE(contains(stats, "return 63LL;")) << "spatial size";
  std::string finalize = kernel_text(code.source, "fusegen_bn_4d_k1");
  EXPECT_TRUE(contains(finalize, "0.699999988f * args.buf["));
  EXPECT_TRUE(contains(finalize, "0.300000012f * mean;"));
  EXPECT_TRUE(contains(finalize, "0.0f) + 0.00100000005f)"));

  GeneratedCode fixed = generate(plan_of(spec, {{"N", 130}}));
  expect_compiles(fixed, "bn_4d_n130");
  // 3 row tiles x 12 channels, one block each.
  EXPECT_EQ(launch_of(fixed, KernelKind::ColumnStats).grid[0].value, 36);
}

TEST(CodegenStats, BatchNormLargeSpatialUsesWideBlocks) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  GeneratedCode code = generate(plan_of(R"(
fusion bn_wide {
  input x : f32[N, 16, 56, 56]
  state rm : f32[16]
  state rv : f32[16]
  output y = batch_norm(x, rm, rv)
}
)"));
  expect_compiles(code, "bn_wide");
  EXPECT_TRUE(contains(kernel_text(code.source, "fusegen_bn_wide_k0"), "constexpr int kBlockSize = 1024;"));
  EXPECT_EQ(launch_of(code, KernelKind::ColumnStats).block, 1024);
}

// specs/kernelbench/39: the GEMM epilogue writes the partials; the finalize
// and the apply follow.
TEST(CodegenStats, FinalizeAfterGemmPartials39) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  std::string spec = read_source_file("specs/kernelbench/39_gemm_scale_batchnorm.fg");
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 16384}}}) {
    Plan plan = plan_of(spec, dims);
    ASSERT_EQ(plan.kernels.size(), 3u);
    ASSERT_EQ(plan.kernels[1].kind, KernelKind::StatsFinalize);
    GeneratedCode code = generate(only_kinds(plan, {KernelKind::StatsFinalize, KernelKind::Elementwise}));
    expect_compiles(code, "kb39");
    EXPECT_TRUE(contains(code.source, "(part * 4096LL + row) * 3"));
    EXPECT_EQ(launch_of(code, KernelKind::StatsFinalize).grid[0].value, 128);
    EXPECT_EQ(launch_of(code, KernelKind::StatsFinalize).block, 256); // 4096 channels x 8 threads
    if (!dims.empty()) {
      EXPECT_TRUE(contains(code.source, "return 256LL;")) << "16384 rows in tiles of 64";
      // The apply's four channels: statistics as two float4, bn_w and bn_b as one each.
      EXPECT_TRUE(
          contains(code.source, "const float4 stats2a = *reinterpret_cast<const float4*>(args.buf[11] + 2 * c1);"));
      EXPECT_TRUE(
          contains(code.source, "const float4 stats2b = *reinterpret_cast<const float4*>(args.buf[11] + 2 * c1 + 4);"));
      EXPECT_TRUE(contains(code.source, "const float4 weight2 = *reinterpret_cast<const float4*>(args.buf[4] + c1);"));
      EXPECT_TRUE(contains(code.source, "((((in9.w - stats2b.z) * stats2b.w) * weight2.w) + bias2.w)"));
    }
  }
}

// A group_norm finalize: partials [N, G, P, 3] -> [N, G, 2]. The planner
// inserts one when a conv's group_norm is not applied inside a pool; built
// here by hand on the plan of specs/kernelbench/85 so it does not depend on
// that planner change.
Plan with_group_norm_finalize(Plan plan, bool right_shape) {
  const KernelStep& window = plan.kernels.at(1);
  NodeId norm = window.stats_in;
  const Node& node = plan.fusion.node(norm);
  const Shape& input = plan.fusion.value(node.operands[0]).type.shape;
  BufferId partials = kNoId;
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].name == "partials_" + std::to_string(norm))
      partials = static_cast<BufferId>(i);
  PlanBuffer stats;
  stats.role = PlanBuffer::Role::Statistics;
  stats.name = "stats_" + std::to_string(norm);
  stats.shape = right_shape ? Shape{input[0], Dim::constant(16), Dim::constant(2)} : Shape{input[1], Dim::constant(2)};
  plan.buffers.push_back(stats);
  BufferId stats_id = static_cast<BufferId>(plan.buffers.size() - 1);
  KernelStep finalize;
  finalize.kind = KernelKind::StatsFinalize;
  finalize.name = plan.fusion.name + "_kf";
  finalize.stats_in = norm;
  finalize.reads = {partials};
  finalize.writes = {stats_id};
  KernelStep apply = window;
  std::erase(apply.reads, partials);
  apply.reads.push_back(stats_id);
  plan.kernels = {finalize, apply};
  return plan;
}

TEST(CodegenStats, GroupNormFinalize) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  std::string spec = read_source_file("specs/kernelbench/85_conv2d_groupnorm_scale_maxpool_clamp.fg");
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 128}}}) {
    Plan plan = with_group_norm_finalize(plan_of(spec, dims), true);
    GeneratedCode code = generate(plan);
    expect_compiles(code, "kb85_finalized");
    std::string finalize = kernel_text(code.source, "fusegen_conv2d_groupnorm_scale_maxpool_clamp_kf");
    EXPECT_TRUE(contains(finalize, "constexpr int kPartsContiguous = 1;"));
    EXPECT_TRUE(contains(finalize, "(row * 249LL + part) * 3"));
    EXPECT_FALSE(contains(finalize, "momentum-weighted")) << "group_norm has no running stats";
    // The pool now reads the finalized [N, G, 2] statistics.
    EXPECT_TRUE(contains(code.source, "constexpr int kPlaneStats = 0;"));
    const KernelLaunch& launch = launch_of(code, KernelKind::StatsFinalize);
    EXPECT_EQ(launch.block, 256);
    if (!dims.empty()) {
      EXPECT_EQ(launch.grid[0].value, 128 * 16 / 8);
    } else {
      EXPECT_TRUE(contains(launch.grid[0].c, "N"));
    }
  }
}

TEST(CodegenStats, GroupNormFinalizeRejectsPerChannelLayout) {
  Plan plan = with_group_norm_finalize(
      plan_of(read_source_file("specs/kernelbench/85_conv2d_groupnorm_scale_maxpool_clamp.fg")), false);
  Result<GeneratedCode> code = generate_cuda({plan}, CodegenOptions{});
  ASSERT_FALSE(code);
  EXPECT_TRUE(contains(code.error(), "group_norm's finalized statistics are [N, 16, 2]")) << code.error();
}

} // namespace
} // namespace fusegen
