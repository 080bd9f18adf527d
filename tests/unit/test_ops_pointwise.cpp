// Registry entries of the pointwise family (binary arithmetic, activations)
// and of dropout: signatures, shape inference and float64 references.
#include "support/OpTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

namespace fusegen {
namespace {

using namespace fusegen::testing;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A unary op applied to one 0-d value.
double apply(const std::string& name, double x, const Attrs& attrs = {}) {
  return run(name, {host({}, {x})}, attrs).data.at(0);
}

const std::vector<std::string> kBinaryOps = {"add", "sub", "mul", "div", "maximum", "minimum"};
const std::vector<std::string> kUnaryOps = {
    "clamp",     "relu",        "leaky_relu", "gelu", "sigmoid", "tanh", "silu",
    "mish",      "softplus",    "hardswish",  "hardsigmoid",     "hardtanh",
    "elu",       "exp",         "log",        "sqrt", "rsqrt",   "abs",  "neg"};

// ---- Signatures ----

TEST(PointwiseOps, AllRegisteredAsPointwise) {
  for (const auto* list : {&kBinaryOps, &kUnaryOps})
    for (const std::string& name : *list)
      EXPECT_EQ(op_named(name).kind, OpKind::Pointwise) << name;
}

TEST(PointwiseOps, SignaturesFollowTorch) {
  EXPECT_EQ(signature("add"), "input, other");
  EXPECT_EQ(op_named("div").params[1].kind, ParamKind::TensorOrScalar);
  EXPECT_EQ(signature("clamp"), "input, min=None, max=None");
  EXPECT_EQ(op_named("clamp").params[1].kind, ParamKind::OptionalFloat);
  EXPECT_EQ(signature("relu"), "input");
  EXPECT_EQ(signature("leaky_relu"), "input, negative_slope=0.01");
  EXPECT_EQ(signature("gelu"), "input, approximate=\"none\"");
  EXPECT_EQ(signature("softplus"), "input, beta=1.0, threshold=20.0");
  EXPECT_EQ(signature("hardtanh"), "input, min_val=-1.0, max_val=1.0");
  EXPECT_EQ(signature("elu"), "input, alpha=1.0");
  EXPECT_EQ(op_named("exp").params[0].kind, ParamKind::Tensor);
}

// ---- Binary shape inference ----

TEST(PointwiseOps, BinaryBroadcastsSymbolicShapes) {
  for (const std::string& name : kBinaryOps) {
    Inferred r = infer(name, {"[N, 1]", "[1, C, 1, 1]"});
    EXPECT_EQ(r.shape(), "[1, C, N, 1]") << name;
    EXPECT_TRUE(r.errors.empty()) << name;
  }
}

TEST(PointwiseOps, BinaryBroadcastsAgainstScalars) {
  EXPECT_EQ(infer("mul", {"[N, 8]", "[]"}).shape(), "[N, 8]");
  EXPECT_EQ(infer("sub", {"[]", "[N, 8]"}).shape(), "[N, 8]");
  EXPECT_EQ(infer("add", {"[]", "[]"}).shape(), "[]");
}

TEST(PointwiseOps, BinaryFixesSymbolsMeetingConstants) {
  EXPECT_EQ(infer("add", {"[N, 8]", "[4, 1]"}).shape(), "[4, 8]");
  EXPECT_EQ(infer("add", {"[N, K]", "[N, K]"}).shape(), "[N, K]");
}

TEST(PointwiseOps, BinaryReportsIncompatibleShapes) {
  EXPECT_EQ(infer("add", {"[3, 4]", "[5]"}).error(),
            "add: shapes [3, 4] and [5] cannot be broadcast (4 vs 5)");
  EXPECT_EQ(infer("maximum", {"[N, 4]", "[M, 4]"}).error(),
            "maximum: shapes [N, 4] and [M, 4] cannot be broadcast (symbolic dims N and M must "
            "be equal; use one name for both)");
}

// ---- Binary references ----

TEST(PointwiseOps, BinaryReferencesBroadcast) {
  HostTensor column = host({2, 1}, {1, 2});
  HostTensor row = host({3}, {10, 20, 30});
  EXPECT_EQ(run("add", {column, row}).data, (std::vector<double>{11, 21, 31, 12, 22, 32}));
  EXPECT_EQ(run("sub", {column, row}).data,
            (std::vector<double>{-9, -19, -29, -8, -18, -28}));
  EXPECT_EQ(run("mul", {row, column}).data, (std::vector<double>{10, 20, 30, 20, 40, 60}));
  HostTensor out = run("div", {row, host({}, {4})});
  EXPECT_EQ(out.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(out.data, (std::vector<double>{2.5, 5, 7.5}));
}

TEST(PointwiseOps, DivIsTrueDivision) {
  HostTensor out = run("div", {host({4}, {7, 1, -1, 0}), host({4}, {2, 0, 0, 0})});
  EXPECT_EQ(out.data[0], 3.5);
  EXPECT_EQ(out.data[1], kInf);
  EXPECT_EQ(out.data[2], -kInf);
  EXPECT_TRUE(std::isnan(out.data[3]));
}

TEST(PointwiseOps, MaximumAndMinimumPropagateNan) {
  HostTensor a = host({3}, {1, kNaN, 5});
  HostTensor b = host({3}, {2, 0, kNaN});
  HostTensor hi = run("maximum", {a, b});
  HostTensor lo = run("minimum", {a, b});
  EXPECT_EQ(hi.data[0], 2);
  EXPECT_EQ(lo.data[0], 1);
  for (size_t i : {1u, 2u}) {
    EXPECT_TRUE(std::isnan(hi.data[i])) << i;
    EXPECT_TRUE(std::isnan(lo.data[i])) << i;
  }
}

// ---- Unary shape inference ----

TEST(PointwiseOps, UnaryKeepsShapeAndSymbols) {
  for (const std::string& name : kUnaryOps) {
    Attrs attrs = name == "clamp" ? Attrs{{"min", 0.0}} : Attrs{};
    Inferred r = infer(name, {"[N, 3, H]"}, attrs);
    EXPECT_EQ(r.shape(), "[N, 3, H]") << name;
    EXPECT_TRUE(r.errors.empty()) << name;
  }
}

TEST(PointwiseOps, ClampNeedsABound) {
  EXPECT_EQ(infer("clamp", {"[N]"}).error(),
            "clamp: at least one of min and max must be given");
  EXPECT_EQ(infer("clamp", {"[N]"}, {{"max", int64_t{1}}}).shape(), "[N]");
}

TEST(PointwiseOps, GeluRejectsUnknownApproximation) {
  EXPECT_EQ(infer("gelu", {"[N]"}, {{"approximate", std::string("exact")}}).error(),
            "gelu: approximate must be \"none\" or \"tanh\", got \"exact\"");
  EXPECT_EQ(infer("gelu", {"[N]"}, {{"approximate", std::string("tanh")}}).shape(), "[N]");
}

// ---- Unary references ----

TEST(PointwiseOps, UnaryReferenceKeepsLayout) {
  HostTensor out = run("neg", {host({2, 2}, {1, -2, 3, -4})});
  EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out.data, (std::vector<double>{-1, 2, -3, 4}));
}

TEST(PointwiseOps, Clamp) {
  EXPECT_EQ(apply("clamp", -3, {{"min", -1.0}, {"max", 1.0}}), -1);
  EXPECT_EQ(apply("clamp", 0.5, {{"min", -1.0}, {"max", 1.0}}), 0.5);
  EXPECT_EQ(apply("clamp", 3, {{"min", -1.0}, {"max", 1.0}}), 1);
  EXPECT_EQ(apply("clamp", -3, {{"min", int64_t{0}}}), 0);
  EXPECT_EQ(apply("clamp", 3, {{"min", int64_t{0}}}), 3);
  EXPECT_EQ(apply("clamp", 3, {{"max", 2.0}}), 2);
  // torch: when min > max every element becomes max.
  EXPECT_EQ(apply("clamp", -5, {{"min", 2.0}, {"max", 1.0}}), 1);
  EXPECT_EQ(apply("clamp", 5, {{"min", 2.0}, {"max", 1.0}}), 1);
  EXPECT_TRUE(std::isnan(apply("clamp", kNaN, {{"min", 0.0}, {"max", 1.0}})));
}

TEST(PointwiseOps, ReluFamily) {
  EXPECT_EQ(apply("relu", -1), 0);
  EXPECT_EQ(apply("relu", 2), 2);
  EXPECT_TRUE(std::isnan(apply("relu", kNaN)));
  EXPECT_DOUBLE_EQ(apply("leaky_relu", -2), -0.02);
  EXPECT_EQ(apply("leaky_relu", 3), 3);
  EXPECT_DOUBLE_EQ(apply("leaky_relu", -2, {{"negative_slope", 0.2}}), -0.4);
  EXPECT_DOUBLE_EQ(apply("elu", -1), -0.6321205588285577);
  EXPECT_DOUBLE_EQ(apply("elu", -1, {{"alpha", 2.0}}), -1.2642411176571153);
  EXPECT_EQ(apply("elu", 2), 2);
}

TEST(PointwiseOps, Gelu) {
  EXPECT_DOUBLE_EQ(apply("gelu", 1.0), 0.8413447460685429);
  EXPECT_DOUBLE_EQ(apply("gelu", -1.0), -0.15865525393145707);
  EXPECT_EQ(apply("gelu", 0.0), 0.0);
  EXPECT_DOUBLE_EQ(apply("gelu", 1.0, {{"approximate", std::string("tanh")}}),
                   0.8411919906082768);
}

TEST(PointwiseOps, SigmoidFamily) {
  EXPECT_EQ(apply("sigmoid", 0), 0.5);
  EXPECT_DOUBLE_EQ(apply("sigmoid", 1), 0.7310585786300049);
  EXPECT_DOUBLE_EQ(apply("sigmoid", -2), 0.11920292202211755);
  EXPECT_EQ(apply("sigmoid", -800), 0.0); // no overflow to NaN
  EXPECT_EQ(apply("sigmoid", 800), 1.0);
  EXPECT_DOUBLE_EQ(apply("tanh", 0.5), 0.46211715726000974);
  EXPECT_DOUBLE_EQ(apply("silu", 1), 0.7310585786300049);
  EXPECT_DOUBLE_EQ(apply("silu", -2), -0.2384058440442351);
  EXPECT_DOUBLE_EQ(apply("mish", 1), 0.8650983882673103);
  EXPECT_DOUBLE_EQ(apply("mish", -2), -0.2525014826957089);
  EXPECT_EQ(apply("mish", 1000), 1000); // no overflow to NaN
}

TEST(PointwiseOps, Softplus) {
  EXPECT_DOUBLE_EQ(apply("softplus", 1), 1.3132616875182228);
  // Above the threshold torch returns the input itself.
  EXPECT_EQ(apply("softplus", 30), 30);
  EXPECT_DOUBLE_EQ(apply("softplus", 5, {{"beta", 2.0}, {"threshold", 10.0}}), 5.000022699449609);
  EXPECT_EQ(apply("softplus", 6, {{"beta", int64_t{2}}, {"threshold", int64_t{10}}}), 6);
}

TEST(PointwiseOps, HardActivations) {
  EXPECT_EQ(apply("hardswish", -4), 0);
  EXPECT_EQ(apply("hardswish", -3), 0);
  EXPECT_EQ(apply("hardswish", 0), 0);
  EXPECT_DOUBLE_EQ(apply("hardswish", 1), 2.0 / 3.0);
  EXPECT_EQ(apply("hardswish", 3), 3);
  EXPECT_EQ(apply("hardswish", 4), 4);
  EXPECT_EQ(apply("hardsigmoid", -3), 0);
  EXPECT_EQ(apply("hardsigmoid", 0), 0.5);
  EXPECT_DOUBLE_EQ(apply("hardsigmoid", 1), 4.0 / 6.0);
  EXPECT_EQ(apply("hardsigmoid", 3), 1);
  EXPECT_EQ(apply("hardtanh", -2), -1);
  EXPECT_EQ(apply("hardtanh", 0.5), 0.5);
  EXPECT_EQ(apply("hardtanh", 2), 1);
  EXPECT_EQ(apply("hardtanh", -2, {{"min_val", -0.5}, {"max_val", 0.25}}), -0.5);
  EXPECT_EQ(apply("hardtanh", 2, {{"min_val", -0.5}, {"max_val", 0.25}}), 0.25);
}

TEST(PointwiseOps, ElementaryFunctions) {
  EXPECT_DOUBLE_EQ(apply("exp", 1), std::numbers::e);
  EXPECT_DOUBLE_EQ(apply("log", std::numbers::e), 1);
  EXPECT_EQ(apply("log", 0), -kInf);
  EXPECT_TRUE(std::isnan(apply("log", -1)));
  EXPECT_EQ(apply("sqrt", 4), 2);
  EXPECT_TRUE(std::isnan(apply("sqrt", -1)));
  EXPECT_EQ(apply("rsqrt", 4), 0.5);
  EXPECT_EQ(apply("rsqrt", 0), kInf);
  EXPECT_EQ(apply("abs", -2), 2);
  EXPECT_EQ(apply("neg", 3), -3);
}

// ---- dropout ----

TEST(MiscOps, DropoutSignatureAndKind) {
  EXPECT_EQ(op_named("dropout").kind, OpKind::Identity);
  EXPECT_EQ(signature("dropout"), "input, p=0.5, training=false");
}

TEST(MiscOps, DropoutIsIdentityInEvalMode) {
  EXPECT_EQ(infer("dropout", {"[N, 3]"}).shape(), "[N, 3]");
  EXPECT_EQ(infer("dropout", {"[N]"}, {{"p", int64_t{1}}}).shape(), "[N]");
  EXPECT_EQ(infer("dropout", {"[N]"}, {{"p", 0.0}}).shape(), "[N]");
  HostTensor out = run("dropout", {host({2, 2}, {1, 2, 3, 4})}, {{"p", 0.9}});
  EXPECT_EQ(out.data, (std::vector<double>{1, 2, 3, 4}));
}

TEST(MiscOps, DropoutRejectsTrainingAndBadProbability) {
  EXPECT_EQ(infer("dropout", {"[N]"}, {{"training", true}}).error(),
            "dropout: training mode is not supported yet");
  EXPECT_EQ(infer("dropout", {"[N]"}, {{"p", 1.5}}).error(),
            "dropout: probability p has to be between 0 and 1, but got 1.5");
  EXPECT_EQ(infer("dropout", {"[N]"}, {{"p", -0.1}}).error(),
            "dropout: probability p has to be between 0 and 1, but got -0.1");
}

} // namespace
} // namespace fusegen
