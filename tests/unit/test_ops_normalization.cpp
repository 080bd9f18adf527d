// Unit tests for the normalization ops (group_norm, layer_norm, instance_norm,
// softmax, log_softmax) and batch_norm: shape inference, error messages and
// reference values against hand-computed statistics.
#include "support/OpTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace fusegen {
namespace {

using namespace fusegen::testing;

constexpr double kEps = 1e-5;

TEST(NormalizationOps, Registration) {
  for (const char* name : {"group_norm", "layer_norm", "instance_norm", "softmax", "log_softmax"})
    EXPECT_EQ(op_named(name).kind, OpKind::Normalization) << name;
  EXPECT_EQ(op_named("batch_norm").kind, OpKind::ColumnNorm);
  const OpDef& group_norm = op_named("group_norm");
  EXPECT_EQ(group_norm.param("weight")->init, ParamInit::Ones);
  EXPECT_EQ(group_norm.param("bias")->init, ParamInit::Zeros);
  EXPECT_EQ(group_norm.param("eps")->default_value, AttrValue(1e-5));
  EXPECT_FALSE(group_norm.param("num_groups")->default_value);
  EXPECT_FALSE(op_named("softmax").param("dim")->default_value);
  EXPECT_EQ(op_named("layer_norm").param("normalized_shape")->kind, ParamKind::Ints);
}

// ---- group_norm ----

TEST(NormalizationOps, GroupNormShapes) {
  Attrs groups8 = {{"num_groups", int64_t{8}}};
  EXPECT_EQ(infer("group_norm", {"[N, 64, 8, 8]", "[64]", "[64]"}, groups8).shape(),
            "[N, 64, 8, 8]");
  EXPECT_EQ(infer("group_norm", {"[N, 64]", nullptr, nullptr}, groups8).shape(), "[N, 64]");
  // A symbolic C skips the divisibility check (re-checked once specialized).
  EXPECT_EQ(infer("group_norm", {"[N, C, 4]", nullptr, nullptr}, {{"num_groups", int64_t{3}}})
                .shape(),
            "[N, C, 4]");
  Inferred fixed = infer("group_norm", {"[N, C, 4]", "[64]", nullptr}, groups8);
  EXPECT_EQ(fixed.shape(), "[N, 64, 4]");
  EXPECT_EQ(fixed.dims.resolve(Dim::symbol("C")), Dim::constant(64));
}

TEST(NormalizationOps, GroupNormErrors) {
  EXPECT_EQ(infer("group_norm", {"[N, 64, 8]", nullptr, nullptr}, {{"num_groups", int64_t{3}}})
                .error(),
            "group_norm: num_groups 3 does not divide the 64 channels");
  EXPECT_EQ(infer("group_norm", {"[N, 64, 8]", nullptr, nullptr}, {{"num_groups", int64_t{0}}})
                .error(),
            "group_norm: num_groups must be positive but got 0");
  EXPECT_EQ(infer("group_norm", {"[64]", nullptr, nullptr}, {{"num_groups", int64_t{2}}}).error(),
            "group_norm: expected an input of at least 2 dims [N, C, *] but got [64]");
  EXPECT_EQ(infer("group_norm", {"[N, 64, 8]", "[32]", nullptr}, {{"num_groups", int64_t{2}}})
                .error(),
            "group_norm: weight has [32] but input has [N, 64, 8]: expected one value per "
            "channel (32 vs 64)");
  EXPECT_EQ(infer("group_norm", {"[N, 64, 8]", nullptr, "[64, 1]"}, {{"num_groups", int64_t{2}}})
                .error(),
            "group_norm: expected a 1-d bias [64] but got [64, 1]");
}

// torch rejects one sample whose groups hold a single value each (issue
// 27.8); with two samples, or N still symbolic, it is not an error here.
TEST(NormalizationOps, GroupNormOfOneValuePerGroup) {
  Attrs groups4 = {{"num_groups", int64_t{4}}};
  EXPECT_EQ(infer("group_norm", {"[1, 4]", nullptr, nullptr}, groups4).error(),
            "group_norm: expected more than 1 value per group, got input [1, 4] with num_groups=4");
  EXPECT_EQ(infer("group_norm", {"[1, 4, 1, 1]", nullptr, nullptr}, groups4).error(),
            "group_norm: expected more than 1 value per group, got input [1, 4, 1, 1] with num_groups=4");
  EXPECT_EQ(infer("group_norm", {"[N, 4]", nullptr, nullptr}, groups4).shape(), "[N, 4]");
  EXPECT_EQ(infer("group_norm", {"[1, 4, 2]", nullptr, nullptr}, groups4).shape(), "[1, 4, 2]");
  // As torch: zero variance, so each value becomes its channel's bias.
  HostTensor x = host({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor bias = host({4}, {0.5, -1, 2, 3});
  expect_values(run("group_norm", {x, nullptr, bias}, groups4), {0.5, -1, 2, 3, 0.5, -1, 2, 3});
}

TEST(NormalizationOps, GroupNormReference) {
  // [N=1, C=4, L=2], two groups: {0, 1, 2, 3} and {4, 5, 6, 7}, each with
  // mean m + 1.5 and biased variance 1.25.
  HostTensor x = iota({1, 4, 2});
  HostTensor weight = host({4}, {1, 2, 3, 4});
  HostTensor bias = host({4}, {0, 0, 1, 1});
  double s = 1.0 / std::sqrt(1.25 + kEps);
  Attrs groups2 = {{"num_groups", int64_t{2}}};
  expect_values(run("group_norm", {x, nullptr, nullptr}, groups2),
                {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s, -1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s});
  expect_values(run("group_norm", {x, weight, bias}, groups2),
                {-1.5 * s, -0.5 * s, 1.0 * s, 3.0 * s, -4.5 * s + 1, -1.5 * s + 1, 2.0 * s + 1,
                 6.0 * s + 1});
  // One group per channel over a batch of two: statistics never cross samples.
  HostTensor batch = host({2, 1, 2}, {0, 2, 10, 30});
  expect_values(run("group_norm", {batch, nullptr, nullptr}, {{"num_groups", int64_t{1}}}),
                {-1 / std::sqrt(1 + kEps), 1 / std::sqrt(1 + kEps), -10 / std::sqrt(100 + kEps),
                 10 / std::sqrt(100 + kEps)},
                1e-12);
}

// ---- layer_norm ----

TEST(NormalizationOps, LayerNormShapes) {
  Inferred one = infer("layer_norm", {"[N, 4, 16]", "[16]", "[16]"},
                       {{"normalized_shape", int64_t{16}}});
  EXPECT_EQ(one.shape(), "[N, 4, 16]");
  EXPECT_EQ(one.attrs.at("normalized_shape"), ints({16})); // int canonicalized to a tuple
  EXPECT_EQ(infer("layer_norm", {"[N, 4, 16]", "[4, 16]", nullptr},
                  {{"normalized_shape", ints({4, 16})}})
                .shape(),
            "[N, 4, 16]");
  Inferred fixed = infer("layer_norm", {"[N, D]", nullptr, nullptr},
                         {{"normalized_shape", ints({32})}});
  EXPECT_EQ(fixed.shape(), "[N, 32]");
  EXPECT_EQ(fixed.dims.resolve(Dim::symbol("D")), Dim::constant(32));
}

TEST(NormalizationOps, LayerNormErrors) {
  auto error = [](std::vector<const char*> shapes, AttrValue normalized) {
    return infer("layer_norm", shapes, {{"normalized_shape", normalized}}).error();
  };
  EXPECT_EQ(error({"[N, 4, 16]", nullptr, nullptr}, ints({8})),
            "layer_norm: normalized_shape [8] does not match the trailing dims of input "
            "[N, 4, 16] (16 vs 8)");
  EXPECT_EQ(error({"[16]", nullptr, nullptr}, ints({4, 16})),
            "layer_norm: normalized_shape [4, 16] does not match the trailing dims of input [16]");
  EXPECT_EQ(error({"[N, 16]", nullptr, nullptr}, ints({})),
            "layer_norm: normalized_shape must have at least one dim");
  EXPECT_EQ(error({"[N, 16]", nullptr, nullptr}, ints({-16})),
            "layer_norm: normalized_shape must be non-negative but got [-16]");
  EXPECT_EQ(error({"[N, 4, 16]", "[4, 16]", nullptr}, ints({16})),
            "layer_norm: weight has [4, 16] but normalized_shape is [16]");
  EXPECT_EQ(error({"[N, 4, 16]", nullptr, "[8]"}, ints({16})),
            "layer_norm: bias has [8] but normalized_shape is [16] (8 vs 16)");
}

TEST(NormalizationOps, LayerNormReference) {
  // Rows {1, 2, 3} (mean 2, var 2/3) and {2, 4, 6} (mean 4, var 8/3).
  HostTensor x = host({2, 3}, {1, 2, 3, 2, 4, 6});
  HostTensor weight = host({3}, {1, 1, 2});
  HostTensor bias = host({3}, {0, 1, 0});
  double a = 1 / std::sqrt(2.0 / 3.0), b = 2 / std::sqrt(8.0 / 3.0);
  Attrs no_eps = {{"normalized_shape", int64_t{3}}, {"eps", 0.0}};
  expect_values(run("layer_norm", {x, nullptr, nullptr}, no_eps), {-a, 0, a, -b, 0, b});
  expect_values(run("layer_norm", {x, weight, bias}, no_eps), {-a, 1, 2 * a, -b, 1, 2 * b});
  // Two normalized dims: all four values of the single sample together.
  HostTensor square = host({1, 2, 2}, {1, 2, 3, 4}); // mean 2.5, var 1.25
  double s = 1 / std::sqrt(1.25 + kEps);
  Attrs both_dims = {{"normalized_shape", ints({2, 2})}};
  expect_values(run("layer_norm", {square, nullptr, nullptr}, both_dims),
                {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s});
}

// ---- instance_norm ----

TEST(NormalizationOps, InstanceNormShapesAndErrors) {
  EXPECT_EQ(infer("instance_norm", {"[N, 8, 4, 4]", "[8]", "[8]"}).shape(), "[N, 8, 4, 4]");
  EXPECT_EQ(infer("instance_norm", {"[N, 8, L]", nullptr, nullptr}).shape(), "[N, 8, L]");
  EXPECT_EQ(infer("instance_norm", {"[N, 8]", nullptr, nullptr}).error(),
            "instance_norm: expected an input of at least 3 dims [N, C, *] with spatial dims but "
            "got [N, 8]");
  EXPECT_EQ(infer("instance_norm", {"[N, 8, 1, 1]", nullptr, nullptr}).error(),
            "instance_norm: expected more than 1 spatial element but got input [N, 8, 1, 1]");
  EXPECT_EQ(infer("instance_norm", {"[N, 8, 4]", "[4]", nullptr}).error(),
            "instance_norm: weight has [4] but input has [N, 8, 4]: expected one value per "
            "channel (4 vs 8)");
}

TEST(NormalizationOps, InstanceNormReference) {
  // Per (n, c): {1, 3} (mean 2, var 1) and {10, 20} (mean 15, var 25).
  HostTensor x = host({1, 2, 2}, {1, 3, 10, 20});
  HostTensor weight = host({2}, {2, 3});
  HostTensor bias = host({2}, {0, 1});
  double s0 = 1 / std::sqrt(1 + kEps), s1 = 5 / std::sqrt(25 + kEps);
  expect_values(run("instance_norm", {x, nullptr, nullptr}), {-s0, s0, -s1, s1});
  expect_values(run("instance_norm", {x, weight, bias}),
                {-2 * s0, 2 * s0, -3 * s1 + 1, 3 * s1 + 1});
}

// ---- softmax / log_softmax ----

TEST(NormalizationOps, SoftmaxShapesAndErrors) {
  Inferred last = infer("softmax", {"[N, 10]"}, {{"dim", int64_t{-1}}});
  EXPECT_EQ(last.shape(), "[N, 10]");
  EXPECT_EQ(last.attrs.at("dim"), AttrValue(int64_t{1}));
  EXPECT_EQ(infer("log_softmax", {"[N, 4, 10]"}, {{"dim", int64_t{-3}}}).attrs.at("dim"),
            AttrValue(int64_t{0}));
  EXPECT_EQ(infer("softmax", {"[]"}, {{"dim", int64_t{-1}}}).shape(), "[]");
  EXPECT_EQ(infer("softmax", {"[N, 10]"}, {{"dim", int64_t{2}}}).error(),
            "softmax: dim 2 is out of range for a tensor of rank 2 (expected -2 to 1)");
  EXPECT_EQ(infer("log_softmax", {"[N, 10]"}, {{"dim", int64_t{-3}}}).error(),
            "log_softmax: dim -3 is out of range for a tensor of rank 2 (expected -2 to 1)");
}

TEST(NormalizationOps, SoftmaxReference) {
  // The second row is the first plus 1000: the max subtraction keeps it finite.
  HostTensor x = host({2, 3}, {0, 1, 2, 1000, 1001, 1002});
  double z = 1 + std::exp(1.0) + std::exp(2.0);
  std::vector<double> p = {1 / z, std::exp(1.0) / z, std::exp(2.0) / z};
  HostTensor y = run("softmax", {x}, {{"dim", int64_t{-1}}});
  expect_values(y, {p[0], p[1], p[2], p[0], p[1], p[2]});
  EXPECT_NEAR(y.data[0] + y.data[1] + y.data[2], 1.0, 1e-15);
  HostTensor log_y = run("log_softmax", {x}, {{"dim", int64_t{1}}});
  expect_values(log_y, {std::log(p[0]), std::log(p[1]), std::log(p[2]), std::log(p[0]),
                        std::log(p[1]), std::log(p[2])});
}

TEST(NormalizationOps, SoftmaxAlongLeadingDim) {
  // Columns {0, ln 3} and {0, 0}.
  HostTensor x = host({2, 2}, {0, 0, std::log(3.0), 0});
  expect_values(run("softmax", {x}, {{"dim", int64_t{0}}}), {0.25, 0.5, 0.75, 0.5});
  expect_values(run("log_softmax", {x}, {{"dim", int64_t{0}}}),
                {std::log(0.25), std::log(0.5), std::log(0.75), std::log(0.5)});
  // Every row of a 3-d softmax over the middle dim sums to one.
  HostTensor cube = iota({2, 3, 4}, 0.37, -2.0);
  HostTensor y = run("softmax", {cube}, {{"dim", int64_t{1}}});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t k = 0; k < 4; ++k) {
      double sum = 0.0;
      for (int64_t c = 0; c < 3; ++c)
        sum += y.data[static_cast<size_t>((n * 3 + c) * 4 + k)];
      EXPECT_NEAR(sum, 1.0, 1e-14);
    }
}

TEST(NormalizationOps, SoftmaxEdgeCases) {
  HostTensor scalar = host({}, {5});
  expect_values(run("softmax", {scalar}, {{"dim", int64_t{0}}}), {1});
  expect_values(run("log_softmax", {scalar}, {{"dim", int64_t{0}}}), {0});
  double inf = std::numeric_limits<double>::infinity();
  HostTensor masked = host({2}, {-inf, 0});
  expect_values(run("softmax", {masked}, {{"dim", int64_t{0}}}), {0, 1});
  HostTensor log_masked = run("log_softmax", {masked}, {{"dim", int64_t{0}}});
  EXPECT_EQ(log_masked.data[0], -inf);
  EXPECT_EQ(log_masked.data[1], 0.0);
}

// ---- batch_norm ----

TEST(NormalizationOps, BatchNormRegistration) {
  const OpDef& op = op_named("batch_norm");
  std::vector<std::string> names;
  for (const ParamSpec& p : op.params)
    names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input", "running_mean", "running_var", "weight",
                                             "bias", "training", "momentum", "eps"}));
  EXPECT_EQ(op.param("running_mean")->kind, ParamKind::Tensor);
  EXPECT_EQ(op.param("running_mean")->init, ParamInit::Zeros);
  EXPECT_EQ(op.param("running_var")->init, ParamInit::Ones);
  EXPECT_EQ(op.param("weight")->init, ParamInit::Ones);
  EXPECT_EQ(op.param("bias")->init, ParamInit::Zeros);
  EXPECT_EQ(op.param("training")->default_value, AttrValue(true));
  EXPECT_EQ(op.param("momentum")->default_value, AttrValue(0.1));
  ASSERT_TRUE(op.mutates);
  Attrs attrs = attrs_with_defaults(op, {});
  EXPECT_EQ(op.mutates(attrs), (std::vector<std::string>{"running_mean", "running_var"}));
  attrs["training"] = false;
  EXPECT_EQ(op.mutates(attrs), std::vector<std::string>{});
}

