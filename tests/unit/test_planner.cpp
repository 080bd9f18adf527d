// Planner tests: the kernel count and grouping of each seed chain and of
// each fusion rule (docs/fusion.md).
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace fusegen {
namespace {

Fusion compile_one(const std::string& text, const DimBindings& dims = {}) {
  SourceManager sources;
  uint32_t file = sources.add_buffer("test.fg", text);
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, file, diags);
  EXPECT_TRUE(module) << diags.render(sources);
  if (!module)
    return {};
  EXPECT_EQ(module->fusions.size(), 1u);
  if (dims.empty())
    return module->fusions[0];
  std::optional<Fusion> concrete = specialize(module->fusions[0], dims, diags);
  EXPECT_TRUE(concrete) << diags.render(sources);
  return concrete ? *concrete : Fusion{};
}

std::string read(const std::string& path) {
  std::ifstream in(std::string(FUSEGEN_SOURCE_DIR) + "/" + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "gemm[linear,group_norm | leaky_relu,add]" per kernel: kind, stage ops, pointwise ops.
std::vector<std::string> summary(const Plan& plan) {
  std::vector<std::string> out;
  for (const KernelStep& step : plan.kernels) {
    std::string text = std::string(kernel_kind_name(step.kind)) + "[";
    for (NodeId id : step.prologue)
      text += plan.fusion.node(id).op + ">";
    for (size_t s = 0; s < step.stages.size(); ++s) {
      if (s)
        text += " | ";
      const Stage& stage = step.stages[s];
      if (stage.op != kNoId)
        text += plan.fusion.node(stage.op).op;
      for (NodeId id : stage.pointwise)
        text += "," + plan.fusion.node(id).op;
    }
    out.push_back(text + "]");
  }
  return out;
}

using Kernels = std::vector<std::string>;

TEST(Planner, Chain62IsOneKernel) {
  for (const char* path : {"specs/kernelbench/62_matmul_groupnorm_leakyrelu_sum.fg",
                           "specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg"}) {
    Plan plan = plan_fusion(compile_one(read(path)));
    EXPECT_EQ(summary(plan), (Kernels{"gemm[linear | group_norm,leaky_relu,add]"})) << path;
  }
}

TEST(Planner, Chain75IsGemmWithRowMinThenBroadcastAdd) {
  Plan plan = plan_fusion(compile_one(read("specs/kernelbench/75_gemm_groupnorm_min_biasadd.fg")));
  EXPECT_EQ(summary(plan), (Kernels{"gemm[linear | group_norm | min]", "elementwise[,add]"}));
  // The row minimum crosses kernels: one [N, 1] intermediate.
  ASSERT_EQ(plan.kernels[0].writes.size(), 1u);
  EXPECT_EQ(plan.buffer(plan.kernels[0].writes[0]).role, PlanBuffer::Role::Intermediate);
}

// At the small shapes (256 columns: 4 tiles of 64) the row minimum stays one
// partial per tile, [4, N], which the bias add combines: the GEMM needs no
// fill and no atomics. Not at 8192 columns, nor when the minimum is an output.
TEST(Planner, Chain75SmallKeepsTheRowMinimumAsPartials) {
  const std::string small = read("specs/kernelbench/small/75_gemm_groupnorm_min_biasadd.fg");
  Plan plan = plan_fusion(compile_one(small, {{"N", 128}}));
  EXPECT_EQ(summary(plan), (Kernels{"gemm[linear | group_norm | min]", "elementwise[,add]"}));
  EXPECT_EQ(plan.kernels[0].row_reduce_parts, 4);
  ASSERT_EQ(plan.kernels[0].writes.size(), 1u);
  const PlanBuffer& partials = plan.buffer(plan.kernels[0].writes[0]);
  EXPECT_EQ(partials.combine, PlanBuffer::Combine::Min);
  EXPECT_EQ(shape_str(partials.shape), "[256, 128]");
  EXPECT_EQ(partials.ceil_div, (std::vector<int64_t>{64, 1}));
  EXPECT_NE(print_plan(plan).find("t8 : f32[4, 128] intermediate"), std::string::npos) << print_plan(plan);
  EXPECT_EQ(
      plan_fusion(compile_one(read("specs/kernelbench/75_gemm_groupnorm_min_biasadd.fg"))).kernels[0].row_reduce_parts,
      0);
  Plan output = plan_fusion(compile_one(R"(
fusion f {
  input  x : f32[N, 64]
  param  w : f32[128, 64]
  h = linear(x, w)
  h = group_norm(h, num_groups=4)
  output m = min(h, dim=1, keepdim=true)
  output y = m + 1.0
}
)"));
  ASSERT_EQ(output.kernels[0].kind, KernelKind::Gemm);
  EXPECT_EQ(output.kernels[0].row_reduce_parts, 0) << "m is an output: it holds the minimum itself";
}

TEST(Planner, Chain39IsGemmStatsFinalizeApply) {
  Plan plan = plan_fusion(compile_one(read("specs/kernelbench/39_gemm_scale_batchnorm.fg")));
  EXPECT_EQ(summary(plan), (Kernels{"gemm[linear,mul]", "stats-finalize[]", "elementwise[,batch_norm]"}));
  NodeId bn = plan.kernels[2].stats_in;
  EXPECT_EQ(plan.kernels[0].stats_out, bn);
  EXPECT_EQ(plan.kernels[1].stats_in, bn);
  // The finalize kernel updates the running stats in place.
  std::vector<std::string> written;
  for (BufferId id : plan.kernels[1].writes)
    written.push_back(plan.buffer(id).name);
  EXPECT_EQ(written, (std::vector<std::string>{"running_mean", "running_var", "stats_2"}));
}

// At KernelBench's small batch (128 rows) one GEMM block holds every row of
// its columns: the batch_norm runs in the GEMM's epilogue, which reads and
// writes the running stats; nothing goes through the workspace.
TEST(Planner, Chain39AtABlocksRowsIsOneGemm) {
  for (int64_t rows : {2, 64, 128}) {
    Plan plan = plan_fusion(compile_one(read("specs/kernelbench/small/39_gemm_scale_batchnorm.fg"), {{"N", rows}}));
    EXPECT_EQ(summary(plan), (Kernels{"gemm[linear,mul | batch_norm]"})) << rows;
    std::vector<std::string> read, written;
    for (BufferId id : plan.kernels[0].reads)
      read.push_back(plan.buffer(id).name);
    for (BufferId id : plan.kernels[0].writes)
      written.push_back(plan.buffer(id).name);
    EXPECT_EQ(read, (std::vector<std::string>{"x", "w", "b", "scale", "bn_w", "bn_b", "running_mean", "running_var"}))
        << rows;
    EXPECT_EQ(written, (std::vector<std::string>{"running_mean", "running_var", "y"})) << rows;
  }
}

// Over 64 rows the block takes 128 rows only with operands that load as
// 16-byte vectors (the depth a multiple of 4); else, and over 128 rows, the
// GEMM emits partials. Up to 4 row tiles the apply merges them itself and
// updates the running stats: no finalize kernel.
TEST(Planner, BatchNormOverMoreRowsIsGemmThenApply) {
  Plan plan = plan_fusion(compile_one(read("specs/kernelbench/small/39_gemm_scale_batchnorm.fg"), {{"N", 129}}));
  EXPECT_EQ(summary(plan), (Kernels{"gemm[linear,mul]", "elementwise[,batch_norm]"}));
  std::vector<std::string> read, written;
  for (BufferId id : plan.kernels[1].reads)
    read.push_back(plan.buffer(id).name);
  for (BufferId id : plan.kernels[1].writes)
    written.push_back(plan.buffer(id).name);
  EXPECT_EQ(read, (std::vector<std::string>{"bn_w", "bn_b", "running_mean", "running_var", "t9", "partials_2"}));
  EXPECT_EQ(written, (std::vector<std::string>{"running_mean", "running_var", "y"}));
  const char* odd_depth = R"(fusion f {
    input  x : f32[N, 30]
    param  w : f32[16, 30]
    state  rm : f32[16]
    state  rv : f32[16]
    output y = batch_norm(linear(x, w), rm, rv, training=true)
  })";
  EXPECT_EQ(summary(plan_fusion(compile_one(odd_depth, {{"N", 64}}))), (Kernels{"gemm[linear | batch_norm]"}));
  EXPECT_EQ(summary(plan_fusion(compile_one(odd_depth, {{"N", 65}}))),
            (Kernels{"gemm[linear]", "elementwise[,batch_norm]"}));
  EXPECT_EQ(summary(plan_fusion(compile_one(odd_depth))),
            (Kernels{"gemm[linear]", "stats-finalize[]", "elementwise[,batch_norm]"}))
      << "rows unknown";
}

TEST(Planner, Chain85IsConvWithStatsThenPoolWithNormPrologue) {
  for (const char* path : {"specs/kernelbench/85_conv2d_groupnorm_scale_maxpool_clamp.fg",
                           "specs/kernelbench/small/85_conv2d_groupnorm_scale_maxpool_clamp.fg"}) {
    Plan plan = plan_fusion(compile_one(read(path)));
    EXPECT_EQ(summary(plan), (Kernels{"gemm[conv2d]", "window[group_norm>mul>max_pool2d,clamp]"})) << path;
  }
}

TEST(Planner, PointwiseChainIsOneElementwiseKernel) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 64]
    param s : f32[64]
    h = relu(x * s - 1.5)
    output y = gelu(h) * 2
    output z = -h
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"elementwise[,mul,sub,relu,gelu,mul,neg]"}));
  EXPECT_EQ(plan.kernels[0].writes.size(), 2u);
}

