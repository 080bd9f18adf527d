// Unit tests for the N-d convolutions and pools of issue 24 (conv1d/3d,
// conv_transpose1d/2d/3d, padding "same"/"valid", 1-d/3-d and adaptive max
// pools, ceil_mode, dilation, count_include_pad, divisor_override): traits,
// shape inference, canonical attributes, errors and small reference values.
// PyTorch agreement on larger cases is the golden suite's job.
#include "support/OpTesting.h"

#include <gtest/gtest.h>

#include <string>

namespace fusegen {
namespace {

using namespace fusegen::testing;

TEST(ConvolutionOps, Traits) {
  for (int n = 1; n <= 3; ++n) {
    const std::string d = std::to_string(n) + "d";
    const OpDef& conv = op_named("conv" + d);
    EXPECT_EQ(conv.kind, OpKind::Contraction);
    EXPECT_EQ(conv.traits.contraction, ContractionForm::Convolution);
    EXPECT_EQ(conv.traits.spatial_dims, n);
    EXPECT_FALSE(conv.traits.transposed);
    EXPECT_EQ(conv.param("padding")->kind, ParamKind::IntsOrString);
    const OpDef& transposed = op_named("conv_transpose" + d);
    EXPECT_EQ(transposed.traits.contraction, ContractionForm::Convolution);
    EXPECT_EQ(transposed.traits.spatial_dims, n);
    EXPECT_TRUE(transposed.traits.transposed);
    EXPECT_EQ(signature("conv_transpose" + d),
              "input, weight, bias, stride=1, padding=0, output_padding=0, groups=1, dilation=1");
    for (const char* pool : {"max_pool", "avg_pool", "adaptive_max_pool", "adaptive_avg_pool"}) {
      const OpDef& op = op_named(pool + d);
      EXPECT_EQ(op.kind, OpKind::Window);
      EXPECT_EQ(op.traits.spatial_dims, n);
      EXPECT_EQ(op.traits.adaptive_window, std::string(pool).starts_with("adaptive"));
    }
  }
  EXPECT_EQ(signature("avg_pool3d"),
            "input, kernel_size, stride=None, padding=0, ceil_mode=false, count_include_pad=true, "
            "divisor_override=None");
  EXPECT_EQ(signature("max_pool1d"), "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=false");
}

TEST(ConvolutionOps, Shapes) {
  EXPECT_EQ(infer("conv1d", {"[N, 3, 16]", "[4, 3, 3]", "[4]"}).shape(), "[N, 4, 14]");
  EXPECT_EQ(
      infer("conv1d", {"[N, 3, 16]", "[4, 3, 3]", nullptr}, {{"stride", int64_t{2}}, {"padding", int64_t{1}}}).shape(),
      "[N, 4, 8]");
  EXPECT_EQ(infer("conv1d", {"[3, 16]", "[4, 3, 3]", nullptr}).shape(), "[4, 14]"); // unbatched
  Inferred conv3d = infer("conv3d", {"[2, 2, 4, 5, 6]", "[3, 2, 3, 3, 3]", nullptr}, {{"padding", int64_t{1}}});
  EXPECT_EQ(conv3d.shape(), "[2, 3, 4, 5, 6]");
  EXPECT_EQ(conv3d.attrs.at("padding"), ints({1, 1, 1}));
  EXPECT_EQ(infer("conv3d", {"[4, 4, 5, 6]", "[6, 2, 2, 3, 3]", nullptr},
                  {{"groups", int64_t{2}}, {"stride", ints({1, 2, 2})}, {"dilation", ints({2, 1, 1})}})
                .shape(),
            "[6, 2, 2, 2]");
}

TEST(ConvolutionOps, SameAndValidPadding) {
  // A symmetric "same" becomes ints; the spatial dims may stay symbolic.
  Inferred same = infer("conv2d", {"[N, 3, H, W]", "[8, 3, 3, 3]", nullptr}, {{"padding", std::string("same")}});
  EXPECT_EQ(same.shape(), "[N, 8, H, W]");
  EXPECT_EQ(same.attrs.at("padding"), ints({1, 1}));
  // An even dilated kernel pads one more on the right: "same" stays.
  Inferred even = infer("conv1d", {"[N, 2, 8]", "[3, 2, 4]", nullptr}, {{"padding", std::string("same")}});
  EXPECT_EQ(even.shape(), "[N, 3, 8]");
  EXPECT_EQ(even.attrs.at("padding"), AttrValue(std::string("same")));
  Inferred valid =
      infer("conv3d", {"[1, 1, 4, 5, 6]", "[1, 1, 2, 2, 2]", nullptr}, {{"padding", std::string("valid")}});
  EXPECT_EQ(valid.shape(), "[1, 1, 3, 4, 5]");
  EXPECT_EQ(valid.attrs.at("padding"), ints({0, 0, 0}));
  EXPECT_EQ(infer("conv1d", {"[N, 2, L]", "[3, 2, 3]", nullptr}, {{"padding", int64_t{1}}}).shape(), "[N, 3, L]");
}

TEST(ConvolutionOps, TransposedShapes) {
  // (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
  EXPECT_EQ(infer("conv_transpose2d", {"[N, 4, 5, 5]", "[4, 3, 3, 3]", "[3]"},
                  {{"stride", int64_t{2}}, {"padding", int64_t{1}}, {"output_padding", int64_t{1}}})
                .shape(),
            "[N, 3, 10, 10]");
  EXPECT_EQ(infer("conv_transpose2d", {"[N, 4, 5, 5]", "[4, 3, 3, 3]", "[6]"}, {{"groups", int64_t{2}}}).shape(),
            "[N, 6, 7, 7]");
  EXPECT_EQ(infer("conv_transpose1d", {"[N, 4, L]", "[4, 2, 3]", nullptr}, {{"padding", int64_t{1}}}).shape(),
            "[N, 2, L]");
  EXPECT_EQ(infer("conv_transpose3d", {"[2, 3, 4, 5]", "[2, 1, 2, 2, 2]", nullptr}, {{"stride", int64_t{2}}}).shape(),
            "[1, 6, 8, 10]");
}

TEST(ConvolutionOps, Errors) {
  EXPECT_EQ(infer("conv1d", {"[N, 3, 16, 16]", "[4, 3, 3]", nullptr}).error(),
            "conv1d: expected a 2-d [C, L] or 3-d [N, C, L] input but got [N, 3, 16, 16]");
  EXPECT_EQ(infer("conv3d", {"[N, 3, 4, 4, 4]", "[4, 3, 3, 3]", nullptr}).error(),
            "conv3d: expected a 5-d weight [out_channels, in_channels/groups, kd, kh, kw] but got [4, 3, 3, 3]");
  EXPECT_EQ(infer("conv_transpose1d", {"[N, 3, 4]", "[3, 2]", nullptr}).error(),
            "conv_transpose1d: expected a 3-d weight [in_channels, out_channels/groups, kw] but got [3, 2]");
  EXPECT_EQ(infer("conv3d", {"[N, 6, 4, 4, 4]", "[4, 2, 3, 3, 3]", nullptr}, {{"groups", int64_t{4}}}).error(),
            "conv3d: groups 4 does not divide the 6 input channels of input [N, 6, 4, 4, 4]");
  EXPECT_EQ(infer("conv_transpose2d", {"[N, 6, 4, 4]", "[6, 2, 3, 3]", nullptr}, {{"groups", int64_t{4}}}).error(),
            "conv_transpose2d: groups 4 does not divide the 6 input channels of weight [6, 2, 3, 3]");
  EXPECT_EQ(infer("conv3d", {"[1, 1, 2, 8, 8]", "[1, 1, 3, 3, 3]", nullptr}).error(),
            "conv3d: kernel size 3x3x3 is larger than the padded input 2x8x8");
  EXPECT_EQ(
      infer("conv1d", {"[1, 1, 8]", "[1, 1, 3]", nullptr}, {{"stride", int64_t{2}}, {"padding", std::string("same")}})
          .error(),
      "conv1d: padding=\"same\" is not supported for strided convolutions (stride 2)");
  EXPECT_EQ(infer("conv_transpose1d", {"[1, 1, 8]", "[1, 1, 3]", nullptr},
                  {{"stride", int64_t{2}}, {"output_padding", int64_t{2}}})
                .error(),
            "conv_transpose1d: output_padding must be non-negative and smaller than either stride or dilation, but "
            "got output_padding 2, stride 2 and dilation 1");
  EXPECT_EQ(infer("conv_transpose1d", {"[1, 1, 1]", "[1, 1, 1]", nullptr}, {{"padding", int64_t{1}}}).error(),
            "conv_transpose1d: input [1, 1, 1] is too small: the output would have size -1 in spatial dim 0");
  EXPECT_EQ(infer("conv1d", {"[N, 3, L]", "[4, 3, 3]", nullptr}).error(),
            "conv1d: spatial dims must be constants (L is symbolic in input [N, 3, L])");
  EXPECT_EQ(infer("conv3d", {"[1, 1, 8, 8, 8]", "[1, 1, 3, 3, 3]", nullptr}, {{"stride", ints({1, 2})}}).error(),
            "conv3d: stride must be an int or a triple of ints (D, H, W) but got 2 values");
}

TEST(ConvolutionOps, Reference) {
  HostTensor x = iota({1, 1, 5});
  // "same" with an odd kernel: one zero each side.
  expect_values(run("conv1d", {x, host({1, 1, 3}, {1, 0, -1}), nullptr}, {{"padding", std::string("same")}}),
                {-1, -2, -2, -2, 3});
  // An even kernel: the extra zero on the right, as torch.
  expect_values(run("conv1d", {x, host({1, 1, 2}, {1, 2}), nullptr}, {{"padding", std::string("same")}}),
                {2, 5, 8, 11, 4});
  HostTensor v = host({1, 1, 3}, {1, 2, 3});
  HostTensor w = host({1, 1, 2}, {1, 10});
  expect_values(run("conv_transpose1d", {v, w, nullptr}, {{"stride", int64_t{2}}}), {1, 10, 2, 20, 3, 30});
  expect_values(run("conv_transpose1d", {v, w, host({1}, {0.5})}, {{"stride", int64_t{2}}, {"padding", int64_t{1}}}),
                {10.5, 2.5, 20.5, 3.5});
  // A 1x1x1 conv3d is a per-voxel channel mix.
  HostTensor cube = iota({1, 2, 2, 2, 2});
  HostTensor mix = host({1, 2, 1, 1, 1}, {1, -1});
  expect_values(run("conv3d", {cube, mix, nullptr}), {-8, -8, -8, -8, -8, -8, -8, -8});
}

TEST(PoolOps, Shapes) {
  EXPECT_EQ(infer("max_pool1d", {"[N, 3, 9]"}, {{"kernel_size", int64_t{2}}}).shape(), "[N, 3, 4]");
  EXPECT_EQ(infer("max_pool1d", {"[N, 3, 9]"}, {{"kernel_size", int64_t{2}}, {"ceil_mode", true}}).shape(),
            "[N, 3, 5]");
  // With ceil_mode the last window must start inside the input or its left padding.
  EXPECT_EQ(
      infer("avg_pool1d", {"[1, 1, 3]"}, {{"kernel_size", int64_t{2}}, {"padding", int64_t{1}}, {"ceil_mode", true}})
          .shape(),
      "[1, 1, 2]");
  Inferred pool3d =
      infer("max_pool3d", {"[N, 2, 4, 7, 6]"},
            {{"kernel_size", ints({2, 3, 3})}, {"stride", ints({1, 2, 2})}, {"padding", ints({0, 1, 1})}});
  EXPECT_EQ(pool3d.shape(), "[N, 2, 3, 4, 3]");
  EXPECT_EQ(pool3d.attrs.at("dilation"), ints({1, 1, 1}));
  EXPECT_EQ(infer("max_pool2d", {"[1, 1, 8, 8]"}, {{"kernel_size", int64_t{3}}, {"dilation", int64_t{2}}}).shape(),
            "[1, 1, 2, 2]");
  EXPECT_EQ(
      infer("max_pool1d", {"[N, 3, L]"}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}})
          .shape(),
      "[N, 3, L]");
  EXPECT_EQ(infer("adaptive_max_pool3d", {"[N, C, D, H, W]"}, {{"output_size", ints({1, 2, 3})}}).shape(),
            "[N, C, 1, 2, 3]");
  EXPECT_EQ(infer("adaptive_avg_pool1d", {"[3, L]"}, {{"output_size", int64_t{4}}}).shape(), "[3, 4]");
}

