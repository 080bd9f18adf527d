// Window ops over the last 1, 2 or 3 spatial dims of [N, C, spatial...] or
// [C, spatial...] inputs: max_pool1d/2d/3d, avg_pool1d/2d/3d and the adaptive
// max and avg pools, with torch.nn.functional's arguments and defaults. One
// reference serves every N: inputs are viewed as 3-d (D, H, W) with leading
// spatial dims of size 1.
#include "ops/OpHelpers.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fusegen {
namespace {

using ops::attr;
using ops::tensor;

size_t spatial_dims(const ShapeContext& ctx) { return static_cast<size_t>(ctx.op().traits.spatial_dims); }

bool check_input(ShapeContext& ctx, const TensorType& x, size_t n) {
  if (x.rank() == n + 1 || x.rank() == n + 2)
    return true;
  const std::string names = ops::spatial_names(n);
  ctx.error("input", "expected a " + std::to_string(n + 1) + "-d [C, " + names + "] or " + std::to_string(n + 2) +
                         "-d [N, C, " + names + "] input but got " + shape_str(x.shape));
  return false;
}

bool all_positive(const std::vector<int64_t>& values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v > 0; });
}

// ---- max_pool / avg_pool ----

struct PoolParams {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

std::optional<PoolParams> pool_params(ShapeContext& ctx, size_t n) {
  auto kernel = ops::spatial_attr(ctx, "kernel_size", n);
  if (!kernel)
    return std::nullopt;
  if (!all_positive(*kernel))
    return ctx.error("kernel_size", "kernel_size must be positive but got " + ops::pair_str(*kernel));
  // torch: a missing (None or empty) stride means stride = kernel_size.
  std::optional<std::vector<int64_t>> stride = kernel;
  if (ctx.has("stride") && !ctx.get_ints("stride").empty())
    stride = ops::spatial_attr(ctx, "stride", n);
  else
    ctx.set_attr("stride", *kernel);
  if (!stride)
    return std::nullopt;
  if (!all_positive(*stride))
    return ctx.error("stride", "stride must be positive but got " + ops::pair_str(*stride));
  auto padding = ops::spatial_attr(ctx, "padding", n);
  if (!padding)
    return std::nullopt;
  if (std::any_of(padding->begin(), padding->end(), [](int64_t v) { return v < 0; }))
    return ctx.error("padding", "padding must be non-negative but got " + ops::pair_str(*padding));
  std::vector<int64_t> dilation(n, 1);
  if (ctx.op().param("dilation")) { // max pools only
    auto given = ops::spatial_attr(ctx, "dilation", n);
    if (!given)
      return std::nullopt;
    if (!all_positive(*given))
      return ctx.error("dilation", "dilation must be positive but got " + ops::pair_str(*given));
    dilation = *given;
  }
  for (size_t i = 0; i < n; ++i)
    if ((*padding)[i] > (*kernel)[i] / 2)
      return ctx.error("padding", "pad should be at most half of effective kernel size, but got padding " +
                                      ops::pair_str(*padding) + " and kernel_size " + ops::pair_str(*kernel));
  if (ctx.op().param("divisor_override") && ctx.has("divisor_override")) {
    std::vector<int64_t> divisor = ctx.get_ints("divisor_override");
    if (divisor.size() != 1 || divisor[0] == 0)
      return ctx.error("divisor_override", "divisor_override must be a non-zero int or None");
    ctx.set_attr("divisor_override", divisor[0]);
  }
  return PoolParams{*kernel, *stride, *padding, dilation, ctx.get_bool("ceil_mode")};
}

// torch's pooling_output_shape: with ceil_mode the last window may hang over
// the right edge, but must start inside the input or its left padding.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode) {
  const int64_t numerator = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Floor division (the numerator may be negative for a too-small input).
  int64_t out = (numerator >= 0 ? numerator / stride : -((-numerator + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad)
    --out;
  return out;
}

std::optional<TensorType> infer_pool(ShapeContext& ctx) {
  const size_t n = spatial_dims(ctx);
  const TensorType& x = *ctx.tensor("input");
  if (!check_input(ctx, x, n))
    return std::nullopt;
  auto p = pool_params(ctx, n);
  if (!p)
    return std::nullopt;
  Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(n));
  std::vector<int64_t> window(n), padded(n);
  bool fits = true;
  for (size_t i = 0; i < n; ++i) {
    Dim d = ctx.resolve(x.shape[x.rank() - n + i]);
    window[i] = p->dilation[i] * (p->kernel[i] - 1) + 1;
    if (d.is_symbol()) {
      // A size-preserving window (stride 1, padding covering the window) keeps
      // a symbolic dim; other sizes need constants.
      if (p->stride[i] != 1 || 2 * p->padding[i] != window[i] - 1)
        return ctx.error("input", "spatial dims must be constants (" + d.name() + " is symbolic in input " +
                                      shape_str(x.shape) + ")");
      out.push_back(d);
      continue;
    }
    padded[i] = d.value() + 2 * p->padding[i];
    fits = fits && window[i] <= padded[i];
    out.push_back(
        Dim::constant(pooled_size(d.value(), p->kernel[i], p->stride[i], p->padding[i], p->dilation[i], p->ceil_mode)));
  }
  if (!fits) {
    std::string text = "pooling window " + ops::pair_str(p->kernel);
    if (window != p->kernel)
      text += " (dilated to " + ops::pair_str(window) + ")";
    return ctx.error("input", text + " is larger than the padded input " + ops::pair_str(padded));
  }
  return TensorType{DType::F32, ops::resolve_shape(ctx, out)};
}

// Every size as 3 spatial dims (D, H, W); missing leading ones are 1.
struct PoolGeometry {
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
};

std::vector<int64_t> ints_or(const ReferenceContext& ctx, const std::string& name, std::vector<int64_t> fallback,
                             size_t n) {
  auto it = ctx.attrs.find(name);
  if (it == ctx.attrs.end() || std::holds_alternative<NoneAttr>(it->second))
    return fallback;
  std::vector<int64_t> values = ctx.get_ints(name);
  return values.empty() ? fallback : ops::spatial_values(values, n);
}

PoolGeometry pool_geometry(const ReferenceContext& ctx, bool adaptive) {
  const HostTensor& x = *ctx.tensor("input");
  const auto n = static_cast<size_t>(ctx.op.traits.spatial_dims);
  PoolGeometry g;
  std::vector<int64_t> kernel, stride, padding, dilation;
  if (!adaptive) {
    kernel = ops::spatial_values(ctx.get_ints("kernel_size"), n);
    stride = ints_or(ctx, "stride", kernel, n); // None or empty means kernel_size
    padding = ints_or(ctx, "padding", std::vector<int64_t>(n, 0), n);
    dilation = ints_or(ctx, "dilation", std::vector<int64_t>(n, 1), n);
  }
  int64_t plane = 1;
  for (size_t i = 0; i < n; ++i) {
    const size_t d = 3 - n + i;
    const auto from_end = static_cast<int64_t>(i) - static_cast<int64_t>(n);
    g.in[d] = x.dim(from_end);
    g.out[d] = ctx.out.dim(from_end);
    plane *= g.in[d];
    if (!adaptive) {
      g.kernel[d] = kernel[i];
      g.stride[d] = stride[i];
      g.pad[d] = padding[i];
      g.dilation[d] = dilation[i];
    }
  }
  g.planes = plane == 0 ? 0 : x.numel() / plane;
  return g;
}

// Window [begin, end) along one dim (dilated windows step by `step`).
struct Span {
  int64_t begin, end, step = 1;
};

void max_pool_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const PoolGeometry g = pool_geometry(ctx, false);
  double* out = ctx.out.data.data();
  for (int64_t p = 0; p < g.planes; ++p) {
    const double* plane = x.data.data() + p * g.in_plane();
    int64_t o[3];
    for (o[0] = 0; o[0] < g.out[0]; ++o[0])
      for (o[1] = 0; o[1] < g.out[1]; ++o[1])
        for (o[2] = 0; o[2] < g.out[2]; ++o[2]) {
          double best = -std::numeric_limits<double>::infinity();
          int64_t start[3];
          for (int d = 0; d < 3; ++d)
            start[d] = o[d] * g.stride[d] - g.pad[d];
          int64_t t[3];
          for (t[0] = 0; t[0] < g.kernel[0]; ++t[0])
            for (t[1] = 0; t[1] < g.kernel[1]; ++t[1])
              for (t[2] = 0; t[2] < g.kernel[2]; ++t[2]) {
                int64_t i[3];
                bool inside = true;
                for (int d = 0; d < 3; ++d) {
                  i[d] = start[d] + t[d] * g.dilation[d];
                  inside = inside && i[d] >= 0 && i[d] < g.in[d];
                }
                if (!inside)
                  continue; // padding: -inf for max
                double v = plane[(i[0] * g.in[1] + i[1]) * g.in[2] + i[2]];
                if (v > best || std::isnan(v)) // torch propagates NaN
                  best = v;
              }
          *out++ = best;
        }
  }
}

