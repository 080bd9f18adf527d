// Convolutions over 1, 2 or 3 trailing spatial dims: conv1d/2d/3d and
// conv_transpose1d/2d/3d, with torch.nn.functional's arguments and checks.
// One reference serves every N: inputs are viewed as 3-d (D, H, W) with
// leading spatial dims of size 1.
#include "ops/OpHelpers.h"

#include <algorithm>

namespace fusegen {
namespace {

using ops::attr;
using ops::optional_tensor;
using ops::tensor;

size_t spatial_dims(const ShapeContext& ctx) { return static_cast<size_t>(ctx.op().traits.spatial_dims); }

std::string kernel_names(size_t n) { return n == 1 ? "kw" : n == 2 ? "kh, kw" : "kd, kh, kw"; }

struct ConvParams {
  std::vector<int64_t> stride, dilation, output_padding;
  // Per dim, the padding before and after the input ("same" may differ by one).
  std::vector<int64_t> pad_before, pad_after;
  int64_t groups = 1;
};

bool all_positive(const std::vector<int64_t>& values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v > 0; });
}

// torch's padding="same": total dilation * (k - 1), the odd one on the right.
void same_padding(const std::vector<int64_t>& kernel, ConvParams& p) {
  for (size_t i = 0; i < kernel.size(); ++i) {
    int64_t total = p.dilation[i] * (kernel[i] - 1);
    p.pad_before[i] = total / 2;
    p.pad_after[i] = total - total / 2;
  }
}

// Reads padding (ints, or for forward convolutions "same"/"valid"). A
// symmetric "same" and "valid" are stored back as ints, so a program prints
// alike whichever way it was written; an asymmetric "same" stays a string.
bool read_padding(ShapeContext& ctx, const std::vector<int64_t>& kernel, ConvParams& p) {
  size_t n = kernel.size();
  p.pad_before.assign(n, 0);
  p.pad_after.assign(n, 0);
  auto it = ctx.attrs().find("padding");
  if (it != ctx.attrs().end() && std::holds_alternative<std::string>(it->second)) {
    std::string mode = std::get<std::string>(it->second);
    if (mode == "valid") {
      ctx.set_attr("padding", std::vector<int64_t>(n, 0));
      return true;
    }
    if (mode != "same") {
      ctx.error("padding", "padding must be \"same\", \"valid\", an int or a tuple of ints but got \"" + mode + "\"");
      return false;
    }
    if (!std::all_of(p.stride.begin(), p.stride.end(), [](int64_t s) { return s == 1; })) {
      ctx.error("padding",
                "padding=\"same\" is not supported for strided convolutions (stride " + ops::pair_str(p.stride) + ")");
      return false;
    }
    same_padding(kernel, p);
    if (p.pad_before == p.pad_after)
      ctx.set_attr("padding", p.pad_before);
    return true;
  }
  auto padding = ops::spatial_attr(ctx, "padding", n);
  if (!padding)
    return false;
  if (std::any_of(padding->begin(), padding->end(), [](int64_t v) { return v < 0; })) {
    ctx.error("padding", "padding must be non-negative but got " + ops::pair_str(*padding));
    return false;
  }
  p.pad_before = p.pad_after = *padding;
  return true;
}

std::optional<ConvParams> conv_params(ShapeContext& ctx, size_t n, bool transposed) {
  auto stride = ops::spatial_attr(ctx, "stride", n);
  auto dilation = ops::spatial_attr(ctx, "dilation", n);
  if (!stride || !dilation)
    return std::nullopt;
  if (!all_positive(*stride))
    return ctx.error("stride", "stride must be positive but got " + ops::pair_str(*stride));
  if (!all_positive(*dilation))
    return ctx.error("dilation", "dilation must be positive but got " + ops::pair_str(*dilation));
  ConvParams p{*stride, *dilation, std::vector<int64_t>(n, 0), {}, {}, ctx.get_int("groups")};
  if (transposed) {
    auto output_padding = ops::spatial_attr(ctx, "output_padding", n);
    if (!output_padding)
      return std::nullopt;
    for (size_t i = 0; i < n; ++i)
      if ((*output_padding)[i] < 0 || ((*output_padding)[i] >= p.stride[i] && (*output_padding)[i] >= p.dilation[i]))
        return ctx.error("output_padding", "output_padding must be non-negative and smaller than either stride or "
                                           "dilation, but got output_padding " +
                                               ops::pair_str(*output_padding) + ", stride " + ops::pair_str(p.stride) +
                                               " and dilation " + ops::pair_str(p.dilation));
    p.output_padding = *output_padding;
  }
  if (p.groups <= 0)
    return ctx.error("groups", "groups must be positive but got " + std::to_string(p.groups));
  return p;
}

