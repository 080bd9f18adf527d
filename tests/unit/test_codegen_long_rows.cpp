// Long rows in row-reduce kernels (issue 30): a normalized row is cached
// whole in shared memory up to half of what the target lets a block opt
// into (two blocks of 512 threads per SM), so the kernel reads it from
// global memory once; beyond that limit it is reloaded. The limit comes from the target model, and the
// generated code (launcher opt-in included) compiles with NVRTC for the
// target it was planned for.
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
  // 32000 floats (125 KiB): over half of what a block may take on sm_90, so
  // two blocks per SM each cache 28800 floats and reload the rest.
  GeneratedCode vocab_code = generate_for(softmax_spec("log_softmax", 4096, 32000), 90);
  KernelLaunch vocab = first_launch(vocab_code);
  EXPECT_EQ(vocab.shared_bytes, 28800 * 4);
  EXPECT_EQ(vocab.block, 512);
  EXPECT_TRUE(contains(vocab_code.source, "constexpr int kCacheFloats = 28800;"));
  expect_compiles(vocab_code, "log_softmax_32000", 90);
}

// Where the cache stops: half the target's opt-in limit less 1 KiB for the
// template's static scratch (sm_90 and sm_100: 227 KiB, sm_80: 163 KiB),
// and at least 64 KiB (sm_86: 99 KiB). Beyond it a row keeps that much
// cached and reloads the rest, with 512 threads a row.
TEST(CodegenLongRows, CacheLimitFollowsTheTarget) {
  struct Case {
    int arch;
    int64_t length;
    bool cached;
  };
  const Case cases[] = {
      {90, 28800, true},  {90, 28801, false}, {100, 28800, true}, {80, 20608, true},
      {80, 20609, false}, {86, 16384, true},  {86, 20000, false}, {90, 70000, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("sm_" + std::to_string(c.arch) + ", rows of " + std::to_string(c.length));
    Result<Target> target = target_for_arch(c.arch);
    ASSERT_TRUE(target);
    const int64_t limit = std::max<int64_t>(65536, target.value().max_shared_bytes_per_block / 2 - 1024);
    EXPECT_EQ(c.length * 4 <= limit, c.cached);
    KernelLaunch launch = first_launch(generate_for(softmax_spec("softmax", 3, c.length), c.arch));
    EXPECT_EQ(launch.shared_bytes, c.cached ? c.length * 4 : limit);
    EXPECT_EQ(launch.block, c.length >= 32768 || std::min(c.length * 4, limit) > 65536 ? 512 : 256);
  }
}

// Every normalization caches a long row the same way: layer_norm with its
// affine params and a prologue, group_norm with a fused row minimum;
// reductions make one pass and cache nothing.
TEST(CodegenLongRows, NormalizationsCacheReductionsDoNot) {
  const std::string layer_norm = "fusion f {\n  input x : f32[64, 20000]\n  param w : f32[20000]\n"
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

} // namespace
} // namespace fusegen
