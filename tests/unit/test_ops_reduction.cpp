// Registry entries of the reduction family: signatures, dim normalization,
// shape inference and float64 references.
#include "fusegen/OpRegistry.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace fusegen {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- Helpers driving an op the way the IR builder and interpreter do ----
// (the same small driver as in test_ops_pointwise.cpp)

// "N, 1, 8" -> [N, 1, 8]: numbers are constants, names are symbols.
Shape shape_of(const std::string& text) {
  Shape shape;
  std::istringstream in(text);
  std::string token;
  while (std::getline(in, token, ',')) {
    token.erase(0, token.find_first_not_of(' '));
    if (token.empty())
      continue;
    bool numeric = std::isdigit(static_cast<unsigned char>(token[0]));
    shape.push_back(numeric ? Dim::constant(std::stoll(token)) : Dim::symbol(token));
  }
  return shape;
}

const OpDef& op_named(const std::string& name) {
  const OpDef* op = OpRegistry::builtin().find(name);
  if (!op)
    throw std::runtime_error("op not registered: " + name);
  return *op;
}

// Every non-tensor parameter present, defaults filled in, as the builder does.
Attrs with_defaults(const OpDef& op, Attrs attrs) {
  for (const ParamSpec& p : op.params)
    if (!OpDef::is_tensor_kind(p.kind) && p.default_value && !attrs.count(p.name))
      attrs[p.name] = *p.default_value;
  return attrs;
}

struct Inferred {
  std::optional<TensorType> type;
  Attrs attrs; // as canonicalized by inference
  std::vector<std::string> errors;

  std::string shape() const { return type ? shape_str(type->shape) : "<error>"; }
  std::string error() const { return errors.empty() ? "<no error>" : errors.front(); }
  std::string dim() const { return attr_str(attrs.at("dim")); }
};

Inferred infer(const std::string& name, const Shape& shape, Attrs attrs = {}) {
  const OpDef& op = op_named(name);
  Inferred result;
  result.attrs = with_defaults(op, std::move(attrs));
  TensorType type{DType::F32, shape};
  DimUnifier dims;
  Diagnostics diags;
  ShapeContext ctx(op, {&type}, result.attrs, std::vector<SourceLoc>(op.params.size()),
                   SourceLoc{0, 1, 1}, dims, diags);
  result.type = op.infer(ctx);
  for (const Diagnostic& d : diags.all())
    result.errors.push_back(d.message);
  return result;
}

HostTensor host(std::vector<int64_t> shape, std::vector<double> data) {
  HostTensor t(std::move(shape));
  t.data = std::move(data);
  return t;
}

HostTensor iota(std::vector<int64_t> shape) {
  HostTensor t(std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = static_cast<double>(i);
  return t;
}

HostTensor run_reference(const OpDef& op, const HostTensor& in, const Attrs& attrs,
                         std::vector<int64_t> out_shape) {
  HostTensor out(std::move(out_shape));
  ReferenceContext ctx{op, {&in}, {nullptr}, attrs, out};
  op.reference(ctx);
  return out;
}

// Infers (canonicalizing attributes) then runs the reference.
HostTensor evaluate(const std::string& name, const HostTensor& in, Attrs attrs = {}) {
  Shape shape;
  for (int64_t d : in.shape)
    shape.push_back(Dim::constant(d));
  Inferred inferred = infer(name, shape, std::move(attrs));
  if (!inferred.type)
    throw std::runtime_error("inference failed: " + inferred.error());
  std::vector<int64_t> out_shape;
  for (const Dim& d : inferred.type->shape)
    out_shape.push_back(d.value());
  return run_reference(op_named(name), in, inferred.attrs, out_shape);
}

using Ints = std::vector<int64_t>;
using Values = std::vector<double>;

const std::vector<std::string> kReductionOps = {"sum", "mean", "amax", "amin",
                                                "max", "min",  "logsumexp"};

std::string signature(const std::string& name) {
  std::string out;
  for (const ParamSpec& p : op_named(name).params) {
    out += (out.empty() ? "" : ", ") + p.name;
    if (p.default_value)
      out += "=" + attr_str(*p.default_value);
  }
  return out;
}

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
  Inferred r = infer("sum", shape_of("N, C, 4"));
  EXPECT_EQ(r.shape(), "[]");
  EXPECT_EQ(r.attrs.at("dim"), AttrValue(Ints{0, 1, 2}));
  EXPECT_EQ(infer("mean", shape_of("N, C, 4"), {{"keepdim", true}}).shape(), "[1, 1, 1]");
}

TEST(ReductionOps, EmptyTupleReducesEveryDimLikeTorch) {
  Inferred r = infer("amax", shape_of("N, 4"), {{"dim", Ints{}}});
  EXPECT_EQ(r.shape(), "[]");
  EXPECT_EQ(r.attrs.at("dim"), AttrValue(Ints{0, 1}));
}

