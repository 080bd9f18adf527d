// The specs of tests/regressions on the CPU: each checks, plans and generates
// (sm_80 and sm_90, symbolic and at several N), and the behaviour each once
// got wrong is checked on its plan. The GPU runs them against the reference
// (GpuSpecs in tests/runtime/gpu/test_gpu_specs.cpp).
#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace fusegen {
namespace {

namespace fs = std::filesystem;

const fs::path kRegressions = fs::path(FUSEGEN_SOURCE_DIR) / "tests" / "regressions";

struct Compiled {
  SourceManager sources;
  std::optional<Module> module;
  std::string diagnostics;
};

std::unique_ptr<Compiled> compile_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  auto out = std::make_unique<Compiled>();
  uint32_t file = out->sources.add_buffer(path.filename().string(), text.str());
  Diagnostics diags;
  out->module = compile_spec(out->sources, file, diags);
  out->diagnostics = diags.render(out->sources);
  return out;
}

Plan plan_at(const Fusion& fusion, int64_t n) {
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(fusion, {{"N", n}}, diags);
  EXPECT_TRUE(concrete) << fusion.name << " N=" << n;
  return concrete ? plan_fusion(*concrete) : Plan{};
}

TEST(Regressions, EverySpecPlansAndGenerates) {
  std::vector<fs::path> specs;
  for (const auto& entry : fs::directory_iterator(kRegressions))
    if (entry.path().extension() == ".fg")
      specs.push_back(entry.path());
  std::sort(specs.begin(), specs.end());
  ASSERT_GE(specs.size(), 4u);
  for (const fs::path& spec : specs) {
    auto compiled = compile_file(spec);
    ASSERT_TRUE(compiled->module) << spec << ": " << compiled->diagnostics;
    for (const Fusion& fusion : compiled->module->fusions) {
      std::vector<Plan> plans = {plan_fusion(fusion)};
      for (int64_t n : {5, 64, 300, 2000})
        plans.push_back(plan_at(fusion, n));
      for (const Plan& plan : plans)
        for (int arch : {80, 90}) {
          CodegenOptions options;
          options.arch = arch;
          Result<GeneratedCode> code = generate_cuda({plan}, options);
          EXPECT_TRUE(code) << spec.filename() << " sm_" << arch << ": " << code.error();
        }
    }
  }
}

// Generation once recursed per statement (a stack overflow at 10,000) and
// planning was quadratic in a stage's length (49 s at 100,000 statements).
TEST(Regressions, LongRebindingChainIsLinear) {
  auto compiled = compile_file(kRegressions / "long_rebinding_chain.fg");
  ASSERT_TRUE(compiled->module) << compiled->diagnostics;
  const Fusion& fusion = compiled->module->fusions[0];
  ASSERT_GE(fusion.nodes.size(), 20000u);
  const auto start = std::chrono::steady_clock::now();
  Plan plan = plan_at(fusion, 64);
  EXPECT_EQ(plan.kernels.size(), 1u);
  Result<GeneratedCode> code = generate_cuda({plan}, CodegenOptions{});
  ASSERT_TRUE(code) << code.error();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // About 0.3 s here in a release build; generous for sanitizers and a loaded machine.
  EXPECT_LT(seconds, 30.0);
}

// The names of the buffers kernel `k` writes.
std::vector<std::string> writes_of(const Plan& plan, size_t k) {
  std::vector<std::string> names;
  for (BufferId id : plan.kernels.at(k).writes)
    names.push_back(plan.buffers.at(id).name);
  return names;
}

