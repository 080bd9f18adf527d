// Unit tests for the window ops (max_pool2d, avg_pool2d, adaptive_avg_pool2d):
// shape inference, attribute canonicalization, error messages and reference
// values including padding and non-divisible adaptive bins.
#include "support/OpTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace fusegen {
namespace {

using namespace fusegen::testing;

TEST(WindowOps, Registration) {
  for (const char* name : {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"})
    EXPECT_EQ(op_named(name).kind, OpKind::Window) << name;
  const OpDef& max_pool = op_named("max_pool2d");
  std::vector<std::string> names;
  for (const ParamSpec& p : max_pool.params)
    names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input", "kernel_size", "stride", "padding", "dilation", "ceil_mode"}));
  EXPECT_FALSE(max_pool.param("kernel_size")->default_value);
  EXPECT_EQ(max_pool.param("stride")->kind, ParamKind::OptionalInts);
  EXPECT_EQ(max_pool.param("stride")->default_value, AttrValue(NoneAttr{}));
  EXPECT_EQ(op_named("adaptive_avg_pool2d").param("output_size")->default_value,
            AttrValue(int64_t{1}));
}

// ---- max_pool2d / avg_pool2d ----

TEST(WindowOps, PoolShapes) {
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    Inferred halve = infer(op, {"[N, 3, 32, 32]"}, {{"kernel_size", int64_t{2}}});
    EXPECT_EQ(halve.shape(), "[N, 3, 16, 16]") << op;
    EXPECT_EQ(halve.attrs.at("kernel_size"), ints({2, 2}));
    EXPECT_EQ(halve.attrs.at("stride"), ints({2, 2})); // None means kernel_size
    EXPECT_EQ(halve.attrs.at("padding"), ints({0, 0}));
    Inferred padded = infer(op, {"[N, C, 32, 32]"},
                            {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}},
                             {"padding", int64_t{1}}});
    EXPECT_EQ(padded.shape(), "[N, C, 16, 16]") << op;
    EXPECT_EQ(padded.attrs.at("stride"), ints({2, 2}));
  }
  EXPECT_EQ(infer("max_pool2d", {"[3, 7, 7]"},
                  {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}})
                .shape(),
            "[3, 3, 3]");
  EXPECT_EQ(infer("max_pool2d", {"[1, 1, 5, 7]"},
                  {{"kernel_size", ints({2, 3})}, {"stride", ints({1, 2})}})
                .shape(),
            "[1, 1, 4, 3]");
  // An empty stride tuple means the default, as in torch.
  Inferred empty = infer("avg_pool2d", {"[1, 1, 6, 6]"},
                         {{"kernel_size", ints({3, 2})}, {"stride", ints({})}});
  EXPECT_EQ(empty.shape(), "[1, 1, 2, 3]");
  EXPECT_EQ(empty.attrs.at("stride"), ints({3, 2}));
}

TEST(WindowOps, PoolErrors) {
  auto error = [](const char* input, const Attrs& attrs) {
    return infer("max_pool2d", {input}, attrs).error();
  };
  EXPECT_EQ(error("[1, 1, 4, 4]", {{"kernel_size", int64_t{5}}}),
            "max_pool2d: pooling window 5x5 is larger than the padded input 4x4");
  EXPECT_EQ(error("[1, 1, 2, 2]", {{"kernel_size", int64_t{5}}, {"padding", int64_t{1}}}),
            "max_pool2d: pooling window 5x5 is larger than the padded input 4x4");
  EXPECT_EQ(error("[1, 1, 8, 8]", {{"kernel_size", int64_t{3}}, {"padding", ints({1, 2})}}),
            "max_pool2d: pad should be at most half of effective kernel size, but got padding 1x2 "
            "and kernel_size 3x3");
  EXPECT_EQ(error("[1, 1, 8, 8]", {{"kernel_size", ints({0, 2})}}),
            "max_pool2d: kernel_size must be positive but got 0x2");
  EXPECT_EQ(error("[1, 1, 8, 8]", {{"kernel_size", int64_t{2}}, {"stride", ints({0, 1})}}),
            "max_pool2d: stride must be positive but got 0x1");
  EXPECT_EQ(error("[1, 1, 8, 8]", {{"kernel_size", int64_t{2}}, {"padding", int64_t{-1}}}),
            "max_pool2d: padding must be non-negative but got -1x-1");
  EXPECT_EQ(error("[1, 1, 8, 8]", {{"kernel_size", ints({2, 2, 2})}}),
            "max_pool2d: kernel_size must be an int or a pair of ints (H, W) but got 3 values");
  EXPECT_EQ(error("[1, 1, 8, 8]", {{"kernel_size", ints({})}}),
            "max_pool2d: kernel_size must be an int or a pair of ints (H, W) but got 0 values");
  EXPECT_EQ(error("[N, 3, H, W]", {{"kernel_size", int64_t{2}}}),
            "max_pool2d: spatial dims must be constants (H is symbolic in input [N, 3, H, W])");
  EXPECT_EQ(error("[N, 3, 32, W]", {{"kernel_size", int64_t{2}}}),
            "max_pool2d: spatial dims must be constants (W is symbolic in input [N, 3, 32, W])");
  EXPECT_EQ(error("[8, 8]", {{"kernel_size", int64_t{2}}}),
            "max_pool2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input but got [8, 8]");
  EXPECT_EQ(infer("avg_pool2d", {"[1, 1, 4, 4]"}, {{"kernel_size", ints({2, 5})}}).error(),
            "avg_pool2d: pooling window 2x5 is larger than the padded input 4x4");
}