TEST(PoolOps, Errors) {
  EXPECT_EQ(infer("max_pool1d", {"[N, 3, 4]"}, {{"kernel_size", int64_t{3}}, {"dilation", int64_t{2}}}).error(),
            "max_pool1d: pooling window 3 (dilated to 5) is larger than the padded input 4");
  EXPECT_EQ(infer("avg_pool3d", {"[N, 3, 4]"}, {{"kernel_size", int64_t{2}}}).error(),
            "avg_pool3d: expected a 4-d [C, D, H, W] or 5-d [N, C, D, H, W] input but got [N, 3, 4]");
  EXPECT_EQ(infer("avg_pool1d", {"[N, 3, 4]"}, {{"kernel_size", int64_t{2}}, {"divisor_override", int64_t{0}}}).error(),
            "avg_pool1d: divisor_override must be a non-zero int or None");
  EXPECT_EQ(
      infer("max_pool3d", {"[N, 3, 4, 8, 8]"}, {{"kernel_size", int64_t{2}}, {"padding", ints({0, 1, 2})}}).error(),
      "max_pool3d: pad should be at most half of effective kernel size, but got padding 0x1x2 and kernel_size "
      "2x2x2");
  EXPECT_EQ(infer("adaptive_max_pool2d", {"[N, 3, 8, 8]"}, {{"output_size", ints({0, 2})}}).error(),
            "adaptive_max_pool2d: output_size must be positive but got 0x2");
}