bool divides(ShapeContext& ctx, int64_t groups, const Dim& channels, const std::string& what) {
  if (!channels.is_constant() || channels.value() % groups == 0)
    return true;
  ctx.error("groups", "groups " + std::to_string(groups) + " does not divide the " + channels.str() + " " + what);
  return false;
}

// Forward: in_channels = weight.shape[1] * groups, groups divides both
// channel counts. Transposed: in_channels = weight.shape[0], groups divides it,
// out_channels = weight.shape[1] * groups.
bool check_channels(ShapeContext& ctx, const TensorType& x, const TensorType& w, size_t n, int64_t groups,
                    bool transposed) {
  Dim in = ctx.resolve(x.shape[x.rank() - n - 1]);
  std::string g = std::to_string(groups);
  if (transposed) {
    Dim w_in = ctx.resolve(w.shape[0]);
    return divides(ctx, groups, w_in, "input channels of weight " + shape_str(w.shape)) &&
           divides(ctx, groups, in, "input channels of input " + shape_str(x.shape)) &&
           ctx.unify(in, w_in,
                     "input " + shape_str(x.shape) + " and weight " + shape_str(w.shape) +
                         " disagree on input channels (weight.shape[0])");
  }
  Dim out = ctx.resolve(w.shape[0]);
  Dim per_group = ctx.resolve(w.shape[1]);
  if (!divides(ctx, groups, out, "output channels of weight " + shape_str(w.shape)) ||
      !divides(ctx, groups, in, "input channels of input " + shape_str(x.shape)))
    return false;
  std::string what = "input " + shape_str(x.shape) + " and weight " + shape_str(w.shape) +
                     " disagree on input channels (weight.shape[1] * groups " + g + ")";
  if (groups == 1)
    return ctx.unify(in, per_group, what);
  if (per_group.is_constant())
    return ctx.unify(in, Dim::constant(per_group.value() * groups), what);
  if (in.is_constant())
    return ctx.unify(per_group, Dim::constant(in.value() / groups), what);
  return true; // both symbolic: checked again once the dims are specialized
}

// The weight's kernel extents, which must be constants.
std::optional<std::vector<int64_t>> kernel_extents(ShapeContext& ctx, const TensorType& w, size_t n) {
  std::vector<int64_t> result;
  for (size_t i = w.rank() - n; i < w.rank(); ++i) {
    Dim d = ctx.resolve(w.shape[i]);
    if (d.is_symbol())
      return ctx.error("weight", "spatial dims must be constants (" + d.name() + " is symbolic in weight " +
                                     shape_str(w.shape) + ")");
    result.push_back(d.value());
  }
  if (!all_positive(result))
    return ctx.error("weight", "kernel size must be positive but weight has " + shape_str(w.shape));
  return result;
}