TEST(ReductionOps, DimsAreNormalizedAndSorted) {
  Inferred last = infer("sum", shape_of("N, C, H"), {{"dim", int64_t{-1}}});
  EXPECT_EQ(last.shape(), "[N, C]");
  EXPECT_EQ(last.attrs.at("dim"), AttrValue(Ints{2}));
  Inferred outer = infer("mean", shape_of("N, C, H"), {{"dim", Ints{2, 0}}});
  EXPECT_EQ(outer.shape(), "[C]");
  EXPECT_EQ(outer.attrs.at("dim"), AttrValue(Ints{0, 2}));
  Inferred kept = infer("amin", shape_of("N, C, H"), {{"dim", Ints{-1, 0}}, {"keepdim", true}});
  EXPECT_EQ(kept.shape(), "[1, C, 1]");
  EXPECT_EQ(kept.dim(), "(0, 2)");
  EXPECT_EQ(infer("logsumexp", shape_of("N, C"), {{"dim", int64_t{1}}}).dim(), "(1,)");
}

TEST(ReductionOps, MaxAndMinKeepAnIntDim) {
  Inferred r = infer("max", shape_of("N, C"), {{"dim", int64_t{-1}}});
  EXPECT_EQ(r.shape(), "[N]");
  EXPECT_EQ(r.attrs.at("dim"), AttrValue(int64_t{1}));
  Inferred kept = infer("min", shape_of("N, C"), {{"dim", int64_t{0}}, {"keepdim", true}});
  EXPECT_EQ(kept.shape(), "[1, C]");
  EXPECT_EQ(kept.attrs.at("dim"), AttrValue(int64_t{0}));
}

TEST(ReductionOps, ReportsBadDims) {
  EXPECT_EQ(infer("sum", shape_of("N, C, H"), {{"dim", int64_t{3}}}).error(),
            "sum: dim 3 is out of range for a tensor of rank 3 (expected -3 to 2)");
  EXPECT_EQ(infer("max", shape_of("N, C"), {{"dim", int64_t{-3}}}).error(),
            "max: dim -3 is out of range for a tensor of rank 2 (expected -2 to 1)");
  EXPECT_EQ(infer("sum", shape_of("N, C, H"), {{"dim", Ints{1, -2}}}).error(),
            "sum: dim 1 appears twice");
  EXPECT_EQ(infer("logsumexp", shape_of("N, C"), {{"dim", Ints{0, 0}}}).error(),
            "logsumexp: dim 0 appears twice");
}

TEST(ReductionOps, ExtremaRejectZeroSizeDims) {
  for (const char* name : {"amax", "amin", "max", "min"})
    EXPECT_EQ(infer(name, shape_of("0, 3"), {{"dim", int64_t{0}}}).error(),
              std::string(name) + ": cannot reduce over a zero-size dim (dim 0 of [0, 3])");
  EXPECT_EQ(infer("amax", shape_of("N, 0")).error(),
            "amax: cannot reduce over a zero-size dim (dim 1 of [N, 0])");
  // Fine: the empty dim is kept, the dim is symbolic, or the op has an identity.
  EXPECT_EQ(infer("amax", shape_of("0, 3"), {{"dim", int64_t{1}}}).shape(), "[0]");
  EXPECT_EQ(infer("max", shape_of("N, 3"), {{"dim", int64_t{0}}}).shape(), "[3]");
  EXPECT_EQ(infer("sum", shape_of("0, 3"), {{"dim", int64_t{0}}}).shape(), "[3]");
  EXPECT_EQ(infer("logsumexp", shape_of("0, 3"), {{"dim", int64_t{0}}}).shape(), "[3]");
}

TEST(ReductionOps, ZeroDimTensors) {
  EXPECT_EQ(infer("sum", {}).shape(), "[]");
  EXPECT_EQ(infer("max", {}, {{"dim", int64_t{-1}}, {"keepdim", true}}).shape(), "[]");
  EXPECT_EQ(infer("max", {}, {{"dim", int64_t{1}}}).error(),
            "max: dim 1 is out of range for a tensor of rank 0 (expected -1 to 0)");
  EXPECT_EQ(evaluate("logsumexp", host({}, {2.5}), {{"dim", int64_t{0}}}).data, Values{2.5});
  EXPECT_EQ(evaluate("mean", host({}, {2.5})).data, Values{2.5});
}

// ---- References ----