void avg_pool_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const PoolGeometry g = pool_geometry(ctx, false);
  const bool count_include_pad = ctx.get_bool("count_include_pad");
  auto it = ctx.attrs.find("divisor_override");
  const bool overridden = it != ctx.attrs.end() && !std::holds_alternative<NoneAttr>(it->second);
  const double divisor_override = overridden ? static_cast<double>(ctx.get_ints("divisor_override").front()) : 0.0;
  double* out = ctx.out.data.data();
  for (int64_t p = 0; p < g.planes; ++p) {
    const double* plane = x.data.data() + p * g.in_plane();
    int64_t o[3];
    for (o[0] = 0; o[0] < g.out[0]; ++o[0])
      for (o[1] = 0; o[1] < g.out[1]; ++o[1])
        for (o[2] = 0; o[2] < g.out[2]; ++o[2]) {
          // As torch: the window is clipped to the padded input (which counts
          // in the divisor when count_include_pad), then to the input.
          Span s[3];
          int64_t padded_count = 1, count = 1;
          for (int d = 0; d < 3; ++d) {
            const int64_t begin = o[d] * g.stride[d] - g.pad[d];
            const int64_t end = std::min(begin + g.kernel[d], g.in[d] + g.pad[d]);
            padded_count *= end - begin;
            s[d] = {std::max<int64_t>(begin, 0), std::min(end, g.in[d])};
            count *= std::max<int64_t>(s[d].end - s[d].begin, 0);
          }
          double sum = 0.0;
          for (int64_t a = s[0].begin; a < s[0].end; ++a)
            for (int64_t b = s[1].begin; b < s[1].end; ++b)
              for (int64_t c = s[2].begin; c < s[2].end; ++c)
                sum += plane[(a * g.in[1] + b) * g.in[2] + c];
          const double divisor = overridden          ? divisor_override
                                 : count_include_pad ? static_cast<double>(padded_count)
                                                     : static_cast<double>(count);
          *out++ = sum / divisor;
        }
  }
}

