// Strict GEMMs as FP16x3 (templates/gemm/mainloop_fp16x3.cuh): taken only
// where CodegenOptions::strict_product asks for it and the kernel runs on
// wgmma (B split in shared memory, or once per call by the pass when the
// depth is a multiple of 32); the kernels compile for sm_90a.

#include "support/CodegenTesting.h"
#include "support/Nvrtc.h"

#include <gtest/gtest.h>

#include <string>

namespace fusegen {
namespace {

using namespace fusegen::testing;

constexpr const char* kLinear = R"(
fusion f {
  input x : f32[N, 512]
  param w : f32[1024, 512]
  output y = linear(x, w)
}
)";

GeneratedCode generate_with(const std::vector<Plan>& plans, std::optional<StrictProduct> product, int arch = 90) {
  return generate(plans, Precision::Strict, arch, product);
}

TEST(CodegenFp16x3, OnlyWhereAskedForAndOnWgmma) {
  // 2304 rows: B split in shared memory; 8200: by the pass before the GEMM.
  for (int64_t rows : {2304, 8200}) {
    const std::vector<Plan> plans = plans_of(kLinear, {{"N", rows}});
    const std::string what = "N=" + std::to_string(rows);
    EXPECT_EQ(constant_of(kernel_text(generate_with(plans, std::nullopt), "f_k0"), "kInnerProduct"), "1") << what;
    const GeneratedCode fp16x3 = generate_with(plans, StrictProduct::FP16x3);
    EXPECT_EQ(constant_of(kernel_text(fp16x3, "f_k0"), "kInnerProduct"), "3") << what;
    EXPECT_TRUE(contains(launch_named(fp16x3, 0, "f_k0").variant, "fp16x3")) << what;
    // sm_80 has no wgmma: 3xTF32 whatever is asked.
    EXPECT_EQ(constant_of(kernel_text(generate_with(plans, StrictProduct::FP16x3, 80), "f_k0"), "kInnerProduct"), "1")
        << what;
  }
  const GeneratedCode split = generate_with(plans_of(kLinear, {{"N", 8200}}), StrictProduct::FP16x3);
  EXPECT_TRUE(contains(split.source, "fp16 hi and lo halves")) << "the pass before the GEMM splits B into halves";
}

TEST(CodegenFp16x3, NamesRoundTrip) {
  for (StrictProduct product : {StrictProduct::ThreeTF32, StrictProduct::FP16x3})
    EXPECT_EQ(parse_strict_product(strict_product_name(product)), product);
  EXPECT_FALSE(parse_strict_product("fp16"));
}

TEST(CodegenFp16x3, KernelsCompile) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (int64_t rows : {2304, 8200}) {
    const GeneratedCode code = generate_with(plans_of(kLinear, {{"N", rows}}), StrictProduct::FP16x3);
    expect_compiles(gemm_source(code), "fp16x3 N=" + std::to_string(rows), /*all_archs=*/false);
  }
}

} // namespace
} // namespace fusegen
