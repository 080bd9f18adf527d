// Every KernelBench seed chain (both shape sets) on the GPU through the JIT
// runtime against the float64 reference interpreter on the same random
// inputs: strict precision within 1e-4, tf32 within 1e-2 (atol and rtol).
// The small shapes also run at edge batch sizes (N = 1, 3, 127, 1025), which
// scripts/gpu-check.sh runs again under compute-sanitizer. Skips without a GPU.
#include "support/GpuSupport.h"
#include "support/TestSupport.h"

#include "fusegen/Interpreter.h"
#include "fusegen/RandomInputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace fusegen {
namespace {

struct SpecCase {
  std::string spec;
  int64_t n = 0;
  Precision precision = Precision::Strict;
  // Calls of each fusion, each on fresh inputs: state a kernel keeps in the
  // workspace between calls (arrival counters) must be left as it found it.
  int calls = 1;
};

void PrintTo(const SpecCase& c, std::ostream* os) {
  *os << c.spec << " N=" << c.n << " " << precision_name(c.precision);
}

// Batch sizes. The small shapes: KernelBench's (128), and sizes that are not
// multiples of any tile, from a single row to just past 1024, so that every
// kernel's partial tiles and bounds checks run (gpu-check.sh selects these by
// N for compute-sanitizer). The v0.1 shapes: a small one only, as their
// float64 reference on the CPU is slow.
std::vector<int64_t> batch_sizes(const std::string& spec, Precision precision) {
  if (spec.find("/small/") == std::string::npos)
    return {8};
  // 4500 (35 row blocks of 128 and a partial one) is the one large enough
  // for 128-row blocks, which take wgmma on an H100.
  std::vector<int64_t> sizes = {128, 33, 1, 3, 127, 1025, 4500};
  // Batch norm in training needs more than one value per channel (the
  // verifier refuses N=1): 5 stands in for 1, as in test_gpu_threads.cpp.
  // Over a handful of rows the normalization divides by the standard
  // deviation of a few values, which amplifies tf32's ~1e-3 product error
  // past the 1e-2 bound (measured on the H100: N=3 failed), so tf32 leaves
  // out the batches under 8; strict precision covers them.
  std::string text = testing::read_text(testing::source_path(spec));
  // tf32 GEMMs take 128x256 blocks (wgmma m64n256) once that still gives 132
  // blocks: 9000 rows of 512 columns (71 * 2 blocks) are the smallest here.
  if (precision == Precision::TF32 && text.find("conv2d(") == std::string::npos)
    sizes.push_back(9000);
  if (text.find("batch_norm(") != std::string::npos && text.find("training=true") != std::string::npos) {
    std::replace(sizes.begin(), sizes.end(), int64_t{1}, int64_t{5});
    if (precision == Precision::TF32)
      std::erase_if(sizes, [](int64_t n) { return n < 8; });
  }
  return sizes;
}

std::vector<SpecCase> cases() {
  std::vector<SpecCase> out;
  for (const std::string& spec : testing::kernelbench_specs())
    for (Precision precision : {Precision::Strict, Precision::TF32})
      for (int64_t n : batch_sizes(spec, precision))
        out.push_back({spec, n, precision});
  return out;
}

// tests/regressions (README there): strict precision at batch sizes on both
// sides of the planner's small-batch paths (batch_norm's merged finalize up
// to 512 rows).
std::vector<SpecCase> regression_cases() {
  std::vector<std::string> specs;
  for (const auto& entry : std::filesystem::directory_iterator(testing::source_path("tests/regressions")))
    if (entry.path().extension() == ".fg")
      specs.push_back("tests/regressions/" + entry.path().filename().string());
  std::sort(specs.begin(), specs.end());
  std::vector<SpecCase> out;
  for (const std::string& spec : specs) {
    // The 10,000-statement chain's kernel takes NVRTC ~15 s: one size (its
    // elementwise kernel has no small-batch path).
    std::vector<int64_t> sizes = {5, 64, 300, 2000};
    if (spec.find("long_rebinding_chain") != std::string::npos)
      sizes = {300};
    for (int64_t n : sizes)
      out.push_back({spec, n, Precision::Strict, 2});
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<SpecCase>& info) {
  const std::string& spec = info.param.spec;
  std::string name = spec.find("/small/") != std::string::npos        ? "small_"
                     : spec.find("regressions/") != std::string::npos ? "regression_"
                                                                      : "v01_";
  for (char c : std::filesystem::path(info.param.spec).stem().string())
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name + "_N" + std::to_string(info.param.n) + "_" + precision_name(info.param.precision);
}

class GpuSpecs : public ::testing::TestWithParam<SpecCase> {};

TEST_P(GpuSpecs, MatchesTheReferenceInterpreter) {
  FUSEGEN_SKIP_WITHOUT_GPU();
  const SpecCase& c = GetParam();
  auto loaded = testing::load_module(testing::read_text(testing::source_path(c.spec)), c.spec);
  ASSERT_TRUE(loaded);
  testing::TempDir cache;
  RuntimeOptions options;
  options.precision = c.precision;
  options.cache_dir = cache.path();
  Runtime rt(0, options);
  Program program = rt.load_file(testing::source_path(c.spec));
  const double tol = c.precision == Precision::TF32 ? 1e-2 : 1e-4;
  for (const Fusion& fusion : loaded->module.fusions) {
    Diagnostics diags;
    std::optional<Fusion> concrete = specialize(fusion, {{"N", c.n}}, diags);
    ASSERT_TRUE(concrete) << diags.render(loaded->sources);
    for (int call = 1; call <= c.calls; ++call) {
      std::map<std::string, HostTensor> inputs = make_random_arguments(*concrete, static_cast<uint64_t>(call));
      testing::DeviceResult got = testing::run_on_device(rt, program.function(fusion.name), *concrete, inputs);
      Result<InterpreterResult> want = interpret(fusion, inputs);
      ASSERT_TRUE(want) << want.error();
      const std::string what = fusion.name + (call > 1 ? " (call " + std::to_string(call) + ")" : "");
      for (const auto& [key, summary] : testing::expect_matches_reference(got, want.value(), tol, what))
        RecordProperty(key + (call > 1 ? "_call" + std::to_string(call) : ""), summary);
    }
  }
  EXPECT_EQ(rt.stats().compiles, loaded->module.fusions.size());
}

INSTANTIATE_TEST_SUITE_P(KernelBench, GpuSpecs, ::testing::ValuesIn(cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Regressions, GpuSpecs, ::testing::ValuesIn(regression_cases()), case_name);

} // namespace
} // namespace fusegen
