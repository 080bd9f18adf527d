// Registry entries of the reduction family: signatures, dim normalization,
// shape inference and float64 references.
#include "support/OpTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fusegen {
namespace {

using namespace fusegen::testing;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Ints = std::vector<int64_t>;
using Values = std::vector<double>;

const std::vector<std::string> kReductionOps = {"sum", "mean", "amax", "amin",
                                                "max", "min",  "logsumexp"};

// ---- Signatures ----

TEST(ReductionOps, SignaturesFollowTorch) {
  for (const std::string& name : kReductionOps)
    EXPECT_EQ(op_named(name).kind, OpKind::Reduction) << name;
  for (const char* name : {"sum", "mean", "amax", "amin"}) {
    EXPECT_EQ(signature(name), "input, dim=None, keepdim=false") << name;
    EXPECT_EQ(op_named(name).params[1].kind, ParamKind::OptionalInts) << name;
  }
  for (const char* name : {"max", "min", "logsumexp"})
    EXPECT_EQ(signature(name), "input, dim, keepdim=false") << name;
  EXPECT_EQ(op_named("max").params[1].kind, ParamKind::Int);
  EXPECT_EQ(op_named("logsumexp").params[1].kind, ParamKind::Ints);
}

// ---- Shape inference ----

TEST(ReductionOps, NoneReducesEveryDim) {
  Inferred r = infer("sum", {"[N, C, 4]"});
  EXPECT_EQ(r.shape(), "[]");
  EXPECT_EQ(r.attrs.at("dim"), AttrValue(Ints{0, 1, 2}));
  EXPECT_EQ(infer("mean", {"[N, C, 4]"}, {{"keepdim", true}}).shape(), "[1, 1, 1]");
}

TEST(ReductionOps, EmptyTupleReducesEveryDimLikeTorch) {
  Inferred r = infer("amax", {"[N, 4]"}, {{"dim", Ints{}}});
  EXPECT_EQ(r.shape(), "[]");
  EXPECT_EQ(r.attrs.at("dim"), AttrValue(Ints{0, 1}));
}

TEST(ReductionOps, DimsAreNormalizedAndSorted) {
  Inferred last = infer("sum", {"[N, C, H]"}, {{"dim", int64_t{-1}}});
  EXPECT_EQ(last.shape(), "[N, C]");
  EXPECT_EQ(last.attrs.at("dim"), AttrValue(Ints{2}));
  Inferred outer = infer("mean", {"[N, C, H]"}, {{"dim", Ints{2, 0}}});
  EXPECT_EQ(outer.shape(), "[C]");
  EXPECT_EQ(outer.attrs.at("dim"), AttrValue(Ints{0, 2}));
  Inferred kept = infer("amin", {"[N, C, H]"}, {{"dim", Ints{-1, 0}}, {"keepdim", true}});
  EXPECT_EQ(kept.shape(), "[1, C, 1]");
  EXPECT_EQ(kept.attr_text("dim"), "(0, 2)");
  EXPECT_EQ(infer("logsumexp", {"[N, C]"}, {{"dim", int64_t{1}}}).attr_text("dim"), "(1,)");
}

TEST(ReductionOps, MaxAndMinKeepAnIntDim) {
  Inferred r = infer("max", {"[N, C]"}, {{"dim", int64_t{-1}}});
  EXPECT_EQ(r.shape(), "[N]");
  EXPECT_EQ(r.attrs.at("dim"), AttrValue(int64_t{1}));
  Inferred kept = infer("min", {"[N, C]"}, {{"dim", int64_t{0}}, {"keepdim", true}});
  EXPECT_EQ(kept.shape(), "[1, C]");
  EXPECT_EQ(kept.attrs.at("dim"), AttrValue(int64_t{0}));
}

TEST(ReductionOps, ReportsBadDims) {
  EXPECT_EQ(infer("sum", {"[N, C, H]"}, {{"dim", int64_t{3}}}).error(),
            "sum: dim 3 is out of range for a tensor of rank 3 (expected -3 to 2)");
  EXPECT_EQ(infer("max", {"[N, C]"}, {{"dim", int64_t{-3}}}).error(),
            "max: dim -3 is out of range for a tensor of rank 2 (expected -2 to 1)");
  EXPECT_EQ(infer("sum", {"[N, C, H]"}, {{"dim", Ints{1, -2}}}).error(),
            "sum: dim 1 appears twice");
  EXPECT_EQ(infer("logsumexp", {"[N, C]"}, {{"dim", Ints{0, 0}}}).error(),
            "logsumexp: dim 0 appears twice");
}

TEST(ReductionOps, ExtremaRejectZeroSizeDims) {
  for (const char* name : {"amax", "amin", "max", "min"})
    EXPECT_EQ(infer(name, {"[0, 3]"}, {{"dim", int64_t{0}}}).error(),
              std::string(name) + ": cannot reduce over a zero-size dim (dim 0 of [0, 3])");
  EXPECT_EQ(infer("amax", {"[N, 0]"}).error(),
            "amax: cannot reduce over a zero-size dim (dim 1 of [N, 0])");
  // Fine: the empty dim is kept, the dim is symbolic, or the op has an identity.
  EXPECT_EQ(infer("amax", {"[0, 3]"}, {{"dim", int64_t{1}}}).shape(), "[0]");
  EXPECT_EQ(infer("max", {"[N, 3]"}, {{"dim", int64_t{0}}}).shape(), "[3]");
  EXPECT_EQ(infer("sum", {"[0, 3]"}, {{"dim", int64_t{0}}}).shape(), "[3]");
  EXPECT_EQ(infer("logsumexp", {"[0, 3]"}, {{"dim", int64_t{0}}}).shape(), "[3]");
}

TEST(ReductionOps, ZeroDimTensors) {
  EXPECT_EQ(infer("sum", {"[]"}).shape(), "[]");
  EXPECT_EQ(infer("max", {"[]"}, {{"dim", int64_t{-1}}, {"keepdim", true}}).shape(), "[]");
  EXPECT_EQ(infer("max", {"[]"}, {{"dim", int64_t{1}}}).error(),
            "max: dim 1 is out of range for a tensor of rank 0 (expected -1 to 0)");
  EXPECT_EQ(run("logsumexp", {host({}, {2.5})}, {{"dim", int64_t{0}}}).data, Values{2.5});
  EXPECT_EQ(run("mean", {host({}, {2.5})}).data, Values{2.5});
}

// ---- References ----

TEST(ReductionOps, SumAndMean) {
  HostTensor x = host({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run("sum", {x}).data, Values{21});
  EXPECT_EQ(run("sum", {x}, {{"dim", int64_t{0}}}).data, (Values{5, 7, 9}));
  EXPECT_EQ(run("sum", {x}, {{"dim", int64_t{1}}}).data, (Values{6, 15}));
  EXPECT_EQ(run("mean", {x}).data, Values{3.5});
  HostTensor rows = run("mean", {x}, {{"dim", int64_t{-1}}, {"keepdim", true}});
  EXPECT_EQ(rows.shape, (Ints{2, 1}));
  EXPECT_EQ(rows.data, (Values{2, 5}));
}

TEST(ReductionOps, NonAdjacentDims) {
  // x[i][j][k] = 6i + 2j + k; summing over i and k leaves one value per j.
  HostTensor x = iota({2, 3, 2});
  EXPECT_EQ(run("sum", {x}, {{"dim", Ints{0, 2}}}).data, (Values{14, 22, 30}));
  EXPECT_EQ(run("mean", {x}, {{"dim", Ints{2, 0}}}).data, (Values{3.5, 5.5, 7.5}));
  HostTensor kept = run("amax", {x}, {{"dim", Ints{0, 2}}, {"keepdim", true}});
  EXPECT_EQ(kept.shape, (Ints{1, 3, 1}));
  EXPECT_EQ(kept.data, (Values{7, 9, 11}));
}

TEST(ReductionOps, Extrema) {
  HostTensor x = host({2, 3}, {1, 6, 3, 4, 5, 2});
  EXPECT_EQ(run("amax", {x}).data, Values{6});
  EXPECT_EQ(run("amin", {x}).data, Values{1});
  EXPECT_EQ(run("amax", {x}, {{"dim", int64_t{0}}}).data, (Values{4, 6, 3}));
  EXPECT_EQ(run("amin", {x}, {{"dim", int64_t{1}}}).data, (Values{1, 2}));
  HostTensor kept = run("max", {x}, {{"dim", int64_t{-1}}, {"keepdim", true}});
  EXPECT_EQ(kept.shape, (Ints{2, 1}));
  EXPECT_EQ(kept.data, (Values{6, 5}));
  EXPECT_EQ(run("min", {x}, {{"dim", int64_t{0}}}).data, (Values{1, 5, 2}));
  EXPECT_EQ(run("max", {host({2}, {-kInf, -kInf})}, {{"dim", int64_t{0}}}).data,
            Values{-kInf});
}

TEST(ReductionOps, ExtremaPropagateNan) {
  HostTensor x = host({2, 3}, {1, kNaN, 3, 4, 5, 6});
  for (const char* name : {"amax", "amin", "max", "min"}) {
    HostTensor out = run(name, {x}, {{"dim", int64_t{1}}});
    EXPECT_TRUE(std::isnan(out.data[0])) << name;
    EXPECT_FALSE(std::isnan(out.data[1])) << name;
  }
}

TEST(ReductionOps, EmptySlices) {
  HostTensor empty({0, 3});
  EXPECT_EQ(run("sum", {empty}, {{"dim", int64_t{0}}}).data, (Values{0, 0, 0}));
  EXPECT_TRUE(std::isnan(run("mean", {empty}, {{"dim", int64_t{0}}}).data.at(0)));
  EXPECT_EQ(run("logsumexp", {empty}, {{"dim", int64_t{0}}}).data,
            (Values{-kInf, -kInf, -kInf}));
  EXPECT_TRUE(run("amax", {empty}, {{"dim", int64_t{1}}}).data.empty());
}

TEST(ReductionOps, LogsumexpIsStable) {
  HostTensor x = host({3, 2}, {1000, 1000, -1000, -1000, 0, std::log(3.0)});
  EXPECT_EQ(run("logsumexp", {x}, {{"dim", int64_t{1}}}).data,
            (Values{1000.6931471805599, -999.3068528194401, std::log(4.0)}));
  EXPECT_DOUBLE_EQ(run("logsumexp", {host({3}, {1, 2, 3})}, {{"dim", Ints{0}}}).data.at(0),
                   3.40760596444438);
}

TEST(ReductionOps, LogsumexpInfinities) {
  HostTensor x = host({4, 2}, {-kInf, -kInf, -kInf, 0, kInf, 1, kNaN, 1});
  HostTensor out = run("logsumexp", {x}, {{"dim", int64_t{-1}}});
  EXPECT_EQ(out.data[0], -kInf); // all -inf gives -inf, not NaN
  EXPECT_EQ(out.data[1], 0);
  EXPECT_EQ(out.data[2], kInf);
  EXPECT_TRUE(std::isnan(out.data[3]));
}

TEST(ReductionOps, ReferenceAcceptsRawAttributes) {
  // Attributes not yet canonicalized by inference: None and negative dims.
  const OpDef& sum = op_named("sum");
  HostTensor x = host({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run_reference(sum, {x}, attrs_with_defaults(sum, {}), {}).data, Values{21});
  EXPECT_EQ(run_reference(sum, {x}, attrs_with_defaults(sum, {{"dim", int64_t{-1}}}), {2}).data,
            (Values{6, 15}));
}

} // namespace
} // namespace fusegen
