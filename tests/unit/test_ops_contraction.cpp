// Unit tests for the contraction ops (linear, matmul, conv2d): shape
// inference, attribute canonicalization, error messages and reference values.
#include "support/OpTesting.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace fusegen {
namespace {

using namespace fusegen::testing;

// ---- linear ----

TEST(ContractionOps, LinearRegistration) {
  const OpDef& op = op_named("linear");
  EXPECT_EQ(op.kind, OpKind::Contraction);
  ASSERT_EQ(op.params.size(), 3u);
  EXPECT_EQ(op.params[1].init, ParamInit::KaimingUniform);
  EXPECT_EQ(op.params[2].kind, ParamKind::OptionalTensor);
  EXPECT_EQ(op.params[2].init, ParamInit::BiasUniform);
  EXPECT_FALSE(op.mutates);
}

TEST(ContractionOps, LinearShapes) {
  EXPECT_EQ(infer("linear", {"[N, 8]", "[4, 8]", "[4]"}).shape(), "[N, 4]");
  EXPECT_EQ(infer("linear", {"[2, 3, 8]", "[4, 8]", nullptr}).shape(), "[2, 3, 4]");
  EXPECT_EQ(infer("linear", {"[8]", "[4, 8]", nullptr}).shape(), "[4]");
  // A symbolic in_features meeting the weight's constant is fixed to it.
  Inferred fixed = infer("linear", {"[N, K]", "[4, 8]", nullptr});
  EXPECT_EQ(fixed.shape(), "[N, 4]");
  EXPECT_EQ(fixed.dims.resolve(Dim::symbol("K")), Dim::constant(8));
  EXPECT_EQ(infer("linear", {"[N, 8]", "[M, 8]", "[4]"}).shape(), "[N, 4]");
}

TEST(ContractionOps, LinearErrors) {
  EXPECT_EQ(infer("linear", {"[N, 7]", "[4, 8]", nullptr}).error(),
            "linear: input has [N, 7] but weight has [4, 8]: in_features differ (7 vs 8)");
  EXPECT_EQ(infer("linear", {"[]", "[4, 8]", nullptr}).error(),
            "linear: expected an input [..., in_features] but got a 0-d tensor");
  EXPECT_EQ(infer("linear", {"[N, 8]", "[8]", nullptr}).error(),
            "linear: expected a 2-d weight [out_features, in_features] but got [8]");
  EXPECT_EQ(infer("linear", {"[N, 8]", "[4, 8]", "[1, 4]"}).error(),
            "linear: expected a 1-d bias [4] but got [1, 4]");
  EXPECT_EQ(infer("linear", {"[N, 8]", "[4, 8]", "[5]"}).error(),
            "linear: bias has [5] but weight has [4, 8]: expected one bias value per output "
            "(5 vs 4)");
}

TEST(ContractionOps, LinearReference) {
  HostTensor x = host({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor w = host({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  HostTensor b = host({2}, {10, 20});
  HostTensor y = run("linear", {x, w, b});
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 2}));
  expect_values(y, {1 - 3 + 10, 3 + 20, 4 - 6 + 10, 7.5 + 20});
  expect_values(run("linear", {x, w, nullptr}), {-2, 3, -2, 7.5});
  HostTensor v = host({3}, {1, 1, 1});
  expect_values(run("linear", {v, w, b}), {10, 21.5});
}

// ---- matmul ----

TEST(ContractionOps, MatmulShapes) {
  EXPECT_EQ(infer("matmul", {"[3]", "[3]"}).shape(), "[]");
  EXPECT_EQ(infer("matmul", {"[3]", "[3, 4]"}).shape(), "[4]");
  EXPECT_EQ(infer("matmul", {"[2, 3]", "[3]"}).shape(), "[2]");
  EXPECT_EQ(infer("matmul", {"[2, 3]", "[3, 4]"}).shape(), "[2, 4]");
  EXPECT_EQ(infer("matmul", {"[5, 2, 3]", "[3, 4]"}).shape(), "[5, 2, 4]");
  EXPECT_EQ(infer("matmul", {"[3]", "[5, 3, 4]"}).shape(), "[5, 4]");
  EXPECT_EQ(infer("matmul", {"[5, 2, 3]", "[3]"}).shape(), "[5, 2]");
  EXPECT_EQ(infer("matmul", {"[5, 1, 2, 3]", "[7, 3, 4]"}).shape(), "[5, 7, 2, 4]");
  EXPECT_EQ(infer("matmul", {"[B, 2, 3]", "[3, 4]"}).shape(), "[B, 2, 4]");
  EXPECT_EQ(infer("matmul", {"[B, 2, 3]", "[1, 3, 4]"}).shape(), "[B, 2, 4]");
  EXPECT_EQ(infer("matmul", {"[1, 2, 3]", "[B, 3, 4]"}).shape(), "[B, 2, 4]");
  Inferred fixed = infer("matmul", {"[B, N, K]", "[6, 5, 4]"});
  EXPECT_EQ(fixed.shape(), "[6, N, 4]");
  EXPECT_EQ(fixed.dims.resolve(Dim::symbol("K")), Dim::constant(5));
}

TEST(ContractionOps, MatmulErrors) {
  EXPECT_EQ(infer("matmul", {"[]", "[3]"}).error(),
            "matmul: both arguments need at least 1 dim but got [] and [3]");
  EXPECT_EQ(infer("matmul", {"[2, 3]", "[4, 5]"}).error(),
            "matmul: input has [2, 3] but other has [4, 5]: contracted dims differ (3 vs 4)");
  EXPECT_EQ(infer("matmul", {"[3]", "[4]"}).error(),
            "matmul: input has [3] but other has [4]: contracted dims differ (3 vs 4)");
  EXPECT_EQ(infer("matmul", {"[2, 2, 3]", "[3, 3, 4]"}).error(),
            "matmul: batch dims of input [2, 2, 3] and other [3, 3, 4] cannot be broadcast "
            "(2 vs 3)");
}

TEST(ContractionOps, MatmulReference) {
  HostTensor a = host({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor b = host({2, 2}, {1, 1, 0, 1});
  // Batch 0: [[1,2],[3,4]] @ [[1,1],[0,1]] = [[1,3],[3,7]]; batch 1 likewise.
  expect_values(run("matmul", {a, b}), {1, 3, 3, 7, 5, 11, 7, 15});
  HostTensor v = host({2}, {1, -1});
  expect_values(run("matmul", {v, v}), {2});
  expect_values(run("matmul", {v, b}), {1, 0});
  expect_values(run("matmul", {a, v}), {-1, -1, -1, -1});
  // Broadcast on both sides: [2, 1, 1, 2] @ [3, 2, 1] -> [2, 3, 1, 1].
  HostTensor l = host({2, 1, 1, 2}, {1, 2, 3, 4});
  HostTensor r = host({3, 2, 1}, {1, 0, 0, 1, 1, 1});
  HostTensor y = run("matmul", {l, r});
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 3, 1, 1}));
  expect_values(y, {1, 2, 3, 3, 4, 7});
}

// ---- conv2d ----

TEST(ContractionOps, Conv2dRegistration) {
  const OpDef& op = op_named("conv2d");
  EXPECT_EQ(op.kind, OpKind::Contraction);
  std::vector<std::string> names;
  for (const ParamSpec& p : op.params)
    names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input", "weight", "bias", "stride", "padding",
                                             "dilation", "groups"}));
  EXPECT_EQ(op.param("weight")->init, ParamInit::KaimingUniform);
  EXPECT_EQ(op.param("bias")->init, ParamInit::BiasUniform);
  EXPECT_EQ(op.param("stride")->kind, ParamKind::Ints);
  EXPECT_EQ(op.param("groups")->default_value, AttrValue(int64_t{1}));
}