std::optional<TensorType> infer_conv(ShapeContext& ctx) {
  const size_t n = spatial_dims(ctx);
  const bool transposed = ctx.op().traits.transposed;
  const TensorType& x = *ctx.tensor("input");
  const TensorType& w = *ctx.tensor("weight");
  const std::string names = ops::spatial_names(n);
  if (x.rank() != n + 1 && x.rank() != n + 2)
    return ctx.error("input", "expected a " + std::to_string(n + 1) + "-d [C, " + names + "] or " +
                                  std::to_string(n + 2) + "-d [N, C, " + names + "] input but got " +
                                  shape_str(x.shape));
  if (w.rank() != n + 2)
    return ctx.error("weight",
                     "expected a " + std::to_string(n + 2) + "-d weight [" +
                         (transposed ? "in_channels, out_channels/groups, " : "out_channels, in_channels/groups, ") +
                         kernel_names(n) + "] but got " + shape_str(w.shape));
  auto params = conv_params(ctx, n, transposed);
  if (!params || !check_channels(ctx, x, w, n, params->groups, transposed))
    return std::nullopt;
  const Dim out_channels = transposed ? (ctx.resolve(w.shape[1]).is_constant()
                                             ? Dim::constant(ctx.resolve(w.shape[1]).value() * params->groups)
                                             : w.shape[1])
                                      : w.shape[0];
  if (transposed && params->groups != 1 && !ctx.resolve(w.shape[1]).is_constant())
    return ctx.error("weight",
                     "out_channels/groups must be a constant when groups > 1 but weight has " + shape_str(w.shape));
  if (!ops::check_bias(ctx, out_channels, w))
    return std::nullopt;
  auto kernel = kernel_extents(ctx, w, n);
  if (!kernel || (!transposed && !read_padding(ctx, *kernel, *params)))
    return std::nullopt;
  if (transposed) {
    auto padding = ops::spatial_attr(ctx, "padding", n);
    if (!padding)
      return std::nullopt;
    if (std::any_of(padding->begin(), padding->end(), [](int64_t v) { return v < 0; }))
      return ctx.error("padding", "padding must be non-negative but got " + ops::pair_str(*padding));
    params->pad_before = params->pad_after = *padding;
  }

  // Per dim: the dilated kernel, and the input padded on both sides where constant.
  std::vector<int64_t> effective(n), padded(n);
  std::vector<Dim> in(n);
  bool fits = true;
  for (size_t i = 0; i < n; ++i) {
    effective[i] = params->dilation[i] * ((*kernel)[i] - 1) + 1;
    in[i] = ctx.resolve(x.shape[x.rank() - n + i]);
    padded[i] = in[i].is_constant() ? in[i].value() + params->pad_before[i] + params->pad_after[i] : 0;
    fits = fits && (transposed || in[i].is_symbol() || effective[i] <= padded[i]);
  }
  if (!fits) {
    std::string kernel_text = "kernel size " + ops::pair_str(*kernel);
    if (effective != *kernel)
      kernel_text += " (dilated to " + ops::pair_str(effective) + ")";
    return ctx.error("weight", kernel_text + " is larger than the padded input " + ops::pair_str(padded));
  }
  Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(n + 1));
  out.push_back(out_channels);
  for (size_t i = 0; i < n; ++i) {
    const int64_t stride = params->stride[i];
    if (in[i].is_symbol()) {
      // A size-preserving geometry keeps a symbolic dim; other sizes need constants.
      const int64_t growth = transposed ? effective[i] - 1 + params->output_padding[i] - 2 * params->pad_before[i]
                                        : params->pad_before[i] + params->pad_after[i] - (effective[i] - 1);
      if (stride != 1 || growth != 0)
        return ctx.error("input", "spatial dims must be constants (" + in[i].name() + " is symbolic in input " +
                                      shape_str(x.shape) + ")");
      out.push_back(in[i]);
      continue;
    }
    const int64_t size =
        transposed ? (in[i].value() - 1) * stride - 2 * params->pad_before[i] + effective[i] + params->output_padding[i]
                   : (padded[i] - effective[i]) / stride + 1;
    if (size <= 0)
      return ctx.error("input", "input " + shape_str(x.shape) + " is too small: the output would have size " +
                                    std::to_string(size) + " in spatial dim " + std::to_string(i));
    out.push_back(Dim::constant(size));
  }
  return TensorType{DType::F32, ops::resolve_shape(ctx, out)};
}

// ---- reference ----

// Every size as 3 spatial dims (D, H, W); missing leading ones are 1.
struct ConvGeometry {
  int64_t batch = 1, in_channels = 0, out_channels = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
};