TEST(WindowOps, MaxPoolReference) {
  HostTensor x = iota({1, 1, 3, 3}, 1.0, 1.0); // 1..9
  expect_values(run("max_pool2d", {x}, {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}}),
                {5, 6, 8, 9});
  // Padding never wins a max: with all-negative input it must not produce 0.
  HostTensor negative = iota({1, 1, 3, 3}, -1.0, -1.0); // -1..-9
  HostTensor y =
      run("max_pool2d", {negative}, {{"kernel_size", int64_t{2}}, {"padding", int64_t{1}}});
  EXPECT_EQ(y.shape, (std::vector<int64_t>{1, 1, 2, 2}));
  expect_values(y, {-1, -2, -4, -5});
  // Planes (n, c) are pooled independently.
  HostTensor planes = host({2, 1, 1, 2}, {1, 7, 4, 3});
  expect_values(run("max_pool2d", {planes}, {{"kernel_size", ints({1, 2})}}), {7, 4});
}

TEST(WindowOps, MaxPoolPropagatesNan) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor x = host({1, 2, 2}, {1, nan, 3, 4});
  HostTensor y = run("max_pool2d", {x}, {{"kernel_size", int64_t{2}}});
  ASSERT_EQ(y.data.size(), 1u);
  EXPECT_TRUE(std::isnan(y.data[0]));
}

TEST(WindowOps, AvgPoolReference) {
  HostTensor x = iota({1, 1, 4, 4});
  expect_values(run("avg_pool2d", {x}, {{"kernel_size", int64_t{2}}}), {2.5, 4.5, 10.5, 12.5});
  // count_include_pad=True: padding taps count in the divisor (always 9 here).
  HostTensor padded = run("avg_pool2d", {x},
                          {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}},
                           {"padding", int64_t{1}}});
  expect_values(padded, {10.0 / 9, 24.0 / 9, 51.0 / 9, 90.0 / 9});
  HostTensor ones = host({1, 2, 2}, {1, 1, 1, 1}); // unbatched
  Attrs attrs = {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}};
  HostTensor y = run("avg_pool2d", {ones}, attrs);
  EXPECT_EQ(y.shape, (std::vector<int64_t>{1, 3, 3}));
  expect_values(y, {0.25, 0.5, 0.25, 0.5, 1, 0.5, 0.25, 0.5, 0.25});
}

// ---- adaptive_avg_pool2d ----

TEST(WindowOps, AdaptiveAvgPoolShapes) {
  Inferred global = infer("adaptive_avg_pool2d", {"[N, 512, 7, 7]"});
  EXPECT_EQ(global.shape(), "[N, 512, 1, 1]");
  EXPECT_EQ(global.attrs.at("output_size"), ints({1, 1}));
  EXPECT_EQ(infer("adaptive_avg_pool2d", {"[N, C, 9, 9]"}, {{"output_size", ints({3, 2})}})
                .shape(),
            "[N, C, 3, 2]");
  // The output size does not depend on H and W, so they may be symbolic.
  EXPECT_EQ(infer("adaptive_avg_pool2d", {"[N, 3, H, W]"}, {{"output_size", int64_t{4}}}).shape(),
            "[N, 3, 4, 4]");
  EXPECT_EQ(infer("adaptive_avg_pool2d", {"[3, 5, 5]"}).shape(), "[3, 1, 1]");
}

TEST(WindowOps, AdaptiveAvgPoolErrors) {
  EXPECT_EQ(infer("adaptive_avg_pool2d", {"[N, 3, 8, 8]"}, {{"output_size", ints({0, 2})}}).error(),
            "adaptive_avg_pool2d: output_size must be positive but got 0x2");
  EXPECT_EQ(infer("adaptive_avg_pool2d", {"[N, 3, 8, 8]"}, {{"output_size", ints({1, 2, 3})}})
                .error(),
            "adaptive_avg_pool2d: output_size must be an int or a pair of ints (H, W) but got 3 "
            "values");
  EXPECT_EQ(infer("adaptive_avg_pool2d", {"[N, 3, 0, 4]"}).error(),
            "adaptive_avg_pool2d: expected non-empty spatial dims but got input [N, 3, 0, 4]");
  EXPECT_EQ(infer("adaptive_avg_pool2d", {"[8]"}).error(),
            "adaptive_avg_pool2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input but got [8]");
}

TEST(WindowOps, AdaptiveAvgPoolReference) {
  // 5 -> 3: bins [0, 2), [1, 4), [3, 5) overlap.
  HostTensor row = host({1, 1, 1, 5}, {1, 2, 3, 4, 5});
  expect_values(run("adaptive_avg_pool2d", {row}, {{"output_size", ints({1, 3})}}), {1.5, 3, 4.5});
  // 2 -> 3: bins [0, 1), [0, 2), [1, 2).
  HostTensor pair = host({1, 1, 1, 2}, {1, 3});
  expect_values(run("adaptive_avg_pool2d", {pair}, {{"output_size", ints({1, 3})}}), {1, 2, 3});
  // 3x2 -> 2x1: row bins [0, 2), [1, 3); one column bin.
  HostTensor x = iota({1, 3, 2});
  expect_values(run("adaptive_avg_pool2d", {x}, {{"output_size", ints({2, 1})}}), {1.5, 3.5});
  // Global average per plane.
  HostTensor planes = iota({2, 1, 2, 2});
  expect_values(run("adaptive_avg_pool2d", {planes}), {1.5, 5.5});
}

} // namespace
} // namespace fusegen
