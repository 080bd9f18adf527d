// The pointwise family: binary arithmetic with numpy broadcasting and the
// unary activations. Semantics follow torch / torch.nn.functional exactly,
// including NaN propagation; references compute in double.
#include "ops/OpHelpers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace fusegen {
namespace {

using ops::attr;

// ---- Binary ops: input and other broadcast against each other ----

using BinaryFn = double (*)(double, double);
// CUDA form: an infix operator ("+") or a helper function name ("fusegen_maximum").
struct BinaryCuda {
  const char* text;
  bool infix;
};

// A number here becomes a 0-d `constant` node, so inference sees a tensor.
ParamSpec tensor_or_scalar(std::string name) {
  return {std::move(name), ParamKind::TensorOrScalar, std::nullopt};
}

std::optional<TensorType> infer_binary(ShapeContext& ctx) {
  const TensorType& a = *ctx.tensor("input");
  const TensorType& b = *ctx.tensor("other");
  std::optional<Shape> shape = ctx.broadcast(a.shape, b.shape);
  if (!shape)
    return std::nullopt;
  return TensorType{a.dtype, std::move(*shape)};
}

void reference_binary(ReferenceContext& ctx, BinaryFn fn) {
  const HostTensor& a = *ctx.tensor("input");
  const HostTensor& b = *ctx.tensor("other");
  std::vector<int64_t> a_index = ops::broadcast_indices(a.shape, ctx.out.shape);
  std::vector<int64_t> b_index = ops::broadcast_indices(b.shape, ctx.out.shape);
  for (size_t i = 0; i < ctx.out.data.size(); ++i)
    ctx.out.data[i] = fn(a.data[static_cast<size_t>(a_index[i])],
                         b.data[static_cast<size_t>(b_index[i])]);
}

void add_binary(OpRegistry& registry, std::string name, BinaryFn fn, BinaryCuda cuda) {
  registry.add({
      .name = std::move(name),
      .kind = OpKind::Pointwise,
      .params = {tensor_or_scalar("input"), tensor_or_scalar("other")},
      .infer = infer_binary,
      .reference = [fn](ReferenceContext& ctx) { reference_binary(ctx, fn); },
      .mutates = {},
      .cuda = [cuda](const std::vector<std::string>& x, const Attrs&) {
        return cuda.infix ? "(" + x[0] + " " + cuda.text + " " + x[1] + ")"
                          : std::string(cuda.text) + "(" + x[0] + ", " + x[1] + ")";
      },
  });
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// torch.maximum/minimum propagate NaN from either side (std::max does not).
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}

// ---- Unary ops: output shape = input shape ----

using UnaryFn = std::function<double(double)>;
// Builds a node's elementwise function from its attributes, which are read
// once per node rather than once per element.
using UnaryMaker = std::function<UnaryFn(const ReferenceContext&)>;
// Validates attributes during shape inference; reports and returns false.
using AttrCheck = std::function<bool(ShapeContext&)>;

// The CUDA float expression of the op applied to `x`, given its attributes.
using UnaryCuda = std::function<std::string(const std::string& x, const Attrs& attrs)>;

struct UnaryOp {
  std::string name;
  std::vector<ParamSpec> attrs; // the parameters after `input`
  UnaryMaker make;
  UnaryCuda cuda;
  AttrCheck check = {};
};

// A unary op whose CUDA form is a call of one function (a helper of
// templates/helpers.cu or a CUDA math function).
UnaryCuda call(const char* function) {
  return [function](const std::string& x, const Attrs&) { return std::string(function) + "(" + x + ")"; };
}

std::string float_attr_text(const Attrs& attrs, const char* name) {
  const AttrValue& v = attrs.at(name);
  if (const auto* i = std::get_if<int64_t>(&v))
    return ops::cuda_float(static_cast<double>(*i));
  return ops::cuda_float(std::get<double>(v));
}

// Bound of clamp: a literal, or infinity when absent (None).
std::string bound_text(const Attrs& attrs, const char* name, bool upper) {
  if (std::holds_alternative<NoneAttr>(attrs.at(name)))
    return ops::cuda_float(upper ? INFINITY : -INFINITY);
  return float_attr_text(attrs, name);
}

void add_unary(OpRegistry& registry, UnaryOp unary) {
  std::vector<ParamSpec> params = {ops::tensor("input")};
  params.insert(params.end(), unary.attrs.begin(), unary.attrs.end());
  AttrCheck check = std::move(unary.check);
  UnaryMaker make = std::move(unary.make);
  UnaryCuda cuda = std::move(unary.cuda);
  registry.add({
      .name = std::move(unary.name),
      .kind = OpKind::Pointwise,
      .params = std::move(params),
      .infer = [check](ShapeContext& ctx) -> std::optional<TensorType> {
        if (check && !check(ctx))
          return std::nullopt;
        return *ctx.tensor("input");
      },
      .reference =
          [make](ReferenceContext& ctx) {
            UnaryFn fn = make(ctx);
            const HostTensor& in = *ctx.tensor("input");
            std::transform(in.data.begin(), in.data.end(), ctx.out.data.begin(), fn);
          },
      .mutates = {},
      .cuda = [cuda](const std::vector<std::string>& x, const Attrs& attrs) { return cuda(x[0], attrs); },
  });
}

// A unary op without attributes.
UnaryMaker plain(double (*fn)(double)) {
  return [fn](const ReferenceContext&) { return UnaryFn(fn); };
}

ParamSpec float_attr(std::string name, double default_value) {
  return attr(std::move(name), ParamKind::Float, default_value);
}

// torch.clamp: min(max(x, lo), hi), so hi wins when lo > hi; NaN stays NaN.
double clamp(double x, std::optional<double> lo, std::optional<double> hi) {
  if (std::isnan(x))
    return x;
  if (lo)
    x = std::max(x, *lo);
  if (hi)
    x = std::min(x, *hi);
  return x;
}

double sigmoid(double x) {
  // Written so that exp never overflows.
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

// log(1 + exp(x)) without overflow for large x.
double stable_softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))); }

