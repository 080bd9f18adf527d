// Normalization ops: group_norm, layer_norm, instance_norm, softmax and
// log_softmax (statistics over a contiguous slice of each row), and
// batch_norm (statistics per channel over every other dim).
//
// References use the biased variance computed in two passes in double, as
// torch's normalization kernels define it (up to rounding).
#include "ops/OpHelpers.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fusegen {
namespace {

using ops::attr;
using ops::optional_tensor;
using ops::tensor;

// ---- shared shape checks ----

// Inputs laid out [N, C, *] need at least `min_rank` dims.
bool check_nc_input(ShapeContext& ctx, const TensorType& x, size_t min_rank) {
  if (x.rank() >= min_rank)
    return true;
  std::string layout = min_rank == 2 ? "[N, C, *]" : "[N, C, *] with spatial dims";
  ctx.error("input", "expected an input of at least " + std::to_string(min_rank) + " dims " +
                         layout + " but got " + shape_str(x.shape));
  return false;
}

// Optional per-channel tensor (weight, bias, running stats) of shape [C].
bool check_per_channel(ShapeContext& ctx, std::string_view param, const TensorType& x) {
  const TensorType* t = ctx.tensor(param);
  if (!t)
    return true;
  const Dim& channels = x.shape[1];
  std::string name(param);
  if (t->rank() != 1) {
    ctx.error(param, "expected a 1-d " + name + " [" + channels.str() + "] but got " +
                         shape_str(t->shape));
    return false;
  }
  return ctx.unify(t->shape[0], channels,
                   name + " has " + shape_str(t->shape) + " but input has " + shape_str(x.shape) +
                       ": expected one value per channel");
}

// Optional affine tensor whose shape must equal `expected` exactly.
bool check_affine_shape(ShapeContext& ctx, std::string_view param, const Shape& expected) {
  const TensorType* t = ctx.tensor(param);
  if (!t)
    return true;
  std::string what = std::string(param) + " has " + shape_str(t->shape) +
                     " but normalized_shape is " + shape_str(expected);
  if (t->rank() != expected.size()) {
    ctx.error(param, what);
    return false;
  }
  for (size_t i = 0; i < expected.size(); ++i)
    if (!ctx.unify(t->shape[i], expected[i], what))
      return false;
  return true;
}

TensorType same_shape(ShapeContext& ctx, const TensorType& x) {
  return TensorType{DType::F32, ops::resolve_shape(ctx, x.shape)};
}

// ---- shared reference code ----

struct Moments {
  double mean = 0.0;
  double var = 0.0; // biased
};

// Two-pass mean and biased variance of `count` contiguous values.
Moments moments(const double* values, int64_t count) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i)
    sum += values[i];
  Moments m;
  m.mean = sum / static_cast<double>(count);
  double squares = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    double d = values[i] - m.mean;
    squares += d * d;
  }
  m.var = squares / static_cast<double>(count);
  return m;
}

double param_or(const HostTensor* t, int64_t index, double fallback) {
  return t ? t->data[static_cast<size_t>(index)] : fallback;
}

// Normalizes every contiguous row of `row_length` elements of the input with
// its own statistics, then applies the optional weight/bias element
// `affine_index(row, i)`.
template <typename AffineIndex>
void normalize_rows(ReferenceContext& ctx, int64_t row_length, AffineIndex affine_index) {
  const HostTensor& x = *ctx.tensor("input");
  const HostTensor* weight = ctx.tensor("weight");
  const HostTensor* bias = ctx.tensor("bias");
  double eps = ctx.get_float("eps");
  if (row_length == 0)
    return;
  int64_t rows = x.numel() / row_length;
  for (int64_t r = 0; r < rows; ++r) {
    const double* in = x.data.data() + r * row_length;
    double* out = ctx.out.data.data() + r * row_length;
    Moments m = moments(in, row_length);
    double inv_std = 1.0 / std::sqrt(m.var + eps);
    for (int64_t i = 0; i < row_length; ++i) {
      int64_t a = affine_index(r, i);
      out[i] = (in[i] - m.mean) * inv_std * param_or(weight, a, 1.0) + param_or(bias, a, 0.0);
    }
  }
}

// Elements per channel of one sample of an [N, C, *] tensor.
int64_t spatial_size(const HostTensor& x) {
  int64_t size = 1;
  for (size_t i = 2; i < x.rank(); ++i)
    size *= x.shape[i];
  return size;
}

// ---- group_norm ----

