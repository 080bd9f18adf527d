// Contraction ops: linear, matmul and conv2d. Shape inference mirrors the
// checks torch makes; the references are plain loops in double.
#include "ops/OpHelpers.h"

#include <algorithm>

namespace fusegen {
namespace {

using ops::attr;
using ops::optional_tensor;
using ops::tensor;

// Optional bias of shape [out]; `out` is the weight's output-feature dim.
bool check_bias(ShapeContext& ctx, const Dim& out, const TensorType& weight) {
  const TensorType* bias = ctx.tensor("bias");
  if (!bias)
    return true;
  if (bias->rank() != 1) {
    ctx.error("bias", "expected a 1-d bias [" + out.str() + "] but got " + shape_str(bias->shape));
    return false;
  }
  return ctx.unify(bias->shape[0], out,
                   "bias has " + shape_str(bias->shape) + " but weight has " +
                       shape_str(weight.shape) + ": expected one bias value per output");
}

// ---- linear ----

std::optional<TensorType> infer_linear(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  const TensorType& w = *ctx.tensor("weight");
  if (x.rank() == 0)
    return ctx.error("input", "expected an input [..., in_features] but got a 0-d tensor");
  if (w.rank() != 2)
    return ctx.error("weight", "expected a 2-d weight [out_features, in_features] but got " +
                                   shape_str(w.shape));
  if (!ctx.unify(x.shape.back(), w.shape[1],
                 "input has " + shape_str(x.shape) + " but weight has " + shape_str(w.shape) +
                     ": in_features differ"))
    return std::nullopt;
  if (!check_bias(ctx, w.shape[0], w))
    return std::nullopt;
  Shape out(x.shape.begin(), x.shape.end() - 1);
  out.push_back(w.shape[0]);
  return TensorType{DType::F32, ops::resolve_shape(ctx, out)};
}

// y[r, o] = sum_i x[r, i] * w[o, i] + b[o] over every leading index r.
void linear_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const HostTensor& w = *ctx.tensor("weight");
  const HostTensor* b = ctx.tensor("bias");
  int64_t out_features = w.dim(0), in_features = w.dim(1);
  int64_t rows = ctx.out.numel() / std::max<int64_t>(out_features, 1);
  ctx.parallel_for(rows, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const double* x_row = x.data.data() + r * in_features;
      for (int64_t o = 0; o < out_features; ++o) {
        const double* w_row = w.data.data() + o * in_features;
        double acc = 0.0;
        for (int64_t i = 0; i < in_features; ++i)
          acc += x_row[i] * w_row[i];
        ctx.out.data[static_cast<size_t>(r * out_features + o)] = acc + (b ? b->data[o] : 0.0);
      }
    }
  });
}

// ---- matmul ----

// torch.matmul views a 1-d first operand as [1, k] and a 1-d second operand as
// [k, 1], runs a batched matmul with broadcast batch dims, then drops the dims
// it added. Both operands must be at least 1-d.
std::optional<TensorType> infer_matmul(ShapeContext& ctx) {
  const TensorType& a = *ctx.tensor("input");
  const TensorType& b = *ctx.tensor("other");
  if (a.rank() == 0 || b.rank() == 0)
    return ctx.error("both arguments need at least 1 dim but got " + shape_str(a.shape) +
                     " and " + shape_str(b.shape));
  const Dim& a_inner = a.shape.back();
  const Dim& b_inner = b.rank() == 1 ? b.shape[0] : b.shape[b.rank() - 2];
  if (!ctx.unify(a_inner, b_inner,
                 "input has " + shape_str(a.shape) + " but other has " + shape_str(b.shape) +
                     ": contracted dims differ"))
    return std::nullopt;

  Shape a_batch(a.shape.begin(), a.shape.end() - std::min<size_t>(a.rank(), 2));
  Shape b_batch(b.shape.begin(), b.shape.end() - std::min<size_t>(b.rank(), 2));
  size_t batch_rank = std::max(a_batch.size(), b_batch.size());
  Shape out(batch_rank);
  for (size_t i = 0; i < batch_rank; ++i) {
    // Right-aligned numpy broadcasting of the batch dims.
    size_t a_off = batch_rank - a_batch.size(), b_off = batch_rank - b_batch.size();
    std::optional<Dim> da, db;
    if (i >= a_off)
      da = ctx.resolve(a_batch[i - a_off]);
    if (i >= b_off)
      db = ctx.resolve(b_batch[i - b_off]);
    if (!da || (*da == Dim::constant(1) && db)) {
      out[i] = *db;
    } else if (!db || *db == Dim::constant(1)) {
      out[i] = *da;
    } else {
      if (!ctx.unify(*da, *db,
                     "batch dims of input " + shape_str(a.shape) + " and other " +
                         shape_str(b.shape) + " cannot be broadcast"))
        return std::nullopt;
      out[i] = *da;
    }
  }
  if (a.rank() >= 2)
    out.push_back(a.shape[a.rank() - 2]);
  if (b.rank() >= 2)
    out.push_back(b.shape.back());
  return TensorType{DType::F32, ops::resolve_shape(ctx, out)};
}