TEST(Planner, BroadcastThatGrowsTheDomainStartsAKernel) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 8]
    param b : f32[1, 8, 1, 1]
    m = sum(x, dim=1, keepdim=true)
    output y = m + b
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"row-reduce[sum]", "elementwise[,add]"}));
}

TEST(Planner, GroupTooWideForTheTileIsNotFusedIntoTheGemm) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 32]
    param w : f32[256, 32]
    h = linear(x, w)
    output y = group_norm(h, num_groups=2)
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"gemm[linear]", "row-reduce[group_norm]"}));
  bool explained = false;
  for (const std::string& note : plan.kernels[0].notes)
    explained = explained || note.find("does not fit") != std::string::npos;
  EXPECT_TRUE(explained);
}

TEST(Planner, PointwisePrologueJoinsTheReduction) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 16]
    h = exp(x) + 1
    output y = softmax(h, dim=1) * 3
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"row-reduce[exp>add>softmax,mul]"}));
}

TEST(Planner, NormThenReductionOverTheSameRowsStaysTogether) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 64]
    h = group_norm(x + 1, num_groups=4)
    output y = amax(h, dim=1, keepdim=true) - 1
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"row-reduce[add>group_norm | amax,sub]"}));
}

TEST(Planner, NonTrailingReductionIsGeneric) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 8, 4]
    output y = sum(x, dim=1)
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"generic-reduce[sum]"}));
}