std::optional<TensorType> infer_group_norm(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  if (!check_nc_input(ctx, x, 2))
    return std::nullopt;
  int64_t groups = ctx.get_int("num_groups");
  if (groups <= 0)
    return ctx.error("num_groups", "num_groups must be positive but got " + std::to_string(groups));
  Dim channels = ctx.resolve(x.shape[1]);
  // A symbolic C is checked again when the dims are specialized.
  if (channels.is_constant() && channels.value() % groups != 0)
    return ctx.error("num_groups", "num_groups " + std::to_string(groups) +
                                       " does not divide the " + channels.str() + " channels");
  // torch (F.group_norm's _verify_batch_size) rejects N * C/G * spatial == 1:
  // a single sample whose groups hold one value each. Unknown while a dim is
  // symbolic; specialization checks it again.
  if (channels.is_constant()) {
    Shape per_group = ops::resolve_shape(ctx, x.shape);
    per_group[1] = Dim::constant(channels.value() / groups);
    if (auto count = shape_numel(per_group); count && *count == 1)
      return ctx.error("input", "expected more than 1 value per group, got input " + shape_str(x.shape) +
                                    " with num_groups=" + std::to_string(groups));
  }
  if (!check_per_channel(ctx, "weight", x) || !check_per_channel(ctx, "bias", x))
    return std::nullopt;
  return same_shape(ctx, x);
}

// Each (n, group) is a contiguous run of C/G channels times the spatial size.
void group_norm_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  int64_t groups = ctx.get_int("num_groups");
  int64_t group_channels = x.dim(1) / groups, spatial = spatial_size(x);
  normalize_rows(ctx, group_channels * spatial, [&](int64_t row, int64_t i) {
    return (row % groups) * group_channels + i / spatial;
  });
}

// ---- layer_norm ----

std::optional<TensorType> infer_layer_norm(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  std::vector<int64_t> normalized = ctx.get_ints("normalized_shape");
  ctx.set_attr("normalized_shape", normalized); // an int becomes a 1-tuple
  Shape expected;
  for (int64_t d : normalized)
    expected.push_back(Dim::constant(d));
  if (normalized.empty())
    return ctx.error("normalized_shape", "normalized_shape must have at least one dim");
  if (std::any_of(normalized.begin(), normalized.end(), [](int64_t d) { return d < 0; }))
    return ctx.error("normalized_shape",
                     "normalized_shape must be non-negative but got " + shape_str(expected));
  std::string what = "normalized_shape " + shape_str(expected) +
                     " does not match the trailing dims of input " + shape_str(x.shape);
  if (normalized.size() > x.rank())
    return ctx.error("normalized_shape", what);
  size_t offset = x.rank() - normalized.size();
  for (size_t i = 0; i < normalized.size(); ++i)
    if (!ctx.unify(x.shape[offset + i], expected[i], what))
      return std::nullopt;
  if (!check_affine_shape(ctx, "weight", expected) || !check_affine_shape(ctx, "bias", expected))
    return std::nullopt;
  return same_shape(ctx, x);
}

void layer_norm_reference(ReferenceContext& ctx) {
  std::vector<int64_t> normalized = ctx.get_ints("normalized_shape");
  normalize_rows(ctx, numel_of(normalized), [](int64_t, int64_t i) { return i; });
}

// ---- instance_norm ----

std::optional<TensorType> infer_instance_norm(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  if (!check_nc_input(ctx, x, 3))
    return std::nullopt;
  Shape spatial(x.shape.begin() + 2, x.shape.end());
  // torch: one spatial element has zero variance, which it rejects.
  if (auto size = shape_numel(ops::resolve_shape(ctx, spatial)); size && *size == 1)
    return ctx.error("input", "expected more than 1 spatial element but got input " +
                                  shape_str(x.shape));
  if (!check_per_channel(ctx, "weight", x) || !check_per_channel(ctx, "bias", x))
    return std::nullopt;
  return same_shape(ctx, x);
}

void instance_norm_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  int64_t channels = x.dim(1);
  normalize_rows(ctx, spatial_size(x), [&](int64_t row, int64_t) { return row % channels; });
}

// ---- softmax / log_softmax ----

std::optional<TensorType> infer_softmax(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  auto dim = ctx.normalize_dim("dim", ctx.get_int("dim"), x.rank());
  if (!dim)
    return std::nullopt;
  ctx.set_attr("dim", *dim);
  return same_shape(ctx, x);
}

