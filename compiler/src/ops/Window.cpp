// Window ops over the last two (H, W) dims of [N, C, H, W] or [C, H, W]
// inputs: max_pool2d, avg_pool2d (torch defaults: ceil_mode=False,
// count_include_pad=True) and adaptive_avg_pool2d.
#include "ops/OpHelpers.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fusegen {
namespace {

using ops::attr;
using ops::tensor;

bool check_image_input(ShapeContext& ctx, const TensorType& x) {
  if (x.rank() == 3 || x.rank() == 4)
    return true;
  ctx.error("input", "expected a 3-d [C, H, W] or 4-d [N, C, H, W] input but got " +
                         shape_str(x.shape));
  return false;
}

bool all_positive(const std::vector<int64_t>& pair) { return pair[0] > 0 && pair[1] > 0; }

// The input's leading dims (N, C or just C) followed by `spatial`.
TensorType with_spatial(ShapeContext& ctx, const TensorType& x,
                        const std::vector<int64_t>& spatial) {
  Shape out(x.shape.begin(), x.shape.end() - 2);
  for (int64_t d : spatial)
    out.push_back(Dim::constant(d));
  return TensorType{DType::F32, ops::resolve_shape(ctx, out)};
}

// ---- max_pool2d / avg_pool2d ----

struct PoolParams {
  std::vector<int64_t> kernel, stride, padding;
};

std::optional<PoolParams> pool_params(ShapeContext& ctx) {
  auto kernel = ops::spatial_pair_attr(ctx, "kernel_size");
  if (!kernel)
    return std::nullopt;
  if (!all_positive(*kernel))
    return ctx.error("kernel_size",
                     "kernel_size must be positive but got " + ops::pair_str(*kernel));
  // torch: a missing (None or empty) stride means stride = kernel_size.
  std::optional<std::vector<int64_t>> stride = kernel;
  if (ctx.has("stride") && !ctx.get_ints("stride").empty())
    stride = ops::spatial_pair_attr(ctx, "stride");
  else
    ctx.set_attr("stride", *kernel);
  if (!stride)
    return std::nullopt;
  if (!all_positive(*stride))
    return ctx.error("stride", "stride must be positive but got " + ops::pair_str(*stride));
  auto padding = ops::spatial_pair_attr(ctx, "padding");
  if (!padding)
    return std::nullopt;
  if (std::min((*padding)[0], (*padding)[1]) < 0)
    return ctx.error("padding", "padding must be non-negative but got " + ops::pair_str(*padding));
  if ((*padding)[0] > (*kernel)[0] / 2 || (*padding)[1] > (*kernel)[1] / 2)
    return ctx.error("padding", "pad should be at most half of effective kernel size, but got "
                                "padding " + ops::pair_str(*padding) + " and kernel_size " +
                                    ops::pair_str(*kernel));
  return PoolParams{*kernel, *stride, *padding};
}

std::optional<TensorType> infer_pool2d(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  if (!check_image_input(ctx, x))
    return std::nullopt;
  auto params = pool_params(ctx);
  if (!params)
    return std::nullopt;
  std::vector<int64_t> padded(2), out(2);
  for (size_t i = 0; i < 2; ++i) {
    Dim d = ctx.resolve(x.shape[x.rank() - 2 + i]);
    if (d.is_symbol())
      return ctx.error("input", "spatial dims must be constants (" + d.name() +
                                    " is symbolic in input " + shape_str(x.shape) + ")");
    padded[i] = d.value() + 2 * params->padding[i];
  }
  if (params->kernel[0] > padded[0] || params->kernel[1] > padded[1])
    return ctx.error("input", "pooling window " + ops::pair_str(params->kernel) +
                                  " is larger than the padded input " + ops::pair_str(padded));
  for (size_t i = 0; i < 2; ++i)
    out[i] = (padded[i] - params->kernel[i]) / params->stride[i] + 1; // ceil_mode=False
  return with_spatial(ctx, x, out);
}

struct PoolGeometry {
  int64_t planes, height, width, out_height, out_width;
  std::vector<int64_t> kernel, stride, padding;
};

PoolGeometry pool_geometry(const ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  PoolGeometry g;
  g.height = x.dim(-2);
  g.width = x.dim(-1);
  g.planes = x.dim(-3) * (x.rank() == 4 ? x.dim(0) : 1);
  g.out_height = ctx.out.dim(-2);
  g.out_width = ctx.out.dim(-1);
  g.kernel = ops::spatial_pair(ctx.get_ints("kernel_size"));
  // Canonical attrs always hold a stride; None (or empty) means kernel_size.
  auto it = ctx.attrs.find("stride");
  bool no_stride = it == ctx.attrs.end() || std::holds_alternative<NoneAttr>(it->second);
  std::vector<int64_t> stride = no_stride ? std::vector<int64_t>{} : ctx.get_ints("stride");
  g.stride = stride.empty() ? g.kernel : ops::spatial_pair(stride);
  g.padding = ops::spatial_pair(ctx.get_ints("padding"));
  return g;
}

// Window [begin, end) along one dim before clipping to the input.
struct Span {
  int64_t begin, end;
};

// Calls fn(plane, rows, cols) for every output element, in output order, with
// its window in padded-input coordinates (not yet clipped to the input).
template <typename Fn>
void for_each_window(const PoolGeometry& g, Fn fn) {
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.out_height; ++oh)
      for (int64_t ow = 0; ow < g.out_width; ++ow) {
        Span rows{oh * g.stride[0] - g.padding[0], 0}, cols{ow * g.stride[1] - g.padding[1], 0};
        rows.end = rows.begin + g.kernel[0];
        cols.end = cols.begin + g.kernel[1];
        fn(p, rows, cols);
      }
}