TEST(ContractionOps, Conv2dShapes) {
  Inferred basic = infer("conv2d", {"[N, 3, 32, 32]", "[16, 3, 3, 3]", "[16]"});
  EXPECT_EQ(basic.shape(), "[N, 16, 30, 30]");
  EXPECT_EQ(basic.attrs.at("stride"), ints({1, 1}));
  EXPECT_EQ(basic.attrs.at("padding"), ints({0, 0}));
  EXPECT_EQ(basic.attrs.at("dilation"), ints({1, 1}));

  Inferred strided = infer("conv2d", {"[N, 3, 32, 32]", "[16, 3, 3, 3]", nullptr},
                           {{"stride", int64_t{2}}, {"padding", int64_t{1}}});
  EXPECT_EQ(strided.shape(), "[N, 16, 16, 16]");
  EXPECT_EQ(strided.attrs.at("stride"), ints({2, 2}));
  EXPECT_EQ(strided.attrs.at("padding"), ints({1, 1}));

  EXPECT_EQ(infer("conv2d", {"[3, 8, 8]", "[4, 3, 3, 3]", nullptr}).shape(), "[4, 6, 6]");
  EXPECT_EQ(infer("conv2d", {"[1, 1, 10, 9]", "[1, 1, 3, 2]", nullptr},
                  {{"stride", ints({1, 2})}, {"padding", ints({2, 0})}, {"dilation", ints({2, 1})}})
                .shape(),
            "[1, 1, 10, 4]");
  EXPECT_EQ(infer("conv2d", {"[N, 4, 8, 8]", "[6, 2, 3, 3]", nullptr}, {{"groups", int64_t{2}}})
                .shape(),
            "[N, 6, 6, 6]");
  // Depthwise with a symbolic channel count: C is fixed by groups * weight.shape[1].
  Inferred depthwise = infer("conv2d", {"[N, C, 8, 8]", "[8, 1, 3, 3]", nullptr},
                             {{"groups", int64_t{8}}});
  EXPECT_EQ(depthwise.shape(), "[N, 8, 6, 6]");
  EXPECT_EQ(depthwise.dims.resolve(Dim::symbol("C")), Dim::constant(8));
}