TEST(NormalizationOps, BatchNormShapes) {
  EXPECT_EQ(infer("batch_norm", {"[N, 4]", "[4]", "[4]", "[4]", "[4]"}).shape(), "[N, 4]");
  EXPECT_EQ(infer("batch_norm", {"[N, 16, 8, 8]", "[16]", "[16]", nullptr, nullptr}).shape(),
            "[N, 16, 8, 8]");
  // One value per channel is fine in eval mode, and unknown while N is symbolic.
  EXPECT_EQ(infer("batch_norm", {"[1, 4]", "[4]", "[4]", nullptr, nullptr}, {{"training", false}})
                .shape(),
            "[1, 4]");
  Inferred fixed = infer("batch_norm", {"[N, C, 8]", "[16]", "[16]", nullptr, nullptr});
  EXPECT_EQ(fixed.shape(), "[N, 16, 8]");
  EXPECT_EQ(fixed.dims.resolve(Dim::symbol("C")), Dim::constant(16));
}

TEST(NormalizationOps, BatchNormErrors) {
  EXPECT_EQ(infer("batch_norm", {"[4]", "[4]", "[4]", nullptr, nullptr}).error(),
            "batch_norm: expected an input of at least 2 dims [N, C, *] but got [4]");
  EXPECT_EQ(infer("batch_norm", {"[N, 4]", "[3]", "[4]", nullptr, nullptr}).error(),
            "batch_norm: running_mean has [3] but input has [N, 4]: expected one value per "
            "channel (3 vs 4)");
  EXPECT_EQ(infer("batch_norm", {"[N, 4]", "[4]", "[4, 1]", nullptr, nullptr}).error(),
            "batch_norm: expected a 1-d running_var [4] but got [4, 1]");
  EXPECT_EQ(infer("batch_norm", {"[N, 4]", "[4]", "[4]", nullptr, "[5]"}).error(),
            "batch_norm: bias has [5] but input has [N, 4]: expected one value per channel "
            "(5 vs 4)");
  EXPECT_EQ(infer("batch_norm", {"[1, 4]", "[4]", "[4]", nullptr, nullptr}).error(),
            "batch_norm: expected more than 1 value per channel when training, got input [1, 4]");
  EXPECT_EQ(infer("batch_norm", {"[1, 4, 1, 1]", "[4]", "[4]", nullptr, nullptr}).error(),
            "batch_norm: expected more than 1 value per channel when training, got input "
            "[1, 4, 1, 1]");
}