TEST(Planner, BatchNormOnAnInputUsesColumnStats) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 8, 5]
    state rm : f32[8]
    state rv : f32[8]
    output y = relu(batch_norm(x, rm, rv))
  })"));
  EXPECT_EQ(summary(plan),
            (Kernels{"column-stats[]", "stats-finalize[]", "elementwise[,batch_norm,relu]"}));
}

TEST(Planner, EvalBatchNormIsPointwise) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 8]
    param w : f32[8, 8]
    param rm : f32[8]
    param rv : f32[8]
    output y = batch_norm(linear(x, w), rm, rv, training=false)
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"gemm[linear,batch_norm]"}));
}

// A training batch_norm after a forward convolution takes its partial
// statistics from the conv's epilogue, per (sample, tile of 64 output
// positions, channel), and the conv kernel finalizes them (its last blocks
// merge them: per-sample triples and arrival counters, no finalize kernel);
// after a grouped one the finalize kernel stays (the GEMM batch is not a
// sample); after a transposed one (phases whose rows store nothing) they come
// from a column-statistics kernel.
TEST(Planner, ConvBatchNormStatisticsComeFromTheConvEpilogue) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 3, 16, 12]
    param w : f32[8, 3, 3, 3]
    state rm : f32[8]
    state rv : f32[8]
    output y = relu(batch_norm(conv2d(x, w, padding=1), rm, rv))
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"gemm[conv2d]", "elementwise[,batch_norm,relu]"}));
  EXPECT_NE(plan.kernels[0].stats_out, kNoId);
  EXPECT_TRUE(plan.kernels[0].finalizes_stats);
  std::map<std::string, const PlanBuffer*> written;
  for (BufferId id : plan.kernels[0].writes)
    written[plan.buffer(id).name.substr(0, plan.buffer(id).name.rfind('_'))] = &plan.buffer(id);
  ASSERT_TRUE(written.count("partials") && written.count("stats") && written.count("sample_stats") &&
              written.count("counters") && written.count("rm") && written.count("rv"));
  EXPECT_EQ(shape_str(written["partials"]->shape), "[N, 192, 8, 3]");
  EXPECT_EQ(written["partials"]->ceil_div, (std::vector<int64_t>{1, 64, 1, 1}));
  EXPECT_EQ(shape_str(written["sample_stats"]->shape), "[N, 8, 3]");
  EXPECT_EQ(shape_str(written["counters"]->shape), "[2, N]");
  // The apply reads the finalized statistics, not the running stats.
  for (BufferId id : plan.kernels[1].reads)
    EXPECT_NE(plan.buffer(id).role, PlanBuffer::Role::Argument) << plan.buffer(id).name;

  Plan grouped = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 4, 16, 12]
    param w : f32[8, 2, 3, 3]
    state rm : f32[8]
    state rv : f32[8]
    output y = batch_norm(conv2d(x, w, padding=1, groups=2), rm, rv)
  })"));
  EXPECT_EQ(summary(grouped), (Kernels{"gemm[conv2d]", "stats-finalize[]", "elementwise[,batch_norm]"}));
  EXPECT_FALSE(grouped.kernels[0].finalizes_stats);

  Plan transposed = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 3, 6, 6]
    param w : f32[3, 8, 3, 3]
    state rm : f32[8]
    state rv : f32[8]
    output y = batch_norm(conv_transpose2d(x, w, stride=2), rm, rv)
  })"));
  EXPECT_EQ(summary(transposed),
            (Kernels{"gemm[conv_transpose2d]", "column-stats[]", "stats-finalize[]", "elementwise[,batch_norm]"}));
}

