// lower(): one fusion specialized, planned and generated with its launch
// plan. The host launcher in the generated .cu is printed from the same
// launch plan, so its launches (fills, kernels with grid, block and shared
// memory) and output copies are the runtime's, in the same order; outputs
// no kernel writes (`output z = h`, `output y = x`) are copies in both.
#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/Lower.h"
#include "fusegen/Planner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fusegen {
namespace {

namespace fs = std::filesystem;

struct Loaded {
  SourceManager sources;
  Module module;
};

std::unique_ptr<Loaded> load(const fs::path& path) {
  std::ifstream in(fs::path(FUSEGEN_SOURCE_DIR) / path);
  std::ostringstream text;
  text << in.rdbuf();
  auto loaded = std::make_unique<Loaded>();
  uint32_t file = loaded->sources.add_buffer(path.filename().string(), text.str());
  Diagnostics diags;
  std::optional<Module> module = compile_spec(loaded->sources, file, diags);
  EXPECT_TRUE(module) << diags.render(loaded->sources);
  if (!module)
    return nullptr;
  loaded->module = std::move(*module);
  return loaded;
}

// Every symbol of `fusion` bound to `n`.
DimBindings all_dims(const Fusion& fusion, int64_t n) {
  DimBindings dims;
  for (const std::string& symbol : fusion.symbols())
    dims[symbol] = n;
  return dims;
}

// The lines of fusion `name`'s launcher in `source` that launch or copy, in
// order.
std::vector<std::string> launcher_steps(const std::string& source, const std::string& name) {
  const size_t begin = source.find("extern \"C\" cudaError_t fusegen_" + name + "_launch(");
  EXPECT_NE(begin, std::string::npos) << name;
  const size_t end = source.find("\n}\n", begin);
  std::istringstream lines(source.substr(begin, end - begin));
  std::vector<std::string> steps;
  for (std::string line; std::getline(lines, line);)
    if (line.find("<<<") != std::string::npos || line.find("cudaMemcpyAsync(") != std::string::npos)
      steps.push_back(line);
  return steps;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The printed launcher does what the launch plan says, step by step; at
// specialized dims the plan's numbers are the printed sizes' values.
void expect_launcher_follows(const std::string& source, const SymbolicLaunchPlan& symbolic, const LaunchPlan* numbers) {
  std::vector<std::string> steps = launcher_steps(source, symbolic.fusion);
  size_t step = 0;
  auto next = [&]() -> std::string { return step < steps.size() ? steps[step++] : std::string(); };
  for (size_t k = 0; k < symbolic.kernels.size(); ++k) {
    const KernelLaunchOf<SizeExpr>& kernel = symbolic.kernels[k];
    for (size_t f = 0; f < kernel.fills.size(); ++f) {
      const FillLaunchOf<SizeExpr>& fill = kernel.fills[f];
      std::string line = next();
      EXPECT_TRUE(contains(line, "fusegen_fill<<<")) << line;
      EXPECT_TRUE(contains(line, "(args.buf[" + std::to_string(fill.buffer) + "], value, " + fill.count.c + ");"))
          << line;
      if (numbers) {
        EXPECT_EQ(numbers->kernels[k].fills[f].count, fill.count.value);
      }
    }
    std::string line = next();
    EXPECT_TRUE(contains(line, kernel.name + "_impl::" + kernel.name + "<<<dim3((unsigned)" + kernel.grid[0].c +
                                   ", (unsigned)" + kernel.grid[1].c + ", (unsigned)" + kernel.grid[2].c + "), dim3(" +
                                   std::to_string(kernel.block) + "), " + std::to_string(kernel.shared_bytes) + ","))
        << line;
    for (size_t i = 0; numbers && i < 3; ++i)
      EXPECT_EQ(numbers->kernels[k].grid[i], kernel.grid[i].value) << kernel.name;
  }
  for (size_t c = 0; c < symbolic.copies.size(); ++c) {
    const OutputCopyOf<SizeExpr>& copy = symbolic.copies[c];
    std::string line = next();
    EXPECT_TRUE(contains(line, "cudaMemcpyAsync(" + copy.output + ", args.buf[" + std::to_string(copy.buffer) + "], " +
                                   copy.bytes.c + ","))
        << line;
    if (numbers) {
      EXPECT_EQ(numbers->copies[c].bytes, copy.bytes.value);
    }
  }
  EXPECT_EQ(step, steps.size()) << "the launcher of " << symbolic.fusion << " launches more than its plan";
}

TEST(Lower, AliasedOutputsAreCopiesInThePlanAndTheLauncher) {
  auto loaded = load("tests/regressions/offline_launcher_outputs.fg");
  ASSERT_TRUE(loaded);
  Diagnostics diags;
  const Fusion* alias = loaded->module.find("alias");
  ASSERT_NE(alias, nullptr);
  Result<Lowered> lowered = lower(*alias, {{"N", 5}}, {}, diags);
  ASSERT_TRUE(lowered) << lowered.error();
  const LaunchPlan& launch = lowered.value().launch;
  ASSERT_EQ(launch.buffers.size(), 2u);
  EXPECT_EQ(launch.buffers[1], (BufferBinding{BufferBinding::Role::Output, "y"}));
  EXPECT_EQ(launch.kernels.size(), 1u);
  ASSERT_EQ(launch.copies.size(), 1u);
  EXPECT_EQ(launch.copies[0], (OutputCopy{"z", 1, 5 * 8 * 4})); // z from y's buffer
  EXPECT_TRUE(
      contains(lowered.value().source,
               "fusegen_alias_launch(const float* x, float* y, float* z, void* workspace, cudaStream_t stream)"));
  EXPECT_TRUE(contains(lowered.value().source, "err = cudaMemcpyAsync(z, args.buf[1], (size_t)(1 * 5LL * 8LL) * "
                                               "sizeof(float), cudaMemcpyDeviceToDevice, stream);"));

  const Fusion* passthru = loaded->module.find("passthru");
  ASSERT_NE(passthru, nullptr);
  Result<Lowered> copy_only = lower(*passthru, {{"N", 5}}, {}, diags);
  ASSERT_TRUE(copy_only) << copy_only.error();
  EXPECT_TRUE(copy_only.value().launch.kernels.empty());
  EXPECT_EQ(copy_only.value().launch.workspace_bytes, 0);
  ASSERT_EQ(copy_only.value().launch.copies.size(), 1u);
  EXPECT_EQ(copy_only.value().launch.copies[0], (OutputCopy{"y", 0, 5 * 8 * 4})); // y from the argument x
  EXPECT_FALSE(diags.has_errors());

  // Unspecialized: the same copies with sizes over N, in the launcher too.
  Result<GeneratedCode> code = generate_cuda({plan_fusion(*alias), plan_fusion(*passthru)}, {});
  ASSERT_TRUE(code) << code.error();
  ASSERT_EQ(code.value().fusions.size(), 2u);
  for (const GeneratedFusion& fusion : code.value().fusions) {
    ASSERT_EQ(fusion.launch.copies.size(), 1u);
    EXPECT_EQ(fusion.launch.copies[0].bytes.c, "(size_t)(1 * N * 8LL) * sizeof(float)");
    EXPECT_FALSE(fusion.launch.copies[0].bytes.value);
    expect_launcher_follows(code.value().source, fusion.launch, nullptr);
  }
  EXPECT_TRUE(contains(code.value().header, "cudaError_t fusegen_alias_launch(const float* x, float* y, float* z, "
                                            "long long N, void* workspace, cudaStream_t stream);"));
  Result<LaunchPlan> numbers = evaluate_launch_plan(code.value().fusions[0].launch);
  ASSERT_FALSE(numbers);
  EXPECT_TRUE(contains(numbers.error(), "not a constant after specialization")) << numbers.error();
}

// For every spec: the launch plan lower() returns is the printed launcher's
// sequence at those dims evaluated, and the unspecialized launcher follows
// its own (symbolic) plan. (Their kernels may differ: the planner may fuse
// more at known dims.)
TEST(Lower, LauncherIsPrintedFromTheLaunchPlan) {
  std::vector<fs::path> specs;
  for (const char* dir : {"specs/kernelbench", "specs/kernelbench/small", "tests/regressions"})
    for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(FUSEGEN_SOURCE_DIR) / dir))
      if (entry.path().extension() == ".fg")
        specs.push_back(fs::relative(entry.path(), FUSEGEN_SOURCE_DIR));
  std::sort(specs.begin(), specs.end());
  ASSERT_GT(specs.size(), 5u);
  size_t fills = 0;
  for (const fs::path& spec : specs) {
    SCOPED_TRACE(spec.string());
    auto loaded = load(spec);
    ASSERT_TRUE(loaded);
    for (const Fusion& fusion : loaded->module.fusions) {
      Diagnostics diags;
      DimBindings dims = all_dims(fusion, 64);
      if (spec.stem() == "fixed_dims_only")
        dims["K"] = 5; // fixed by the weight
      Result<Lowered> lowered = lower(fusion, dims, {}, diags);
      ASSERT_TRUE(lowered) << (lowered ? "" : lowered.error()) << diags.render(loaded->sources);
      Plan plan = plan_fusion(lowered.value().concrete);
      Result<GeneratedCode> specialized = generate_cuda({plan}, {});
      ASSERT_TRUE(specialized) << specialized.error();
      const SymbolicLaunchPlan& at_dims = specialized.value().fusions[0].launch;
      EXPECT_EQ(evaluate_launch_plan(at_dims).value(), lowered.value().launch);
      expect_launcher_follows(lowered.value().source, at_dims, &lowered.value().launch);
      for (const KernelLaunchPlan& kernel : lowered.value().launch.kernels)
        fills += kernel.fills.size();

      Result<GeneratedCode> symbolic = generate_cuda({plan_fusion(fusion)}, {});
      ASSERT_TRUE(symbolic) << symbolic.error();
      const SymbolicLaunchPlan& over_dims = symbolic.value().fusions[0].launch;
      expect_launcher_follows(symbolic.value().source, over_dims, nullptr);
    }
  }
  EXPECT_GT(fills, 0u) << "no spec has a fill (a GEMM's row minimum across its tiles)";
}