ConvGeometry conv_geometry(const ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const HostTensor& w = *ctx.tensor("weight");
  const auto n = static_cast<size_t>(ctx.op.traits.spatial_dims);
  const auto first = static_cast<int64_t>(3 - n);
  ConvGeometry g;
  g.batch = x.rank() == n + 2 ? x.dim(0) : 1;
  g.in_channels = x.dim(-static_cast<int64_t>(n) - 1);
  g.out_channels = ctx.out.dim(-static_cast<int64_t>(n) - 1);
  g.groups = ctx.get_int("groups");
  std::vector<int64_t> stride = ops::spatial_values(ctx.get_ints("stride"), n);
  std::vector<int64_t> dilation = ops::spatial_values(ctx.get_ints("dilation"), n);
  std::vector<int64_t> kernel(w.shape.end() - static_cast<std::ptrdiff_t>(n), w.shape.end());
  std::vector<int64_t> pad(n, 0);
  auto padding = ctx.attrs.find("padding");
  if (std::holds_alternative<std::string>(padding->second)) {
    if (std::get<std::string>(padding->second) == "same") // the left half; the right is implicit
      for (size_t i = 0; i < n; ++i)
        pad[i] = dilation[i] * (kernel[i] - 1) / 2;
  } else {
    pad = ops::spatial_values(ctx.get_ints("padding"), n);
  }
  for (size_t i = 0; i < n; ++i) {
    const auto d = static_cast<size_t>(first) + i;
    const auto from_end = static_cast<int64_t>(i) - static_cast<int64_t>(n);
    g.in[d] = x.dim(from_end);
    g.out[d] = ctx.out.dim(from_end);
    g.kernel[d] = kernel[i];
    g.stride[d] = stride[i];
    g.pad[d] = pad[i];
    g.dilation[d] = dilation[i];
  }
  return g;
}

// Kernel taps [begin, end) whose input position start + tap * dilation lies in
// [0, size); the others read zero padding and are skipped.
struct TapRange {
  int64_t begin, end;
};
TapRange valid_taps(int64_t start, int64_t dilation, int64_t taps, int64_t size) {
  if (start >= size)
    return {0, 0};
  int64_t begin = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  int64_t end = std::min(taps, (size - 1 - start) / dilation + 1);
  return {begin, std::max(begin, end)};
}

// One output element of a forward convolution: the dot product of a
// (dilated, strided) window of the group's input channels with one filter.
// Raw pointers in the inner loop keep Debug builds fast enough for tests.
double conv_point(const ConvGeometry& g, int64_t group_channels, const double* x_group, const double* filter,
                  const int64_t (&o)[3]) {
  int64_t start[3];
  TapRange range[3];
  for (int d = 0; d < 3; ++d) {
    start[d] = o[d] * g.stride[d] - g.pad[d];
    range[d] = valid_taps(start[d], g.dilation[d], g.kernel[d], g.in[d]);
  }
  const int64_t dw = g.dilation[2];
  double acc = 0.0;
  for (int64_t ci = 0; ci < group_channels; ++ci)
    for (int64_t a = range[0].begin; a < range[0].end; ++a)
      for (int64_t b = range[1].begin; b < range[1].end; ++b) {
        const int64_t row = (start[0] + a * g.dilation[0]) * g.in[1] + start[1] + b * g.dilation[1];
        const double* xp = x_group + ci * g.in_plane() + row * g.in[2] + start[2] + range[2].begin * dw;
        const double* wp = filter + ci * g.taps() + (a * g.kernel[1] + b) * g.kernel[2] + range[2].begin;
        for (const double* w_end = wp + (range[2].end - range[2].begin); wp != w_end; ++wp, xp += dw)
          acc += *xp * *wp;
      }
  return acc;
}

void conv_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const HostTensor& w = *ctx.tensor("weight");
  const HostTensor* bias = ctx.tensor("bias");
  const ConvGeometry g = conv_geometry(ctx);
  const int64_t outs_per_group = g.out_channels / g.groups, group_channels = g.in_channels / g.groups;
  // One index per (sample, output channel) plane of the output.
  ctx.parallel_for(g.batch * g.out_channels, [&](int64_t first, int64_t last) {
    for (int64_t index = first; index < last; ++index) {
      const int64_t n = index / g.out_channels, o = index % g.out_channels;
      const int64_t first_channel = (o / outs_per_group) * group_channels;
      const double* x_group = x.data.data() + (n * g.in_channels + first_channel) * g.in_plane();
      const double* filter = w.data.data() + o * group_channels * g.taps();
      const double b = bias ? bias->data[static_cast<size_t>(o)] : 0.0;
      double* out = ctx.out.data.data() + index * g.out_plane();
      int64_t pos[3];
      for (pos[0] = 0; pos[0] < g.out[0]; ++pos[0])
        for (pos[1] = 0; pos[1] < g.out[1]; ++pos[1])
          for (pos[2] = 0; pos[2] < g.out[2]; ++pos[2])
            *out++ = conv_point(g, group_channels, x_group, filter, pos) + b;
    }
  });
}

