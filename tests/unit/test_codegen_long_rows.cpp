// Long rows in row-reduce kernels (issue 30): a normalized row is cached
// whole in shared memory up to half of what the target lets a block opt
// into (two blocks of 512 threads per SM), so the kernel reads it from
// global memory once. Beyond that limit, a target with thread-block
// clusters splits the row over a cluster's blocks, each caching its part;
// one without keeps the cache's worth and reloads the rest. Few rows are
// split over clusters too, so that they fill the SMs. The limits come from
// the target model, and the generated code (launcher opt-in included)
// compiles with NVRTC for the target it was planned for.
#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Target.h"
#include "support/Nvrtc.h"

#include <algorithm>

#include <gtest/gtest.h>

#include <string>

namespace fusegen {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The code of a one-fusion spec generated for sm_<arch>.
GeneratedCode generate_for(const std::string& spec, int arch) {
  SourceManager sources;
  uint32_t file = sources.add_buffer("long_rows.fg", spec);
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, file, diags);
  EXPECT_TRUE(module) << diags.render(sources);
  if (!module)
    return {};
  CodegenOptions options;
  options.arch = arch;
  Result<GeneratedCode> code = generate_cuda({plan_fusion(module->fusions.at(0))}, options);
  EXPECT_TRUE(code) << code.error();
  return code ? code.value() : GeneratedCode{};
}

// The fusion's first kernel; a default launch when there is none.
KernelLaunch first_launch(const GeneratedCode& code) {
  if (code.fusions.empty() || code.fusions[0].kernels.empty()) {
    ADD_FAILURE() << "no kernel";
    return {};
  }
  return code.fusions[0].kernels[0];
}

// Compiles with NVRTC for the arch it was generated for (nothing without NVRTC).
void expect_compiles(const GeneratedCode& code, const std::string& name, int arch) {
  if (testing::have_nvrtc()) {
    EXPECT_EQ(testing::nvrtc_compile(code.source, name + ".cu", arch), "") << name << " for sm_" << arch;
  }
}

std::string softmax_spec(const std::string& op, int64_t rows, int64_t length) {
  return "fusion f {\n  input x : f32[" + std::to_string(rows) + ", " + std::to_string(length) +
         "]\n  output y = " + op + "(x, dim=1)\n}\n";
}

TEST(CodegenLongRows, LogSoftmaxOver20000IsCachedAndReadOnce) {
  for (int arch : {90, 80}) {
    SCOPED_TRACE("sm_" + std::to_string(arch));
    GeneratedCode code = generate_for(softmax_spec("log_softmax", 4096, 20000), arch);
    KernelLaunch launch = first_launch(code);
    ASSERT_EQ(code.fusions.at(0).kernels.size(), 1u);
    EXPECT_EQ(launch.kind, KernelKind::RowReduce);
    // The whole 78 KiB row in shared memory, a block of 512 threads per row.
    EXPECT_EQ(launch.shared_bytes, 20000 * 4);
    EXPECT_EQ(launch.block, 512);
    EXPECT_EQ(launch.grid[0].value, 4096);
    EXPECT_TRUE(contains(code.source, "constexpr int kCacheFloats = 20000;"));
    EXPECT_TRUE(contains(code.source, "constexpr int kTeamSize = 512;"));
    // The offline launcher opts in to the large dynamic shared memory.
    EXPECT_TRUE(contains(code.source, "cudaFuncAttributeMaxDynamicSharedMemorySize, 80000);"));
    expect_compiles(code, "log_softmax_20000", arch);
  }
  // 32000 floats (125 KiB): over half of what a block may take. On sm_90 a
  // cluster of four blocks shares each row, each caching 8000 floats with
  // 256 threads (a norm's parts are larger: below); on sm_80 a block caches
  // 20608 floats and reloads the rest.
  GeneratedCode vocab_code = generate_for(softmax_spec("log_softmax", 4096, 32000), 90);
  KernelLaunch vocab = first_launch(vocab_code);
  EXPECT_EQ(vocab.cluster, 4);
  EXPECT_EQ(vocab.grid[0].value, 4 * 4096);
  EXPECT_EQ(vocab.shared_bytes, 8000 * 4);
  EXPECT_EQ(vocab.block, 256);
  expect_compiles(vocab_code, "log_softmax_32000", 90);
  GeneratedCode vocab_80_code = generate_for(softmax_spec("log_softmax", 4096, 32000), 80);
  KernelLaunch vocab_80 = first_launch(vocab_80_code);
  EXPECT_EQ(vocab_80.cluster, 1);
  EXPECT_EQ(vocab_80.shared_bytes, 20608 * 4);
  EXPECT_EQ(vocab_80.block, 512);
  expect_compiles(vocab_80_code, "log_softmax_32000", 80);
}