TEST(Lower, FusionThatDoesNotSpecializeLeavesDiagnostics) {
  auto loaded = load("tests/regressions/fixed_dims_only.fg");
  ASSERT_TRUE(loaded);
  ASSERT_FALSE(loaded->module.fusions.empty());
  const Fusion& fusion = loaded->module.fusions[0];
  DimBindings dims = all_dims(fusion, 64);
  dims["K"] = 6; // fixed to 5 by the spec
  Diagnostics diags;
  Result<Lowered> lowered = lower(fusion, dims, {}, diags);
  ASSERT_FALSE(lowered);
  EXPECT_TRUE(diags.has_errors());
}

TEST(Lower, RefusedGemmBlockIsAnErrorWithoutDiagnostics) {
  auto loaded = load("specs/kernelbench/small/75_gemm_groupnorm_min_biasadd.fg");
  ASSERT_TRUE(loaded);
  const Fusion& fusion = loaded->module.fusions[0];
  Diagnostics diags;
  LowerTarget target;
  target.arch = 80;
  target.gemm_block = GemmBlock{64, 64, 8}; // split-K needs clusters (sm_90)
  Result<Lowered> lowered = lower(fusion, all_dims(fusion, 64), target, diags);
  ASSERT_FALSE(lowered);
  EXPECT_FALSE(diags.has_errors());
  EXPECT_FALSE(lowered.error().empty());
}

} // namespace
} // namespace fusegen