std::vector<int64_t> broadcast_concrete(const std::vector<int64_t>& a,
                                        const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void matmul_reference(ReferenceContext& ctx) {
  const HostTensor& a = *ctx.tensor("input");
  const HostTensor& b = *ctx.tensor("other");
  // Promote 1-d operands as torch does; the output numel is unaffected.
  std::vector<int64_t> a_shape = a.rank() == 1 ? std::vector<int64_t>{1, a.dim(0)} : a.shape;
  std::vector<int64_t> b_shape = b.rank() == 1 ? std::vector<int64_t>{b.dim(0), 1} : b.shape;
  std::vector<int64_t> a_batch(a_shape.begin(), a_shape.end() - 2);
  std::vector<int64_t> b_batch(b_shape.begin(), b_shape.end() - 2);
  std::vector<int64_t> out_batch = broadcast_concrete(a_batch, b_batch);
  std::vector<int64_t> a_index = ops::broadcast_indices(a_batch, out_batch);
  std::vector<int64_t> b_index = ops::broadcast_indices(b_batch, out_batch);
  int64_t n = a_shape[a_shape.size() - 2], k = a_shape.back(), m = b_shape.back();
  // One index per (batch, row) of the output.
  ctx.parallel_for(static_cast<int64_t>(a_index.size()) * n, [&](int64_t first, int64_t last) {
    for (int64_t index = first; index < last; ++index) {
      const auto batch = static_cast<size_t>(index / n);
      const int64_t i = index % n;
      const double* pa = a.data.data() + a_index[batch] * n * k;
      const double* pb = b.data.data() + b_index[batch] * k * m;
      double* po = ctx.out.data.data() + static_cast<int64_t>(batch) * n * m;
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0.0;
        for (int64_t p = 0; p < k; ++p)
          acc += pa[i * k + p] * pb[p * m + j];
        po[i * m + j] = acc;
      }
    }
  });
}

// ---- conv2d ----

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

std::optional<ConvParams> conv_params(ShapeContext& ctx) {
  auto stride = ops::spatial_pair_attr(ctx, "stride");
  auto padding = ops::spatial_pair_attr(ctx, "padding");
  auto dilation = ops::spatial_pair_attr(ctx, "dilation");
  if (!stride || !padding || !dilation)
    return std::nullopt;
  if (std::min((*stride)[0], (*stride)[1]) <= 0)
    return ctx.error("stride", "stride must be positive but got " + ops::pair_str(*stride));
  if (std::min((*dilation)[0], (*dilation)[1]) <= 0)
    return ctx.error("dilation", "dilation must be positive but got " + ops::pair_str(*dilation));
  if (std::min((*padding)[0], (*padding)[1]) < 0)
    return ctx.error("padding", "padding must be non-negative but got " + ops::pair_str(*padding));
  int64_t groups = ctx.get_int("groups");
  if (groups <= 0)
    return ctx.error("groups", "groups must be positive but got " + std::to_string(groups));
  return ConvParams{*stride, *padding, *dilation, groups};
}