// Softmax along `dim` with the row maximum subtracted first, so large inputs
// do not overflow; `log` selects log_softmax.
void softmax_along(ReferenceContext& ctx, bool log) {
  const HostTensor& x = *ctx.tensor("input");
  int64_t dim = ctx.get_int("dim");
  if (dim < 0)
    dim += static_cast<int64_t>(x.rank());
  int64_t length = x.rank() == 0 ? 1 : x.dim(dim);
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(dim) + 1; i < x.rank(); ++i)
    inner *= x.shape[i];
  int64_t outer = length * inner == 0 ? 0 : x.numel() / (length * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * length * inner + in;
      const double* row = x.data.data() + base;
      double* out = ctx.out.data.data() + base;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < length; ++i)
        max = std::max(max, row[i * inner]);
      double sum = 0.0;
      for (int64_t i = 0; i < length; ++i)
        sum += std::exp(row[i * inner] - max);
      double log_sum = std::log(sum);
      for (int64_t i = 0; i < length; ++i) {
        double shifted = row[i * inner] - max;
        out[i * inner] = log ? shifted - log_sum : std::exp(shifted) / sum;
      }
    }
}

// ---- batch_norm ----

std::optional<TensorType> infer_batch_norm(ShapeContext& ctx) {
  const TensorType& x = *ctx.tensor("input");
  if (!check_nc_input(ctx, x, 2))
    return std::nullopt;
  for (std::string_view param : {"running_mean", "running_var", "weight", "bias"})
    if (!check_per_channel(ctx, param, x))
      return std::nullopt;
  if (ctx.get_bool("training")) {
    // Values per channel: every dim but C. Unknown while N is symbolic.
    Shape reduced = ops::resolve_shape(ctx, x.shape);
    reduced.erase(reduced.begin() + 1);
    if (auto count = shape_numel(reduced); count && *count == 1)
      return ctx.error("input", "expected more than 1 value per channel when training, got input " +
                                    shape_str(x.shape));
  }
  return same_shape(ctx, x);
}

std::vector<std::string> batch_norm_mutates(const Attrs& attrs) {
  auto it = attrs.find("training");
  bool training = it == attrs.end() || std::get<bool>(it->second);
  if (!training)
    return {};
  return {"running_mean", "running_var"};
}

// Channel c of an [N, C, *] tensor is N strided runs of `spatial` elements.
struct ChannelLayout {
  int64_t batch, channels, spatial;
  int64_t offset(int64_t n, int64_t c) const { return (n * channels + c) * spatial; }
};

Moments channel_moments(const HostTensor& x, const ChannelLayout& layout, int64_t c) {
  std::vector<double> values;
  for (int64_t n = 0; n < layout.batch; ++n) {
    auto begin = x.data.begin() + layout.offset(n, c);
    values.insert(values.end(), begin, begin + layout.spatial);
  }
  return moments(values.data(), static_cast<int64_t>(values.size()));
}

// Training: normalize with the batch statistics and fold them into the
// running stats (unbiased variance there, as torch does). Eval: normalize
// with the running stats.
void batch_norm_reference(ReferenceContext& ctx) {
  const HostTensor& x = *ctx.tensor("input");
  const HostTensor* weight = ctx.tensor("weight");
  const HostTensor* bias = ctx.tensor("bias");
  bool training = ctx.get_bool("training");
  double momentum = ctx.get_float("momentum"), eps = ctx.get_float("eps");
  HostTensor* running_mean = ctx.mutable_tensor("running_mean");
  HostTensor* running_var = ctx.mutable_tensor("running_var");
  const HostTensor& mean_in = running_mean ? *running_mean : *ctx.tensor("running_mean");
  const HostTensor& var_in = running_var ? *running_var : *ctx.tensor("running_var");

  ChannelLayout layout{x.dim(0), x.dim(1), spatial_size(x)};
  int64_t count = layout.batch * layout.spatial;
  for (int64_t c = 0; c < layout.channels; ++c) {
    auto ci = static_cast<size_t>(c);
    Moments m{mean_in.data[ci], var_in.data[ci]};
    if (training) {
      m = channel_moments(x, layout, c);
      double unbiased = m.var * static_cast<double>(count) / static_cast<double>(count - 1);
      if (running_mean)
        running_mean->data[ci] = (1.0 - momentum) * running_mean->data[ci] + momentum * m.mean;
      if (running_var)
        running_var->data[ci] = (1.0 - momentum) * running_var->data[ci] + momentum * unbiased;
    }
    double scale = param_or(weight, c, 1.0) / std::sqrt(m.var + eps);
    double shift = param_or(bias, c, 0.0);
    for (int64_t n = 0; n < layout.batch; ++n)
      for (int64_t s = 0; s < layout.spatial; ++s) {
        auto i = static_cast<size_t>(layout.offset(n, c) + s);
        ctx.out.data[i] = (x.data[i] - m.mean) * scale + shift;
      }
  }
}

