// Strict GEMMs on FP16x3 (templates/gemm/mainloop_fp16x3.cuh, asked for
// through RuntimeOptions::strict_product) against the
// float64 reference, with operands chosen to leave fp16's range: huge
// values, rows and columns of tiny magnitudes or subnormals, zeros, inf and
// NaN. A block whose operands leave the range must fall back to 3xTF32, so
// every case keeps strict precision's error bound: |got - want| within
// 2^-18 of sum_k |a_ik| |b_kj| (3xTF32 and FP16x3 both keep about 2^-21),
// which tiny rows multiplied in FP16x3 without the fallback miss by far.
// Below fp32's smallest normal number (2^-126) tensor-core products keep no
// relative accuracy (they flush subnormal products), so results there are
// only held to 2^-126.
// Where the reference is inf, strict GEMMs give inf or NaN: an inf meets
// split parts of both signs (3xTF32's small parts can have the opposite
// sign of the big ones), a known limit of split products (docs/kernels-gemm.md).
// Both B paths run: split in shared memory (few rows) and split once per
// call by a pass (rows >= 8192). Skips without a GPU.

#include "support/GpuSupport.h"
#include "support/TestSupport.h"

#include "fusegen/Interpreter.h"
#include "fusegen/RandomInputs.h"
#include "fusegen/Specialize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace fusegen {
namespace {

constexpr int64_t kIn = 512, kOut = 1024;

const char* const kSpec = "fusion f {\n  input x : f32[N, 512]\n  param w : f32[1024, 512]\n"
                          "  output y = linear(x, w)\n}\n";

struct RangeCase {
  std::string name;
  // Changes the random x ([N, 512]) and w ([1024, 512]) in place.
  std::function<void(HostTensor& x, HostTensor& w)> shape_operands;
};

void PrintTo(const RangeCase& c, std::ostream* os) { *os << c.name; }

void scale_row(HostTensor& t, int64_t row, double factor) {
  for (int64_t k = 0; k < t.dim(1); ++k)
    t.data[static_cast<size_t>(row * t.dim(1) + k)] *= factor;
}

std::vector<RangeCase> range_cases() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  return {
      {"in_range", [](HostTensor&, HostTensor&) {}},
      {"huge_value_in_a", [](HostTensor& x, HostTensor&) { x.data[3 * kIn + 17] = 1.0e6; }},
      {"huge_column_of_b", [](HostTensor&, HostTensor& w) { scale_row(w, 5, 2.0e5); }},
      {"tiny_rows_of_a",
       [](HostTensor& x, HostTensor&) {
         for (int64_t row = 0; row < x.dim(0); row += 7)
           scale_row(x, row, 1.0e-7);
       }},
      {"tiny_column_of_b", [](HostTensor&, HostTensor& w) { scale_row(w, 40, 3.0e-6); }},
      {"subnormal_row_of_a", [](HostTensor& x, HostTensor&) { scale_row(x, 1, 1.0e-39); }},
      {"zero_rows_and_columns",
       [](HostTensor& x, HostTensor& w) {
         scale_row(x, 2, 0.0);
         scale_row(w, 9, 0.0);
       }},
      {"inf_and_nan",
       [inf, nan](HostTensor& x, HostTensor& w) {
         x.data[4 * kIn + 100] = inf;
         w.data[11 * kIn + 7] = -inf;
         x.data[6 * kIn + 300] = nan;
       }},
  };
}

// |got - want| <= bound * sum_k |x_mk| |w_nk| where the reference is
// finite; inf and NaN where it has them.
void expect_within_strict_bound(const std::vector<float>& got, const HostTensor& want, const HostTensor& x,
                                const HostTensor& w, double bound, const std::string& context) {
  ASSERT_EQ(x.dim(1), kIn);
  ASSERT_EQ(w.dim(0), kOut);
  ASSERT_EQ(w.dim(1), kIn);
  ASSERT_EQ(got.size(), want.data.size()) << context;
  ASSERT_EQ(want.data.size(), static_cast<size_t>(x.dim(0) * kOut)) << context;
  int reported = 0;
  for (int64_t m = 0; m < x.dim(0); ++m)
    for (int64_t n = 0; n < kOut; ++n) {
      const size_t i = static_cast<size_t>(m * kOut + n);
      const double expected = want.data[i], actual = got[i];
      bool ok;
      double magnitude = 0;
      if (std::isnan(expected))
        ok = std::isnan(actual);
      else if (std::isinf(expected))
        ok = !std::isfinite(actual);
      else {
        for (int64_t k = 0; k < kIn; ++k)
          magnitude += std::fabs(x.data[static_cast<size_t>(m * kIn + k)] * w.data[static_cast<size_t>(n * kIn + k)]);
        ok = std::fabs(actual - expected) <= bound * magnitude + std::ldexp(1.0, -126);
      }
      if (!ok && reported++ < 5)
        ADD_FAILURE() << context << ": y[" << m << ", " << n << "] = " << actual << ", reference " << expected
                      << ", bound " << bound * magnitude << " (sum of |x| |w| " << magnitude << ")";
    }
}

class GpuFp16x3Range : public ::testing::TestWithParam<RangeCase> {};

TEST_P(GpuFp16x3Range, KeepsStrictPrecision) {
  FUSEGEN_SKIP_WITHOUT_GPU();
  auto loaded = testing::load_module(kSpec, "fp16x3.fg");
  ASSERT_TRUE(loaded);
  testing::TempDir cache;
  RuntimeOptions options;
  options.cache_dir = cache.path();
  options.strict_product = StrictProduct::FP16x3;
  Runtime rt(0, options);
  Program program = rt.load_string(kSpec, "fp16x3.fg");
  const Fusion& fusion = loaded->module.fusions.at(0);
  // Enough rows for 128x128 blocks on wgmma: 2304 split B in shared memory;
  // 8200 (from 8192) split it by the pass first.
  for (int64_t rows : {2304, 8200}) {
    Diagnostics diags;
    std::optional<Fusion> concrete = specialize(fusion, {{"N", rows}}, diags);
    ASSERT_TRUE(concrete) << diags.render(loaded->sources);
    std::map<std::string, HostTensor> inputs = make_random_arguments(*concrete, 11);
    GetParam().shape_operands(inputs.at("x"), inputs.at("w"));
    testing::DeviceResult got = testing::run_on_device(rt, program.function(fusion.name), *concrete, inputs);
    Result<InterpreterResult> want = interpret(fusion, inputs);
    ASSERT_TRUE(want) << want.error();
    expect_within_strict_bound(got.outputs.at("y"), want.value().outputs.at("y"), inputs.at("x"), inputs.at("w"),
                               std::ldexp(1.0, -18), GetParam().name + " N=" + std::to_string(rows));
  }
}

std::string range_case_name(const ::testing::TestParamInfo<RangeCase>& param) { return param.param.name; }

INSTANTIATE_TEST_SUITE_P(Operands, GpuFp16x3Range, ::testing::ValuesIn(range_cases()), range_case_name);

} // namespace
} // namespace fusegen