// ---- adaptive pools ----

// The output size does not depend on the spatial dims, so they may stay symbolic.
std::optional<TensorType> infer_adaptive_pool(ShapeContext& ctx) {
  const size_t n = spatial_dims(ctx);
  const TensorType& x = *ctx.tensor("input");
  if (!check_input(ctx, x, n))
    return std::nullopt;
  auto size = ops::spatial_attr(ctx, "output_size", n);
  if (!size)
    return std::nullopt;
  if (!all_positive(*size))
    return ctx.error("output_size", "output_size must be positive but got " + ops::pair_str(*size));
  for (size_t i = x.rank() - n; i < x.rank(); ++i)
    if (ctx.resolve(x.shape[i]) == Dim::constant(0))
      return ctx.error("input", "expected non-empty spatial dims but got input " + shape_str(x.shape));
  Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(n));
  for (int64_t d : *size)
    out.push_back(Dim::constant(d));
  return TensorType{DType::F32, ops::resolve_shape(ctx, out)};
}

// torch's bins: output i covers [floor(i*in/out), ceil((i+1)*in/out)).
Span adaptive_bin(int64_t i, int64_t in, int64_t out) { return {i * in / out, ((i + 1) * in + out - 1) / out}; }

template <bool kMax> void adaptive_pool_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const PoolGeometry g = pool_geometry(ctx, true);
  double* out = ctx.out.data.data();
  for (int64_t p = 0; p < g.planes; ++p) {
    const double* plane = x.data.data() + p * g.in_plane();
    int64_t o[3];
    for (o[0] = 0; o[0] < g.out[0]; ++o[0])
      for (o[1] = 0; o[1] < g.out[1]; ++o[1])
        for (o[2] = 0; o[2] < g.out[2]; ++o[2]) {
          Span s[3];
          for (int d = 0; d < 3; ++d)
            s[d] = adaptive_bin(o[d], g.in[d], g.out[d]);
          double acc = kMax ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t a = s[0].begin; a < s[0].end; ++a)
            for (int64_t b = s[1].begin; b < s[1].end; ++b)
              for (int64_t c = s[2].begin; c < s[2].end; ++c) {
                const double v = plane[(a * g.in[1] + b) * g.in[2] + c];
                if constexpr (kMax) {
                  if (v > acc || std::isnan(v)) // torch propagates NaN
                    acc = v;
                } else {
                  acc += v;
                }
              }
          if constexpr (!kMax)
            acc /= static_cast<double>((s[0].end - s[0].begin) * (s[1].end - s[1].begin) * (s[2].end - s[2].begin));
          *out++ = acc;
        }
  }
}