Span clip(Span s, int64_t size) { return {std::max<int64_t>(s.begin, 0), std::min(s.end, size)}; }

void max_pool2d_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  PoolGeometry g = pool_geometry(ctx);
  double* out = ctx.out.data.data();
  for_each_window(g, [&](int64_t p, Span rows, Span cols) {
    rows = clip(rows, g.height);
    cols = clip(cols, g.width);
    const double* plane = x.data.data() + p * g.height * g.width;
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t h = rows.begin; h < rows.end; ++h)
      for (int64_t w = cols.begin; w < cols.end; ++w) {
        double v = plane[h * g.width + w];
        if (v > best || std::isnan(v)) // torch propagates NaN
          best = v;
      }
    *out++ = best;
  });
}

void avg_pool2d_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  PoolGeometry g = pool_geometry(ctx);
  double* out = ctx.out.data.data();
  for_each_window(g, [&](int64_t p, Span rows, Span cols) {
    // count_include_pad=True: the divisor counts padding taps (as torch, the
    // window is first clipped to the padded input).
    rows.end = std::min(rows.end, g.height + g.padding[0]);
    cols.end = std::min(cols.end, g.width + g.padding[1]);
    int64_t divisor = (rows.end - rows.begin) * (cols.end - cols.begin);
    rows = clip(rows, g.height);
    cols = clip(cols, g.width);
    const double* plane = x.data.data() + p * g.height * g.width;
    double sum = 0.0;
    for (int64_t h = rows.begin; h < rows.end; ++h)
      for (int64_t w = cols.begin; w < cols.end; ++w)
        sum += plane[h * g.width + w];
    *out++ = sum / static_cast<double>(divisor);
  });
}

// ---- adaptive_avg_pool2d ----

// The output size does not depend on H and W, so they may stay symbolic.
std::optional<TensorType> infer_adaptive_avg_pool2d(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  if (!check_image_input(ctx, x))
    return std::nullopt;
  auto size = ops::spatial_pair_attr(ctx, "output_size");
  if (!size)
    return std::nullopt;
  if (!all_positive(*size))
    return ctx.error("output_size", "output_size must be positive but got " + ops::pair_str(*size));
  for (size_t i = x.rank() - 2; i < x.rank(); ++i)
    if (ctx.resolve(x.shape[i]) == Dim::constant(0))
      return ctx.error("input",
                       "expected non-empty spatial dims but got input " + shape_str(x.shape));
  return with_spatial(ctx, x, *size);
}

// torch's bins: output i averages [floor(i*in/out), ceil((i+1)*in/out)).
Span adaptive_bin(int64_t i, int64_t in, int64_t out) {
  return {i * in / out, ((i + 1) * in + out - 1) / out};
}

void adaptive_avg_pool2d_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  int64_t height = x.dim(-2), width = x.dim(-1);
  int64_t out_height = ctx.out.dim(-2), out_width = ctx.out.dim(-1);
  int64_t planes = height * width == 0 ? 0 : x.numel() / (height * width);
  double* out = ctx.out.data.data();
  for (int64_t p = 0; p < planes; ++p) {
    const double* plane = x.data.data() + p * height * width;
    for (int64_t oh = 0; oh < out_height; ++oh)
      for (int64_t ow = 0; ow < out_width; ++ow) {
        Span rows = adaptive_bin(oh, height, out_height), cols = adaptive_bin(ow, width, out_width);
        double sum = 0.0;
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t w = cols.begin; w < cols.end; ++w)
            sum += plane[h * width + w];
        *out++ = sum / static_cast<double>((rows.end - rows.begin) * (cols.end - cols.begin));
      }
  }
}

std::vector<ParamSpec> pool_params_spec() {
  return {tensor("input"), attr("kernel_size", ParamKind::Ints),
          attr("stride", ParamKind::OptionalInts, NoneAttr{}),
          attr("padding", ParamKind::Ints, int64_t{0})};
}

} // namespace

void register_window_ops(OpRegistry& registry) {
  registry.add({
      .name = "max_pool2d",
      .kind = OpKind::Window,
      .params = pool_params_spec(),
      .infer = infer_pool2d,
      .reference = max_pool2d_reference,
      .mutates = {},
      .traits = {.window = WindowCombine::Max, .spatial_dims = 2},
  });
  registry.add({
      .name = "avg_pool2d",
      .kind = OpKind::Window,
      .params = pool_params_spec(),
      .infer = infer_pool2d,
      .reference = avg_pool2d_reference,
      .mutates = {},
      .traits = {.window = WindowCombine::Average, .spatial_dims = 2},
  });
  registry.add({
      .name = "adaptive_avg_pool2d",
      .kind = OpKind::Window,
      .params = {tensor("input"), attr("output_size", ParamKind::Ints, int64_t{1})},
      .infer = infer_adaptive_avg_pool2d,
      .reference = adaptive_avg_pool2d_reference,
      .mutates = {},
      .traits = {.window = WindowCombine::Average, .adaptive_window = true, .spatial_dims = 2},
  });
}

} // namespace fusegen