// in_channels = weight.shape[1] * groups; groups must divide both channel counts.
bool check_conv_channels(ShapeContext& ctx, const TensorType& x, const TensorType& w,
                         int64_t groups) {
  Dim in = ctx.resolve(x.shape[x.rank() - 3]);
  Dim out = ctx.resolve(w.shape[0]);
  Dim per_group = ctx.resolve(w.shape[1]);
  std::string g = std::to_string(groups);
  if (out.is_constant() && out.value() % groups != 0) {
    ctx.error("groups", "groups " + g + " does not divide the " + out.str() +
                            " output channels of weight " + shape_str(w.shape));
    return false;
  }
  if (in.is_constant() && in.value() % groups != 0) {
    ctx.error("groups", "groups " + g + " does not divide the " + in.str() +
                            " input channels of input " + shape_str(x.shape));
    return false;
  }
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

// The last two dims of `type` as constants, or an error naming the symbol.
std::optional<std::vector<int64_t>> spatial_constants(ShapeContext& ctx, std::string_view param,
                                                      const TensorType& type) {
  std::vector<int64_t> result;
  for (size_t i = type.rank() - 2; i < type.rank(); ++i) {
    Dim d = ctx.resolve(type.shape[i]);
    if (d.is_symbol())
      return ctx.error(param, "spatial dims must be constants (" + d.name() + " is symbolic in " +
                                  std::string(param) + " " + shape_str(type.shape) + ")");
    result.push_back(d.value());
  }
  return result;
}

std::optional<TensorType> infer_conv2d(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  const TensorType& w = *ctx.tensor("weight");
  if (x.rank() != 3 && x.rank() != 4)
    return ctx.error("input", "expected a 3-d [C, H, W] or 4-d [N, C, H, W] input but got " +
                                  shape_str(x.shape));
  if (w.rank() != 4)
    return ctx.error("weight", "expected a 4-d weight [out_channels, in_channels/groups, kh, kw] "
                               "but got " + shape_str(w.shape));
  auto params = conv_params(ctx);
  if (!params || !check_conv_channels(ctx, x, w, params->groups) || !check_bias(ctx, w.shape[0], w))
    return std::nullopt;

  auto in = spatial_constants(ctx, "input", x);
  auto kernel = spatial_constants(ctx, "weight", w);
  if (!in || !kernel)
    return std::nullopt;
  if (std::min((*kernel)[0], (*kernel)[1]) <= 0)
    return ctx.error("weight", "kernel size must be positive but weight has " + shape_str(w.shape));
  std::vector<int64_t> effective(2), padded(2);
  for (size_t i = 0; i < 2; ++i) {
    effective[i] = params->dilation[i] * ((*kernel)[i] - 1) + 1;
    padded[i] = (*in)[i] + 2 * params->padding[i];
  }
  if (effective[0] > padded[0] || effective[1] > padded[1]) {
    std::string kernel_text = "kernel size " + ops::pair_str(*kernel);
    if (effective != *kernel)
      kernel_text += " (dilated to " + ops::pair_str(effective) + ")";
    return ctx.error("weight", kernel_text + " is larger than the padded input " +
                                   ops::pair_str(padded));
  }

  Shape out(x.shape.begin(), x.shape.end() - 3);
  out.push_back(w.shape[0]);
  for (size_t i = 0; i < 2; ++i)
    out.push_back(Dim::constant((padded[i] - effective[i]) / params->stride[i] + 1));
  return TensorType{DType::F32, ops::resolve_shape(ctx, out)};
}

struct ConvGeometry {
  int64_t batch, channels, height, width;       // input
  int64_t out_channels, group_channels, kh, kw; // weight
  int64_t out_height, out_width, groups;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

ConvGeometry conv_geometry(const ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const HostTensor& w = *ctx.tensor("weight");
  std::vector<int64_t> stride = ops::spatial_pair(ctx.get_ints("stride"));
  std::vector<int64_t> padding = ops::spatial_pair(ctx.get_ints("padding"));
  std::vector<int64_t> dilation = ops::spatial_pair(ctx.get_ints("dilation"));
  return ConvGeometry{
      .batch = x.rank() == 4 ? x.dim(0) : 1,
      .channels = x.dim(-3),
      .height = x.dim(-2),
      .width = x.dim(-1),
      .out_channels = w.dim(0),
      .group_channels = w.dim(1),
      .kh = w.dim(2),
      .kw = w.dim(3),
      .out_height = ctx.out.dim(-2),
      .out_width = ctx.out.dim(-1),
      .groups = ctx.get_int("groups"),
      .stride_h = stride[0],
      .stride_w = stride[1],
      .pad_h = padding[0],
      .pad_w = padding[1],
      .dilation_h = dilation[0],
      .dilation_w = dilation[1],
  };
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

// One output element: the dot product of a (dilated, strided) window of the
// group's input channels with one filter. Raw pointers and no branches in the
// inner loop keep Debug builds fast enough for test-sized batches.
double conv_point(const ConvGeometry& g, const double* x_group, const double* filter, int64_t oh,
                  int64_t ow) {
  int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
  TapRange rows = valid_taps(h0, g.dilation_h, g.kh, g.height);
  TapRange cols = valid_taps(w0, g.dilation_w, g.kw, g.width);
  int64_t plane = g.height * g.width, taps = g.kh * g.kw, dw = g.dilation_w;
  double acc = 0.0;
  for (int64_t ci = 0; ci < g.group_channels; ++ci)
    for (int64_t i = rows.begin; i < rows.end; ++i) {
      const double* xp = x_group + ci * plane + (h0 + i * g.dilation_h) * g.width + w0 +
                         cols.begin * dw;
      const double* wp = filter + ci * taps + i * g.kw + cols.begin;
      for (const double* w_end = wp + (cols.end - cols.begin); wp != w_end; ++wp, xp += dw)
        acc += *xp * *wp;
    }
  return acc;
}

void conv2d_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const HostTensor& w = *ctx.tensor("weight");
  const HostTensor* bias = ctx.tensor("bias");
  ConvGeometry g = conv_geometry(ctx);
  int64_t outs_per_group = g.out_channels / g.groups;
  int64_t plane = g.height * g.width;
  // One index per (sample, output channel) plane of the output.
  ctx.parallel_for(g.batch * g.out_channels, [&](int64_t first, int64_t last) {
    for (int64_t index = first; index < last; ++index) {
      const int64_t n = index / g.out_channels, o = index % g.out_channels;
      int64_t first_channel = (o / outs_per_group) * g.group_channels;
      const double* x_group = x.data.data() + (n * g.channels + first_channel) * plane;
      const double* filter = w.data.data() + o * g.group_channels * g.kh * g.kw;
      double b = bias ? bias->data[static_cast<size_t>(o)] : 0.0;
      double* out = ctx.out.data.data() + index * g.out_height * g.out_width;
      for (int64_t oh = 0; oh < g.out_height; ++oh)
        for (int64_t ow = 0; ow < g.out_width; ++ow)
          *out++ = conv_point(g, x_group, filter, oh, ow) + b;
    }
  });
}

} // namespace

void register_contraction_ops(OpRegistry& registry) {
  registry.add({
      .name = "linear",
      .kind = OpKind::Contraction,
      .params = {tensor("input"), tensor("weight", ParamInit::KaimingUniform),
                 optional_tensor("bias", ParamInit::BiasUniform)},
      .infer = infer_linear,
      .reference = linear_reference,
      .mutates = {},
      .traits = {.contraction = ContractionForm::RowsTimesWeight},
  });
  registry.add({
      .name = "matmul",
      .kind = OpKind::Contraction,
      .params = {tensor("input"), tensor("other")},
      .infer = infer_matmul,
      .reference = matmul_reference,
      .mutates = {},
      .traits = {.contraction = ContractionForm::BatchedMatmul},
  });
  registry.add({
      .name = "conv2d",
      .kind = OpKind::Contraction,
      .params = {tensor("input"), tensor("weight", ParamInit::KaimingUniform),
                 optional_tensor("bias", ParamInit::BiasUniform), attr("stride", ParamKind::Ints, int64_t{1}),
                 attr("padding", ParamKind::Ints, int64_t{0}), attr("dilation", ParamKind::Ints, int64_t{1}),
                 attr("groups", ParamKind::Int, int64_t{1})},
      .infer = infer_conv2d,
      .reference = conv2d_reference,
      .mutates = {},
      .traits = {.contraction = ContractionForm::Convolution, .spatial_dims = 2},
  });
}

} // namespace fusegen