// A convolution over many channels reads its input channels-last. An
// intermediate that an elementwise kernel writes and the conv alone reads is
// stored so by that kernel (no copy); one that another kernel also reads, or
// an argument, gets the copy.
TEST(Planner, ConvInputFromAnElementwiseKernelIsStoredChannelsLast) {
  const char* spec = R"(fusion f {
    input x : f32[N, 16, 9, 7]
    param w : f32[72, 16, 3, 3]
    h = relu(x * 2.0)
    output y = h + 1.0
    output z = conv2d(h, w, padding=1)
  })";
  Plan plan = plan_fusion(compile_one(spec));
  ASSERT_EQ(summary(plan), (Kernels{"elementwise[,mul,relu,add]", "gemm[conv2d]"}));
  const KernelStep& conv = plan.kernels[1];
  ASSERT_NE(conv.a_layout, kNoId);
  EXPECT_TRUE(plan.buffer(conv.a_layout).channels_last);
  EXPECT_EQ(plan.buffer(conv.a_layout).role, PlanBuffer::Role::Intermediate);
  EXPECT_NE(std::find(plan.kernels[0].writes.begin(), plan.kernels[0].writes.end(), conv.a_layout),
            plan.kernels[0].writes.end());
  EXPECT_NE(print_plan(plan).find("intermediate, channels-last"), std::string::npos) << print_plan(plan);

  Plan shared = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 16, 9, 7]
    param w : f32[72, 16, 3, 3]
    h = relu(x * 2.0)
    output z = conv2d(h, w, padding=1)
    output s = sum(h, dim=1)
  })"));
  for (const KernelStep& step : shared.kernels)
    if (step.kind == KernelKind::Gemm) {
      ASSERT_NE(step.a_layout, kNoId);
      EXPECT_FALSE(shared.buffer(step.a_layout).channels_last);
      EXPECT_EQ(shared.buffer(step.a_layout).role, PlanBuffer::Role::Scratch);
    }
}

TEST(Planner, ConvGroupNormWithoutPoolGetsAFinalize) {
  Plan plan = plan_fusion(compile_one(R"(fusion f {
    input x : f32[N, 3, 16, 16]
    param w : f32[8, 3, 3, 3]
    output y = relu(group_norm(conv2d(x, w, padding=1), num_groups=2))
  })"));
  EXPECT_EQ(summary(plan), (Kernels{"gemm[conv2d]", "stats-finalize[]", "elementwise[,group_norm,relu]"}));
}

TEST(Planner, PrintsKernelsBuffersAndSizes) {
  Plan plan = plan_fusion(compile_one(read("specs/kernelbench/39_gemm_scale_batchnorm.fg"), {{"N", 1024}}));
  std::string text = print_plan(plan);
  EXPECT_NE(text.find("3 kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("t9 : f32[1024, 4096] intermediate, 16.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("partials_2 : f32[16, 4096, 3] statistics"), std::string::npos) << text;
}

TEST(Planner, IsDeterministic) {
  std::string spec = read("specs/kernelbench/85_conv2d_groupnorm_scale_maxpool_clamp.fg");
  EXPECT_EQ(print_plan(plan_fusion(compile_one(spec))), print_plan(plan_fusion(compile_one(spec))));
}

} // namespace
} // namespace fusegen