TEST(NormalizationOps, BatchNormTrainingUpdatesRunningStats) {
  // [N=4, C=2]: channel 0 is {1, 2, 3, 4} (mean 2.5, biased var 1.25,
  // unbiased 5/3); channel 1 is {0, 0, 0, 8} (mean 2, biased 12, unbiased 16).
  HostTensor x = host({4, 2}, {1, 0, 2, 0, 3, 0, 4, 8});
  HostTensor running_mean = host({2}, {0, 0});
  HostTensor running_var = host({2}, {1, 1});
  HostTensor y = run("batch_norm", {x, running_mean, running_var, nullptr, nullptr}, {},
                     {nullptr, &running_mean, &running_var, nullptr, nullptr});
  double s0 = 1 / std::sqrt(1.25 + kEps), s1 = 1 / std::sqrt(12 + kEps);
  expect_values(y, {-1.5 * s0, -2 * s1, -0.5 * s0, -2 * s1, 0.5 * s0, -2 * s1, 1.5 * s0, 6 * s1});
  expect_values(running_mean, {0.1 * 2.5, 0.1 * 2});
  expect_values(running_var, {0.9 + 0.1 * 5.0 / 3.0, 0.9 + 0.1 * 16});
}

TEST(NormalizationOps, BatchNormTrainingOverSpatialDims) {
  // [N=2, C=2, 1, 2]: channel 0 is {0, 1, 4, 5}, channel 1 is {2, 3, 6, 7};
  // both have biased variance 4.25 and unbiased 17/3.
  HostTensor x = iota({2, 2, 1, 2});
  HostTensor running_mean = host({2}, {1, 1});
  HostTensor running_var = host({2}, {2, 2});
  HostTensor weight = host({2}, {2, 1});
  HostTensor bias = host({2}, {0, 10});
  HostTensor y = run("batch_norm", {x, running_mean, running_var, weight, bias},
                     {{"momentum", 0.5}}, {nullptr, &running_mean, &running_var, nullptr, nullptr});
  double s = 1 / std::sqrt(4.25 + kEps);
  expect_values(y, {-5 * s, -3 * s, -2.5 * s + 10, -1.5 * s + 10, 3 * s, 5 * s, 1.5 * s + 10,
                    2.5 * s + 10});
  expect_values(running_mean, {0.5 + 0.5 * 2.5, 0.5 + 0.5 * 4.5});
  expect_values(running_var, {1 + 0.5 * 17.0 / 3.0, 1 + 0.5 * 17.0 / 3.0});
}

TEST(NormalizationOps, BatchNormEvalUsesRunningStats) {
  HostTensor x = host({2, 2}, {1, 2, 3, 4});
  HostTensor running_mean = host({2}, {1, 2});
  HostTensor running_var = host({2}, {4, 9});
  HostTensor weight = host({2}, {2, 1});
  HostTensor bias = host({2}, {0, 1});
  HostTensor y = run("batch_norm", {x, running_mean, running_var, weight, bias},
                     {{"training", false}, {"eps", 0.0}});
  expect_values(y, {0, 1, 2 * 2.0 / 2, 2.0 / 3 + 1});
  expect_values(running_mean, {1, 2}); // untouched
  expect_values(running_var, {4, 9});
}

} // namespace
} // namespace fusegen