TEST(ContractionOps, Conv2dErrors) {
  auto error = [](std::vector<const char*> shapes, const Attrs& attrs = {}) {
    return infer("conv2d", shapes, attrs).error();
  };
  EXPECT_EQ(error({"[3, 8]", "[4, 3, 3, 3]", nullptr}),
            "conv2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input but got [3, 8]");
  EXPECT_EQ(error({"[1, 3, 8, 8]", "[4, 3, 3]", nullptr}),
            "conv2d: expected a 4-d weight [out_channels, in_channels/groups, kh, kw] but got "
            "[4, 3, 3]");
  EXPECT_EQ(error({"[N, 3, 8, 8]", "[4, 2, 3, 3]", nullptr}),
            "conv2d: input [N, 3, 8, 8] and weight [4, 2, 3, 3] disagree on input channels "
            "(weight.shape[1] * groups 1) (3 vs 2)");
  EXPECT_EQ(error({"[N, 6, 8, 8]", "[4, 2, 3, 3]", nullptr}, {{"groups", int64_t{2}}}),
            "conv2d: input [N, 6, 8, 8] and weight [4, 2, 3, 3] disagree on input channels "
            "(weight.shape[1] * groups 2) (6 vs 4)");
  EXPECT_EQ(error({"[N, 6, 8, 8]", "[4, 2, 3, 3]", nullptr}, {{"groups", int64_t{3}}}),
            "conv2d: groups 3 does not divide the 4 output channels of weight [4, 2, 3, 3]");
  EXPECT_EQ(error({"[N, 4, 8, 8]", "[6, 1, 3, 3]", nullptr}, {{"groups", int64_t{3}}}),
            "conv2d: groups 3 does not divide the 4 input channels of input [N, 4, 8, 8]");
  EXPECT_EQ(error({"[N, 4, 8, 8]", "[6, 4, 3, 3]", nullptr}, {{"groups", int64_t{0}}}),
            "conv2d: groups must be positive but got 0");
  EXPECT_EQ(error({"[1, 1, 4, 4]", "[1, 1, 5, 5]", nullptr}),
            "conv2d: kernel size 5x5 is larger than the padded input 4x4");
  EXPECT_EQ(error({"[1, 1, 4, 4]", "[1, 1, 3, 3]", nullptr}, {{"dilation", int64_t{2}}}),
            "conv2d: kernel size 3x3 (dilated to 5x5) is larger than the padded input 4x4");
  EXPECT_EQ(error({"[1, 1, 4, 4]", "[1, 1, 5, 3]", nullptr}, {{"padding", ints({0, 1})}}),
            "conv2d: kernel size 5x3 is larger than the padded input 4x6");
  EXPECT_EQ(error({"[1, 1, 4, 4]", "[1, 1, 0, 3]", nullptr}),
            "conv2d: kernel size must be positive but weight has [1, 1, 0, 3]");
  EXPECT_EQ(error({"[1, 1, 8, 8]", "[1, 1, 3, 3]", nullptr}, {{"stride", ints({1, 0})}}),
            "conv2d: stride must be positive but got 1x0");
  EXPECT_EQ(error({"[1, 1, 8, 8]", "[1, 1, 3, 3]", nullptr}, {{"dilation", int64_t{0}}}),
            "conv2d: dilation must be positive but got 0x0");
  EXPECT_EQ(error({"[1, 1, 8, 8]", "[1, 1, 3, 3]", nullptr}, {{"padding", int64_t{-1}}}),
            "conv2d: padding must be non-negative but got -1x-1");
  EXPECT_EQ(error({"[1, 1, 8, 8]", "[1, 1, 3, 3]", nullptr}, {{"stride", ints({1, 2, 3})}}),
            "conv2d: stride must be an int or a pair of ints (H, W) but got 3 values");
  EXPECT_EQ(error({"[1, 1, 8, 8]", "[1, 1, 3, 3]", nullptr}, {{"padding", std::string("full")}}),
            "conv2d: padding must be \"same\", \"valid\", an int or a tuple of ints but got \"full\"");
  EXPECT_EQ(error({"[N, 3, H, 32]", "[16, 3, 3, 3]", nullptr}),
            "conv2d: spatial dims must be constants (H is symbolic in input [N, 3, H, 32])");
  EXPECT_EQ(error({"[N, 3, 32, 32]", "[16, 3, K, K]", nullptr}),
            "conv2d: spatial dims must be constants (K is symbolic in weight [16, 3, K, K])");
  EXPECT_EQ(error({"[N, 3, 32, 32]", "[16, 3, 3, 3]", "[8]"}),
            "conv2d: bias has [8] but weight has [16, 3, 3, 3]: expected one bias value per "
            "output (8 vs 16)");
}