double relu6(double x) { return clamp(x, 0.0, 6.0); }

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x * std::numbers::sqrt2 / 2.0)); }

double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

bool check_clamp(ShapeContext& ctx) {
  if (ctx.has("min") || ctx.has("max"))
    return true;
  ctx.error("at least one of min and max must be given");
  return false;
}

bool check_gelu(ShapeContext& ctx) {
  const std::string& approximate = ctx.get_string("approximate");
  if (approximate == "none" || approximate == "tanh")
    return true;
  ctx.error("approximate", "approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  return false;
}

void register_unary_ops(OpRegistry& registry) {
  const AttrValue none = NoneAttr{};
  std::vector<UnaryOp> table = {
      {"clamp",
       {attr("min", ParamKind::OptionalFloat, none), attr("max", ParamKind::OptionalFloat, none)},
       [](const ReferenceContext& ctx) -> UnaryFn {
         std::optional<double> lo = ctx.get_optional_float("min");
         std::optional<double> hi = ctx.get_optional_float("max");
         return [lo, hi](double x) { return clamp(x, lo, hi); };
       },
       [](const std::string& x, const Attrs& a) {
         return "fusegen_clamp(" + x + ", " + bound_text(a, "min", false) + ", " + bound_text(a, "max", true) + ")";
       },
       check_clamp},
      // NaN > 0 is false, so test for NaN to keep relu(NaN) = NaN as torch does.
      {"relu", {}, plain([](double x) { return std::isnan(x) || x > 0 ? x : 0.0; }), call("fusegen_relu")},
      {"leaky_relu", {float_attr("negative_slope", 0.01)},
       [](const ReferenceContext& ctx) -> UnaryFn {
         double slope = ctx.get_float("negative_slope");
         return [slope](double x) { return x > 0 ? x : x * slope; };
       },
       [](const std::string& x, const Attrs& a) {
         return "fusegen_leaky_relu(" + x + ", " + float_attr_text(a, "negative_slope") + ")";
       }},
      {"gelu", {attr("approximate", ParamKind::String, std::string("none"))},
       [](const ReferenceContext& ctx) -> UnaryFn {
         return ctx.get_string("approximate") == "tanh" ? gelu_tanh : gelu_erf;
       },
       [](const std::string& x, const Attrs& a) {
         return std::string(std::get<std::string>(a.at("approximate")) == "tanh" ? "fusegen_gelu_tanh("
                                                                                  : "fusegen_gelu(") +
                x + ")";
       },
       check_gelu},
      {"sigmoid", {}, plain(sigmoid), call("fusegen_sigmoid")},
      {"tanh", {}, plain([](double x) { return std::tanh(x); }), call("tanhf")},
      {"silu", {}, plain([](double x) { return x * sigmoid(x); }), call("fusegen_silu")},
      {"mish", {}, plain([](double x) { return x * std::tanh(stable_softplus(x)); }), call("fusegen_mish")},
      {"softplus", {float_attr("beta", 1.0), float_attr("threshold", 20.0)},
       [](const ReferenceContext& ctx) -> UnaryFn {
         double beta = ctx.get_float("beta"), threshold = ctx.get_float("threshold");
         // torch reverts to the identity above the threshold.
         return [beta, threshold](double x) {
           return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
         };
       },
       [](const std::string& x, const Attrs& a) {
         return "fusegen_softplus(" + x + ", " + float_attr_text(a, "beta") + ", " +
                float_attr_text(a, "threshold") + ")";
       }},
      {"hardswish", {}, plain([](double x) { return x * relu6(x + 3.0) / 6.0; }), call("fusegen_hardswish")},
      {"hardsigmoid", {}, plain([](double x) { return relu6(x + 3.0) / 6.0; }), call("fusegen_hardsigmoid")},
      {"hardtanh", {float_attr("min_val", -1.0), float_attr("max_val", 1.0)},
       [](const ReferenceContext& ctx) -> UnaryFn {
         double lo = ctx.get_float("min_val"), hi = ctx.get_float("max_val");
         return [lo, hi](double x) { return clamp(x, lo, hi); };
       },
       [](const std::string& x, const Attrs& a) {
         return "fusegen_clamp(" + x + ", " + float_attr_text(a, "min_val") + ", " +
                float_attr_text(a, "max_val") + ")";
       }},
      {"elu", {float_attr("alpha", 1.0)},
       [](const ReferenceContext& ctx) -> UnaryFn {
         double alpha = ctx.get_float("alpha");
         return [alpha](double x) { return x > 0 ? x : alpha * std::expm1(x); };
       },
       [](const std::string& x, const Attrs& a) {
         return "fusegen_elu(" + x + ", " + float_attr_text(a, "alpha") + ")";
       }},
      {"exp", {}, plain([](double x) { return std::exp(x); }), call("expf")},
      {"log", {}, plain([](double x) { return std::log(x); }), call("logf")},
      {"sqrt", {}, plain([](double x) { return std::sqrt(x); }), call("sqrtf")},
      {"rsqrt", {}, plain([](double x) { return 1.0 / std::sqrt(x); }), call("fusegen_rsqrt")},
      {"abs", {}, plain([](double x) { return std::abs(x); }), call("fabsf")},
      {"neg", {}, plain([](double x) { return -x; }), [](const std::string& x, const Attrs&) { return "(-" + x + ")"; }},
  };
  for (UnaryOp& unary : table)
    add_unary(registry, std::move(unary));
}

} // namespace

void register_pointwise_ops(OpRegistry& registry) {
  add_binary(registry, "add", [](double a, double b) { return a + b; }, {"+", true});
  add_binary(registry, "sub", [](double a, double b) { return a - b; }, {"-", true});
  add_binary(registry, "mul", [](double a, double b) { return a * b; }, {"*", true});
  // True division; CUDA's float '/' is IEEE-rounded unless fast-math.
  add_binary(registry, "div", [](double a, double b) { return a / b; }, {"/", true});
  add_binary(registry, "maximum", nan_max, {"fusegen_maximum", false});
  add_binary(registry, "minimum", nan_min, {"fusegen_minimum", false});
  register_unary_ops(registry);
}

} // namespace fusegen