// The transposed convolution scatters every input element through the kernel:
// out[i * stride - pad + tap * dilation] += x[i] * w[c, o, tap].
void conv_transpose_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const HostTensor& w = *ctx.tensor("weight");
  const HostTensor* bias = ctx.tensor("bias");
  const ConvGeometry g = conv_geometry(ctx);
  const int64_t outs_per_group = g.out_channels / g.groups, group_channels = g.in_channels / g.groups;
  ctx.parallel_for(g.batch * g.out_channels, [&](int64_t first, int64_t last) {
    for (int64_t index = first; index < last; ++index) {
      const int64_t n = index / g.out_channels, o = index % g.out_channels;
      const int64_t group = o / outs_per_group, local = o % outs_per_group;
      double* out = ctx.out.data.data() + index * g.out_plane();
      std::fill(out, out + g.out_plane(), bias ? bias->data[static_cast<size_t>(o)] : 0.0);
      for (int64_t ci = 0; ci < group_channels; ++ci) {
        const int64_t c = group * group_channels + ci;
        const double* plane = x.data.data() + (n * g.in_channels + c) * g.in_plane();
        const double* filter = w.data.data() + (c * outs_per_group + local) * g.taps();
        int64_t i[3], t[3];
        for (i[0] = 0; i[0] < g.in[0]; ++i[0])
          for (i[1] = 0; i[1] < g.in[1]; ++i[1])
            for (i[2] = 0; i[2] < g.in[2]; ++i[2]) {
              const double v = plane[(i[0] * g.in[1] + i[1]) * g.in[2] + i[2]];
              for (t[0] = 0; t[0] < g.kernel[0]; ++t[0])
                for (t[1] = 0; t[1] < g.kernel[1]; ++t[1])
                  for (t[2] = 0; t[2] < g.kernel[2]; ++t[2]) {
                    int64_t p[3];
                    bool inside = true;
                    for (int d = 0; d < 3; ++d) {
                      p[d] = i[d] * g.stride[d] - g.pad[d] + t[d] * g.dilation[d];
                      inside = inside && p[d] >= 0 && p[d] < g.out[d];
                    }
                    if (inside)
                      out[(p[0] * g.out[1] + p[1]) * g.out[2] + p[2]] +=
                          v * filter[(t[0] * g.kernel[1] + t[1]) * g.kernel[2] + t[2]];
                  }
            }
      }
    }
  });
}

std::vector<ParamSpec> conv_params_spec() {
  return {tensor("input"),
          tensor("weight", ParamInit::KaimingUniform),
          optional_tensor("bias", ParamInit::BiasUniform),
          attr("stride", ParamKind::Ints, int64_t{1}),
          attr("padding", ParamKind::IntsOrString, int64_t{0}),
          attr("dilation", ParamKind::Ints, int64_t{1}),
          attr("groups", ParamKind::Int, int64_t{1})};
}

// torch's order: output_padding and groups come before dilation.
std::vector<ParamSpec> conv_transpose_params_spec() {
  return {tensor("input"),
          tensor("weight", ParamInit::KaimingUniform),
          optional_tensor("bias", ParamInit::BiasUniform),
          attr("stride", ParamKind::Ints, int64_t{1}),
          attr("padding", ParamKind::Ints, int64_t{0}),
          attr("output_padding", ParamKind::Ints, int64_t{0}),
          attr("groups", ParamKind::Int, int64_t{1}),
          attr("dilation", ParamKind::Ints, int64_t{1})};
}

} // namespace

void register_convolution_ops(OpRegistry& registry) {
  for (int n = 1; n <= 3; ++n) {
    const std::string d = std::to_string(n) + "d";
    registry.add({
        .name = "conv" + d,
        .kind = OpKind::Contraction,
        .params = conv_params_spec(),
        .infer = infer_conv,
        .reference = conv_reference,
        .mutates = {},
        .traits = {.contraction = ContractionForm::Convolution, .spatial_dims = n},
    });
    registry.add({
        .name = "conv_transpose" + d,
        .kind = OpKind::Contraction,
        .params = conv_transpose_params_spec(),
        .infer = infer_conv,
        .reference = conv_transpose_reference,
        .mutates = {},
        .traits = {.contraction = ContractionForm::Convolution, .spatial_dims = n, .transposed = true},
    });
  }
}

} // namespace fusegen