TEST(ContractionOps, Conv2dReference) {
  HostTensor x = iota({1, 1, 3, 3}, 1.0, 1.0); // 1..9
  HostTensor diagonal = host({1, 1, 2, 2}, {1, 0, 0, 1});
  expect_values(run("conv2d", {x, diagonal, nullptr}), {1 + 5, 2 + 6, 4 + 8, 5 + 9});

  // 3x3 box filter with zero padding: neighbourhood sums, plus the bias.
  HostTensor box = host({1, 1, 3, 3}, std::vector<double>(9, 1.0));
  HostTensor bias = host({1}, {0.5});
  HostTensor padded = run("conv2d", {x, box, bias}, {{"padding", int64_t{1}}});
  expect_values(padded, {12.5, 21.5, 16.5, 27.5, 45.5, 33.5, 24.5, 39.5, 28.5});

  // Stride and dilation: taps at rows/cols {0, 2} of the input only.
  HostTensor big = iota({1, 1, 5, 5});
  HostTensor taps = host({1, 1, 2, 2}, {1, 1, 1, 1});
  HostTensor dilated = run("conv2d", {big, taps, nullptr},
                           {{"stride", int64_t{2}}, {"dilation", int64_t{2}}});
  EXPECT_EQ(dilated.shape, (std::vector<int64_t>{1, 1, 2, 2}));
  expect_values(dilated, {0 + 2 + 10 + 12, 2 + 4 + 12 + 14, 10 + 12 + 20 + 22, 12 + 14 + 22 + 24});
}

TEST(ContractionOps, Conv2dGroupsKeepChannelsApart) {
  // Two groups of one channel each; filter o only sees channel o.
  HostTensor x = host({2, 2, 1, 1}, {1, 10, 2, 20}); // [N=2, C=2, 1, 1]
  HostTensor w = host({2, 1, 1, 1}, {3, 5});
  HostTensor y = run("conv2d", {x, w, nullptr}, {{"groups", int64_t{2}}});
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 2, 1, 1}));
  expect_values(y, {3, 50, 6, 100});
  // Unbatched input gives an unbatched output.
  HostTensor unbatched = host({2, 1, 1}, {1, 10});
  HostTensor both = host({1, 2, 1, 1}, {1, 1});
  HostTensor summed = run("conv2d", {unbatched, both, nullptr});
  EXPECT_EQ(summed.shape, (std::vector<int64_t>{1, 1, 1}));
  expect_values(summed, {11});
}

TEST(ContractionOps, Conv2dReferenceHandlesCifarBatch) {
  HostTensor x = iota({128, 3, 32, 32}, 1e-4);
  HostTensor w = iota({16, 3, 3, 3}, 0.01, -0.1);
  auto start = std::chrono::steady_clock::now();
  HostTensor y = run("conv2d", {x, w, nullptr});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(y.shape, (std::vector<int64_t>{128, 16, 30, 30}));
  // Spot-check the last element against a direct sum.
  double expected = 0.0;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double xv = x.data[static_cast<size_t>(((127 * 3 + c) * 32 + 29 + i) * 32 + 29 + j)];
        double wv = w.data[static_cast<size_t>(((15 * 3 + c) * 3 + i) * 3 + j)];
        expected += xv * wv;
      }
  EXPECT_NEAR(y.data.back(), expected, 1e-9);
  // Generous bound for loaded CI machines; about 0.3 s of CPU in Debug.
  EXPECT_LT(seconds, 5.0) << "the conv2d reference is too slow for test-sized inputs";
}

} // namespace
} // namespace fusegen