TEST(PoolOps, Reference) {
  HostTensor x = host({1, 1, 4}, {1, 2, 3, 4});
  const Attrs window = {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}};
  expect_values(run("avg_pool1d", {x}, window), {1, 2, 3, 7.0 / 3});
  Attrs exclude = window;
  exclude["count_include_pad"] = false;
  expect_values(run("avg_pool1d", {x}, exclude), {1.5, 2, 3, 3.5});
  Attrs divisor = window;
  divisor["divisor_override"] = ints({2});
  expect_values(run("avg_pool1d", {x}, divisor), {1.5, 3, 4.5, 3.5});
  expect_values(run("max_pool1d", {x}, {{"kernel_size", int64_t{2}}, {"dilation", int64_t{2}}}), {3});
  expect_values(
      run("max_pool1d", {host({1, 1, 5}, {1, 5, 2, 4, 3})}, {{"kernel_size", int64_t{2}}, {"ceil_mode", true}}),
      {5, 4, 3});
  // Adaptive bins [0, 3) and [2, 5) overlap.
  expect_values(run("adaptive_max_pool1d", {host({1, 5}, {1, 5, 2, 4, 3})}, {{"output_size", int64_t{2}}}), {5, 4});
  expect_values(run("adaptive_avg_pool3d", {iota({1, 2, 2, 2})}, {{"output_size", int64_t{1}}}), {3.5});
}

} // namespace
} // namespace fusegen