// Where the cache stops: half the target's opt-in limit less 1 KiB for the
// template's static scratch (sm_90 and sm_100: 227 KiB, sm_80: 163 KiB),
// and at least 64 KiB (sm_86: 99 KiB). Beyond it, with clusters (sm_90 and
// later), the row is split in 2, 4 or 8 parts until a part has at most
// 12288 floats for softmax, 16384 for a norm (512 threads from 12288, else
// 256) or, with 8, fits the cache; without, or beyond 8 parts, a row keeps
// that much cached and reloads the rest, with 512 threads a row over 64 KiB
// or 32768 floats. 4096 rows fill the SMs.
TEST(CodegenLongRows, CacheLimitFollowsTheTarget) {
  struct Case {
    int arch;
    int64_t length;
    int cluster; // 0: cached whole by one block; 1: the cache's worth, the rest reloaded
    bool norm = false;
  };
  const Case cases[] = {{90, 28800, 0}, {90, 28801, 4},       {90, 28801, 2, true},   {100, 28800, 0},
                        {80, 20608, 0}, {80, 20609, 1},       {86, 16384, 0},         {86, 20000, 1},
                        {90, 40000, 4}, {90, 40000, 4, true}, {90, 50000, 8},         {90, 50000, 4, true},
                        {90, 70000, 8}, {90, 8 * 28800, 8},   {90, 8 * 28800 + 1, 1}, {100, 57601, 4, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE("sm_" + std::to_string(c.arch) + ", " + (c.norm ? "layer_norm" : "softmax") + " rows of " +
                 std::to_string(c.length));
    Result<Target> target = target_for_arch(c.arch);
    ASSERT_TRUE(target);
    const int64_t limit = std::max<int64_t>(65536, target.value().max_shared_bytes_per_block / 2 - 1024);
    EXPECT_EQ(c.length * 4 <= limit, c.cluster == 0);
    const std::string length = std::to_string(c.length);
    const std::string spec =
        c.norm ? "fusion f {\n  input x : f32[4096, " + length + "]\n  output y = layer_norm(x, " + length + ")\n}\n"
               : softmax_spec("softmax", 4096, c.length);
    KernelLaunch launch = first_launch(generate_for(spec, c.arch));
    EXPECT_EQ(launch.cluster, std::max(c.cluster, 1));
    if (c.cluster == 0) {
      EXPECT_EQ(launch.shared_bytes, c.length * 4);
      EXPECT_EQ(launch.block, c.length >= 32768 || c.length * 4 > 65536 ? 512 : 256);
    } else if (c.cluster == 1) {
      EXPECT_EQ(launch.shared_bytes, limit);
      EXPECT_EQ(launch.block, c.length >= 32768 || limit > 65536 ? 512 : 256);
    } else {
      // Parts are whole runs of 4 where the length is a multiple of 4.
      const int64_t run = c.length % 4 == 0 ? 4 : 1;
      const int64_t part = ((c.length + c.cluster - 1) / c.cluster + run - 1) / run * run;
      EXPECT_EQ(launch.shared_bytes, part * 4);
      EXPECT_LE(launch.shared_bytes, limit);
      EXPECT_EQ(launch.block, part >= 12288 ? 512 : 256);
      EXPECT_EQ(launch.grid[0].value, 4096 * c.cluster);
    }
  }
}

// Few rows spread over clusters so that they fill the SMs: parts halve
// while rows x parts is under the SM count and a part keeps 1024 elements.
// Reductions (one pass, nothing cached), rows in warp slices, fused final
// reductions and targets without clusters do not split.
TEST(CodegenLongRows, FewRowsSpreadOverClusters) {
  struct Case {
    std::string spec;
    int arch;
    int cluster;
    int64_t part;
  };
  const std::string layer_norm = "fusion f {\n  input x : f32[3, 5003]\n  param w : f32[5003]\n"
                                 "  output y = layer_norm(x, 5003, weight=w)\n}\n";
  const std::string group_norm_min = "fusion f {\n  input x : f32[2, 4, 3000]\n"
                                     "  h = group_norm(x, 2)\n  output y = amin(h, dim=(1, 2))\n}\n";
  const std::string instance_norm = "fusion f {\n  input x : f32[1, 3, 64, 64]\n"
                                    "  output y = instance_norm(x)\n}\n";
  const Case cases[] = {
      {softmax_spec("softmax", 8, 32000), 90, 8, 4000},
      {softmax_spec("softmax", 8, 32000), 80, 1, 20608},
      {softmax_spec("log_softmax", 1, 2048), 90, 2, 1024},
      {softmax_spec("log_softmax", 1, 2046), 90, 1, 2046},
      {softmax_spec("softmax", 1, 1000), 90, 1, 8 * 1000}, // warp slices: 8 rows' cache a block
      {softmax_spec("softmax", 64, 20000), 90, 4, 5000},
      {softmax_spec("softmax", 132, 20000), 90, 1, 20000},
      {layer_norm, 90, 4, 1251},
      {group_norm_min, 90, 1, 6000},
      {instance_norm, 90, 4, 1024},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("sm_" + std::to_string(c.arch) + ": " + c.spec);
    GeneratedCode code = generate_for(c.spec, c.arch);
    KernelLaunch launch = first_launch(code);
    EXPECT_EQ(launch.cluster, c.cluster);
    EXPECT_EQ(launch.shared_bytes, c.part * 4);
    expect_compiles(code, "few_rows", c.arch);
  }
  GeneratedCode sum = generate_for("fusion f {\n  input x : f32[2, 32000]\n  output y = sum(x, dim=1)\n}\n", 90);
  EXPECT_EQ(first_launch(sum).cluster, 1);
}

// Every normalization caches a long row the same way: layer_norm with its
// affine params and a prologue, group_norm with a fused row minimum;
// reductions make one pass and cache nothing.
TEST(CodegenLongRows, NormalizationsCacheReductionsDoNot) {
  const std::string layer_norm = "fusion f {\n  input x : f32[256, 20000]\n  param w : f32[20000]\n"
                                 "  param b : f32[20000]\n  h = gelu(x)\n"
                                 "  output y = layer_norm(h, 20000, weight=w, bias=b)\n}\n";
  const std::string group_norm = "fusion f {\n  input x : f32[16, 5, 4000]\n"
                                 "  h = group_norm(x, 1)\n  output y = amin(h, dim=(1, 2))\n}\n";
  const std::string sum = "fusion f {\n  input x : f32[64, 32000]\n  output y = sum(x, dim=1)\n}\n";
  for (int arch : {90, 80}) {
    SCOPED_TRACE("sm_" + std::to_string(arch));
    for (const std::string& spec : {layer_norm, group_norm}) {
      GeneratedCode code = generate_for(spec, arch);
      EXPECT_EQ(first_launch(code).shared_bytes, 80000) << spec;
      EXPECT_EQ(first_launch(code).block, 512) << spec;
      expect_compiles(code, "long_norm", arch);
    }
    GeneratedCode code = generate_for(sum, arch);
    EXPECT_EQ(first_launch(code).shared_bytes, 0);
    EXPECT_TRUE(contains(code.source, "constexpr int kCacheFloats = 0;"));
    expect_compiles(code, "long_sum", arch);
  }
}

// Runs of 4 adjacent elements (16-byte loads and stores) where a run can
// never cross a row or the row's innermost dim, and a norm's weight and bias
// are contiguous along the row or one per run; element by element
// elsewhere. Either way the code compiles for sm_90 and sm_80.
TEST(CodegenLongRows, RunsOfFourWhereTheRowAllows) {
  struct Case {
    std::string spec;
    bool runs;
  };
  const Case cases[] = {
      {"fusion f {\n  input x : f32[9, 2052]\n  param w : f32[2052]\n  param b : f32[2052]\n"
       "  output y = layer_norm(x, 2052, weight=w, bias=b)\n}\n",
       true},
      {softmax_spec("softmax", 9, 2050), false},
      {softmax_spec("log_softmax", 9, 20), true},                                        // warp slices
      {"fusion f {\n  input x : f32[N, C]\n  output y = softmax(x, dim=1)\n}\n", false}, // symbolic length
      {"fusion f {\n  input x : f32[3, 8, 4, 12]\n  param w : f32[8]\n"
       "  output y = group_norm(x, 4, weight=w)\n}\n",
       true}, // a channel per run: spatial size 48
      {"fusion f {\n  input x : f32[3, 8, 3, 6]\n  param w : f32[8]\n"
       "  output y = group_norm(x, 4, weight=w)\n}\n",
       false}, // rows of 36, but runs of 6-wide rows would cross them
      {"fusion f {\n  input x : f32[3, 8, 3, 4]\n  param w : f32[8]\n"
       "  output y = group_norm(x, 4, weight=w)\n}\n",
       true}, // rows of 4, a channel per run (spatial size 12)
      {"fusion f {\n  input x : f32[3, 16]\n  param w : f32[16]\n"
       "  output y = group_norm(x, 4, weight=w)\n}\n",
       false}, // no spatial dims: four channels a run
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    for (int arch : {90, 80}) {
      GeneratedCode code = generate_for(c.spec, arch);
      EXPECT_EQ(contains(code.source, "constexpr int kVector = 4;"), c.runs) << "sm_" << arch;
      EXPECT_EQ(contains(code.source, "constexpr int kVector = 1;"), !c.runs) << "sm_" << arch;
      expect_compiles(code, "runs", arch);
    }
  }
}

} // namespace
} // namespace fusegen