bool writes(const Plan& plan, size_t k, const std::string& name) {
  std::vector<std::string> names = writes_of(plan, k);
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Only the running stats are wanted: some kernel updates them, and no kernel
// is left that writes nothing.
TEST(Regressions, BatchNormKeptForItsRunningStats) {
  for (const char* file : {"batch_norm_stats_only.fg", "batch_norm_gemm_stats_only.fg"}) {
    auto compiled = compile_file(kRegressions / file);
    ASSERT_TRUE(compiled->module) << compiled->diagnostics;
    for (int64_t n : {64, 4096}) {
      Plan plan = plan_at(compiled->module->fusions[0], n);
      bool updates = false;
      for (size_t k = 0; k < plan.kernels.size(); ++k) {
        EXPECT_FALSE(plan.kernels[k].writes.empty()) << file << " N=" << n << " kernel " << k;
        updates = updates || (writes(plan, k, "rm") && writes(plan, k, "rv"));
      }
      EXPECT_TRUE(updates) << file << " N=" << n;
    }
  }
}

// A kernel that updates a running stat must not also read it as a value in
// other threads: the update goes to a kernel of its own, before the readers.
TEST(Regressions, RunningStatReadAfterItsUpdateIsNotRacing) {
  auto compiled = compile_file(kRegressions / "batch_norm_reads_updated_stat.fg");
  ASSERT_TRUE(compiled->module) << compiled->diagnostics;
  const Fusion& fusion = compiled->module->fusions[0];
  for (int64_t n : {5, 64, 300, 4096}) {
    Plan plan = plan_at(fusion, n);
    for (const Node& node : fusion.nodes) {
      if (node.op != "add" && node.op != "mul")
        continue; // the readers: y = h + rm, z = h * rv
      const size_t reader = plan.kernel_of(node.id);
      for (size_t k = 0; k < plan.kernels.size(); ++k) {
        if (writes(plan, k, "rm") || writes(plan, k, "rv")) {
          EXPECT_LT(k, reader) << "N=" << n << ": kernel " << k << " updates the running stats, kernel " << reader
                               << " reads them";
        }
      }
    }
  }
}

// The offline launchers take every output, also those no kernel writes, and
// the generated file builds with nvcc (host launchers included) and links
// with a caller that passes them all. (The runtime's path runs these specs on
// the GPU in Regressions/GpuSpecs.)
TEST(Regressions, OfflineLaunchersTakeEveryOutput) {
#ifndef FUSEGEN_NVCC_PATH
  GTEST_SKIP() << "skipped: no nvcc";
#else
  auto compiled = compile_file(kRegressions / "offline_launcher_outputs.fg");
  ASSERT_TRUE(compiled->module) << compiled->diagnostics;
  std::vector<Plan> plans;
  for (const Fusion& fusion : compiled->module->fusions)
    plans.push_back(plan_fusion(fusion));
  CodegenOptions options;
  Result<GeneratedCode> code = generate_cuda(plans, options);
  ASSERT_TRUE(code) << code.error();
  const fs::path dir = fs::temp_directory_path() / ("fusegen-launchers-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "kernels.cu") << code.value().source;
  std::ofstream(dir / "kernels.h") << code.value().header;
  std::ofstream(dir / "caller.cu") << R"(#include "kernels.h"
int main() {
  float *x = nullptr, *y = nullptr, *z = nullptr;
  long long n = 3;
  cudaError_t a = fusegen_alias_launch(x, y, z, n, nullptr, 0);
  cudaError_t b = fusegen_passthru_launch(x, y, n, nullptr, 0);
  return (int)a + (int)b + (int)fusegen_alias_workspace_size(n) + (int)fusegen_passthru_workspace_size(n);
}
)";
  const std::string command = std::string(FUSEGEN_NVCC_PATH) + " -arch=sm_90a -Werror all-warnings -o " +
                              (dir / "caller").string() + " " + (dir / "kernels.cu").string() + " " +
                              (dir / "caller.cu").string() + " > " + (dir / "log").string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream log(dir / "log");
  std::ostringstream text;
  text << log.rdbuf();
  EXPECT_EQ(status, 0) << text.str();
  fs::remove_all(dir);
#endif
}

} // namespace
} // namespace fusegen