TEST(ReductionOps, SumAndMean) {
  HostTensor x = host({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(evaluate("sum", x).data, Values{21});
  EXPECT_EQ(evaluate("sum", x, {{"dim", int64_t{0}}}).data, (Values{5, 7, 9}));
  EXPECT_EQ(evaluate("sum", x, {{"dim", int64_t{1}}}).data, (Values{6, 15}));
  EXPECT_EQ(evaluate("mean", x).data, Values{3.5});
  HostTensor rows = evaluate("mean", x, {{"dim", int64_t{-1}}, {"keepdim", true}});
  EXPECT_EQ(rows.shape, (Ints{2, 1}));
  EXPECT_EQ(rows.data, (Values{2, 5}));
}

TEST(ReductionOps, NonAdjacentDims) {
  // x[i][j][k] = 6i + 2j + k; summing over i and k leaves one value per j.
  HostTensor x = iota({2, 3, 2});
  EXPECT_EQ(evaluate("sum", x, {{"dim", Ints{0, 2}}}).data, (Values{14, 22, 30}));
  EXPECT_EQ(evaluate("mean", x, {{"dim", Ints{2, 0}}}).data, (Values{3.5, 5.5, 7.5}));
  HostTensor kept = evaluate("amax", x, {{"dim", Ints{0, 2}}, {"keepdim", true}});
  EXPECT_EQ(kept.shape, (Ints{1, 3, 1}));
  EXPECT_EQ(kept.data, (Values{7, 9, 11}));
}

TEST(ReductionOps, Extrema) {
  HostTensor x = host({2, 3}, {1, 6, 3, 4, 5, 2});
  EXPECT_EQ(evaluate("amax", x).data, Values{6});
  EXPECT_EQ(evaluate("amin", x).data, Values{1});
  EXPECT_EQ(evaluate("amax", x, {{"dim", int64_t{0}}}).data, (Values{4, 6, 3}));
  EXPECT_EQ(evaluate("amin", x, {{"dim", int64_t{1}}}).data, (Values{1, 2}));
  HostTensor kept = evaluate("max", x, {{"dim", int64_t{-1}}, {"keepdim", true}});
  EXPECT_EQ(kept.shape, (Ints{2, 1}));
  EXPECT_EQ(kept.data, (Values{6, 5}));
  EXPECT_EQ(evaluate("min", x, {{"dim", int64_t{0}}}).data, (Values{1, 5, 2}));
  EXPECT_EQ(evaluate("max", host({2}, {-kInf, -kInf}), {{"dim", int64_t{0}}}).data,
            Values{-kInf});
}

TEST(ReductionOps, ExtremaPropagateNan) {
  HostTensor x = host({2, 3}, {1, kNaN, 3, 4, 5, 6});
  for (const char* name : {"amax", "amin", "max", "min"}) {
    HostTensor out = evaluate(name, x, {{"dim", int64_t{1}}});
    EXPECT_TRUE(std::isnan(out.data[0])) << name;
    EXPECT_FALSE(std::isnan(out.data[1])) << name;
  }
}

TEST(ReductionOps, EmptySlices) {
  HostTensor empty({0, 3});
  EXPECT_EQ(evaluate("sum", empty, {{"dim", int64_t{0}}}).data, (Values{0, 0, 0}));
  EXPECT_TRUE(std::isnan(evaluate("mean", empty, {{"dim", int64_t{0}}}).data.at(0)));
  EXPECT_EQ(evaluate("logsumexp", empty, {{"dim", int64_t{0}}}).data,
            (Values{-kInf, -kInf, -kInf}));
  EXPECT_TRUE(evaluate("amax", empty, {{"dim", int64_t{1}}}).data.empty());
}

TEST(ReductionOps, LogsumexpIsStable) {
  HostTensor x = host({3, 2}, {1000, 1000, -1000, -1000, 0, std::log(3.0)});
  EXPECT_EQ(evaluate("logsumexp", x, {{"dim", int64_t{1}}}).data,
            (Values{1000.6931471805599, -999.3068528194401, std::log(4.0)}));
  EXPECT_DOUBLE_EQ(evaluate("logsumexp", host({3}, {1, 2, 3}), {{"dim", Ints{0}}}).data.at(0),
                   3.40760596444438);
}

TEST(ReductionOps, LogsumexpInfinities) {
  HostTensor x = host({4, 2}, {-kInf, -kInf, -kInf, 0, kInf, 1, kNaN, 1});
  HostTensor out = evaluate("logsumexp", x, {{"dim", int64_t{-1}}});
  EXPECT_EQ(out.data[0], -kInf); // all -inf gives -inf, not NaN
  EXPECT_EQ(out.data[1], 0);
  EXPECT_EQ(out.data[2], kInf);
  EXPECT_TRUE(std::isnan(out.data[3]));
}

TEST(ReductionOps, ReferenceAcceptsRawAttributes) {
  // Attributes not yet canonicalized by inference: None and negative dims.
  const OpDef& sum = op_named("sum");
  HostTensor x = host({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run_reference(sum, x, with_defaults(sum, {}), {}).data, Values{21});
  EXPECT_EQ(run_reference(sum, x, with_defaults(sum, {{"dim", int64_t{-1}}}), {2}).data,
            (Values{6, 15}));
}

} // namespace
} // namespace fusegen