// Reduced dims (OpTraits::reduced_dims): group_norm takes every dim after
// the batch (split into groups of channels), instance_norm the spatial dims.
std::function<std::vector<int64_t>(const Attrs&, size_t)> dims_from(int64_t first) {
  return [first](const Attrs&, size_t rank) {
    std::vector<int64_t> dims;
    for (int64_t d = first; d < static_cast<int64_t>(rank); ++d)
      dims.push_back(d);
    return dims;
  };
}

std::vector<int64_t> layer_norm_dims(const Attrs& attrs, size_t rank) {
  size_t normalized = std::get<std::vector<int64_t>>(attrs.at("normalized_shape")).size();
  return dims_from(static_cast<int64_t>(rank - normalized))(attrs, rank);
}

// Every dim but the channel dim 1.
std::vector<int64_t> batch_norm_dims(const Attrs&, size_t rank) {
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < static_cast<int64_t>(rank); ++d)
    dims.push_back(d);
  return dims;
}

} // namespace

void register_normalization_ops(OpRegistry& registry) {
  auto eps = attr("eps", ParamKind::Float, 1e-5);
  registry.add({
      .name = "group_norm",
      .kind = OpKind::Normalization,
      .params = {tensor("input"), attr("num_groups", ParamKind::Int), optional_tensor("weight", ParamInit::Ones),
                 optional_tensor("bias", ParamInit::Zeros), eps},
      .infer = infer_group_norm,
      .reference = group_norm_reference,
      .mutates = {},
      .traits = {.statistic = Statistic::Moments,
                 .reduced_dims = dims_from(1),
                 .channel_groups = [](const Attrs& attrs) { return std::get<int64_t>(attrs.at("num_groups")); },
                 .affine = AffineLayout::PerChannel},
  });
  registry.add({
      .name = "layer_norm",
      .kind = OpKind::Normalization,
      .params = {tensor("input"), attr("normalized_shape", ParamKind::Ints), optional_tensor("weight", ParamInit::Ones),
                 optional_tensor("bias", ParamInit::Zeros), eps},
      .infer = infer_layer_norm,
      .reference = layer_norm_reference,
      .mutates = {},
      .traits = {.statistic = Statistic::Moments,
                 .reduced_dims = layer_norm_dims,
                 .affine = AffineLayout::OverReducedDims},
  });
  registry.add({
      .name = "instance_norm",
      .kind = OpKind::Normalization,
      .params = {tensor("input"), optional_tensor("weight", ParamInit::Ones), optional_tensor("bias", ParamInit::Zeros),
                 eps},
      .infer = infer_instance_norm,
      .reference = instance_norm_reference,
      .mutates = {},
      .traits = {.statistic = Statistic::Moments, .reduced_dims = dims_from(2), .affine = AffineLayout::PerChannel},
  });
  registry.add({
      .name = "softmax",
      .kind = OpKind::Normalization,
      .params = {tensor("input"), attr("dim", ParamKind::Int)},
      .infer = infer_softmax,
      .reference = [](ReferenceContext& ctx) { softmax_along(ctx, /*log=*/false); },
      .mutates = {},
      .traits = {.statistic = Statistic::Softmax},
  });
  registry.add({
      .name = "log_softmax",
      .kind = OpKind::Normalization,
      .params = {tensor("input"), attr("dim", ParamKind::Int)},
      .infer = infer_softmax,
      .reference = [](ReferenceContext& ctx) { softmax_along(ctx, /*log=*/true); },
      .mutates = {},
      .traits = {.statistic = Statistic::LogSoftmax},
  });
  registry.add({
      .name = "batch_norm",
      .kind = OpKind::ColumnNorm,
      .params = {tensor("input"), tensor("running_mean", ParamInit::Zeros), tensor("running_var", ParamInit::Ones),
                 optional_tensor("weight", ParamInit::Ones), optional_tensor("bias", ParamInit::Zeros),
                 attr("training", ParamKind::Bool, true), attr("momentum", ParamKind::Float, 0.1), eps},
      .infer = infer_batch_norm,
      .reference = batch_norm_reference,
      .mutates = batch_norm_mutates,
      .traits = {.statistic = Statistic::Moments, .reduced_dims = batch_norm_dims, .affine = AffineLayout::PerChannel},
  });
}

} // namespace fusegen