// torch.nn.functional's signatures (return_indices is not supported).
std::vector<ParamSpec> max_pool_spec() {
  return {tensor("input"),
          attr("kernel_size", ParamKind::Ints),
          attr("stride", ParamKind::OptionalInts, NoneAttr{}),
          attr("padding", ParamKind::Ints, int64_t{0}),
          attr("dilation", ParamKind::Ints, int64_t{1}),
          attr("ceil_mode", ParamKind::Bool, false)};
}

std::vector<ParamSpec> avg_pool_spec() {
  return {tensor("input"),
          attr("kernel_size", ParamKind::Ints),
          attr("stride", ParamKind::OptionalInts, NoneAttr{}),
          attr("padding", ParamKind::Ints, int64_t{0}),
          attr("ceil_mode", ParamKind::Bool, false),
          attr("count_include_pad", ParamKind::Bool, true),
          attr("divisor_override", ParamKind::OptionalInts, NoneAttr{})};
}

} // namespace

void register_window_ops(OpRegistry& registry) {
  for (int n = 1; n <= 3; ++n) {
    const std::string d = std::to_string(n) + "d";
    registry.add({
        .name = "max_pool" + d,
        .kind = OpKind::Window,
        .params = max_pool_spec(),
        .infer = infer_pool,
        .reference = max_pool_reference,
        .mutates = {},
        .traits = {.window = WindowCombine::Max, .spatial_dims = n},
    });
    registry.add({
        .name = "avg_pool" + d,
        .kind = OpKind::Window,
        .params = avg_pool_spec(),
        .infer = infer_pool,
        .reference = avg_pool_reference,
        .mutates = {},
        .traits = {.window = WindowCombine::Average, .spatial_dims = n},
    });
    registry.add({
        .name = "adaptive_avg_pool" + d,
        .kind = OpKind::Window,
        .params = {tensor("input"), attr("output_size", ParamKind::Ints, int64_t{1})},
        .infer = infer_adaptive_pool,
        .reference = adaptive_pool_reference<false>,
        .mutates = {},
        .traits = {.window = WindowCombine::Average, .adaptive_window = true, .spatial_dims = n},
    });
    registry.add({
        .name = "adaptive_max_pool" + d,
        .kind = OpKind::Window,
        .params = {tensor("input"), attr("output_size", ParamKind::Ints)},
        .infer = infer_adaptive_pool,
        .reference = adaptive_pool_reference<true>,
        .mutates = {},
        .traits = {.window = WindowCombine::Max, .adaptive_window = true, .spatial_dims = n},
    });
  }
}

} // namespace fusegen
