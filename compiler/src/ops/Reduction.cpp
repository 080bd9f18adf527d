// The reduction family: sum, mean, amax, amin, max, min (values only) and
// logsumexp over one or more dims, with torch's keepdim. Shape inference
// stores the normalized, sorted dims back into the node so equal programs
// print the same; references accumulate in double.
#include "ops/OpHelpers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace fusegen {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// How an op takes its `dim` argument.
enum class DimParam {
  OptionalInts, // None (all dims), an int or a tuple: sum, mean, amax, amin
  Int,          // exactly one dim, required: max, min
  Ints,         // an int or a tuple, required: logsumexp
};

ParamSpec dim_param(DimParam kind) {
  switch (kind) {
  case DimParam::OptionalInts: return ops::attr("dim", ParamKind::OptionalInts, NoneAttr{});
  case DimParam::Int: return ops::attr("dim", ParamKind::Int);
  case DimParam::Ints: return ops::attr("dim", ParamKind::Ints);
  }
  return {};
}

std::vector<int64_t> all_dims(size_t rank) {
  std::vector<int64_t> dims(rank);
  std::iota(dims.begin(), dims.end(), 0);
  return dims;
}

// The dims as written. None and, as in torch, an empty tuple mean all dims.
std::vector<int64_t> requested_dims(const ShapeContext& ctx, DimParam kind, size_t rank) {
  if (kind == DimParam::Int)
    return {ctx.get_int("dim")};
  std::vector<int64_t> dims = ctx.has("dim") ? ctx.get_ints("dim") : std::vector<int64_t>{};
  return dims.empty() ? all_dims(rank) : dims;
}

// amax and friends have no identity element, so an empty slice is an error.
bool check_nonempty(ShapeContext& ctx, const Shape& shape, const std::vector<int64_t>& dims) {
  for (int64_t dim : dims) {
    if (static_cast<size_t>(dim) >= shape.size())
      continue; // dim 0 of a 0-d tensor, which has one element
    Dim extent = ctx.resolve(shape[static_cast<size_t>(dim)]);
    if (extent.is_constant() && extent.value() == 0) {
      ctx.error("dim", "cannot reduce over a zero-size dim (dim " + std::to_string(dim) + " of " +
                           shape_str(shape) + ")");
      return false;
    }
  }
  return true;
}

std::optional<TensorType> infer_reduction(ShapeContext& ctx, DimParam kind, bool needs_nonempty) {
  const TensorType& in = *ctx.tensor("input");
  std::optional<std::vector<int64_t>> dims =
      ops::normalize_dims(ctx, "dim", requested_dims(ctx, kind, in.rank()), in.rank());
  if (!dims || (needs_nonempty && !check_nonempty(ctx, in.shape, *dims)))
    return std::nullopt;
  if (kind == DimParam::Int)
    ctx.set_attr("dim", dims->front());
  else
    ctx.set_attr("dim", *dims);
  bool keepdim = ctx.get_bool("keepdim");
  return TensorType{in.dtype, ops::reduced_symbolic_shape(in.shape, *dims, keepdim)};
}

// ---- References ----

// The normalized, sorted dims a node reduces over. Inference has already
// canonicalized them; raw attributes are accepted too for robustness.
std::vector<int64_t> reference_dims(const ReferenceContext& ctx, size_t rank) {
  if (rank == 0)
    return {}; // a 0-d tensor is its own reduction
  const AttrValue& value = ctx.attrs.at("dim");
  std::vector<int64_t> dims;
  if (!std::holds_alternative<NoneAttr>(value))
    dims = ctx.get_ints("dim");
  if (dims.empty())
    return all_dims(rank);
  for (int64_t& dim : dims)
    dim = dim < 0 ? dim + static_cast<int64_t>(rank) : dim;
  std::sort(dims.begin(), dims.end());
  return dims;
}

// Number of input elements folded into each output element.
int64_t slice_size(const HostTensor& in, const std::vector<int64_t>& dims) {
  int64_t size = 1;
  for (int64_t dim : dims)
    size *= in.shape[static_cast<size_t>(dim)];
  return size;
}

using Combine = double (*)(double acc, double x);

// Folds every reduced slice of `in` into `out`, starting from `init`.
void fold(const HostTensor& in, const std::vector<int64_t>& dims, double init, Combine combine,
          std::vector<double>& out) {
  std::fill(out.begin(), out.end(), init);
  ops::for_each_reduced(in.shape, dims, [&](int64_t out_index, int64_t in_index) {
    double& acc = out[static_cast<size_t>(out_index)];
    acc = combine(acc, in.data[static_cast<size_t>(in_index)]);
  });
}

double plus(double acc, double x) { return acc + x; }
// torch's max/min reductions propagate NaN.
double nan_max(double acc, double x) { return std::isnan(acc) || acc >= x ? acc : x; }
double nan_min(double acc, double x) { return std::isnan(acc) || acc <= x ? acc : x; }

using Reducer = void (*)(const HostTensor& in, const std::vector<int64_t>& dims,
                         std::vector<double>& out);

void reduce_sum(const HostTensor& in, const std::vector<int64_t>& dims, std::vector<double>& out) {
  fold(in, dims, 0.0, plus, out);
}

void reduce_mean(const HostTensor& in, const std::vector<int64_t>& dims, std::vector<double>& out) {
  fold(in, dims, 0.0, plus, out);
  // An empty slice gives 0/0 = NaN, as in torch.
  double count = static_cast<double>(slice_size(in, dims));
  for (double& v : out)
    v /= count;
}

// Extremum of each slice; NaN for an empty slice (inference rejects constant
// zero-size dims, but a symbol may still be bound to 0 at run time).
void reduce_extremum(const HostTensor& in, const std::vector<int64_t>& dims, double init,
                     Combine combine, std::vector<double>& out) {
  fold(in, dims, init, combine, out);
  if (slice_size(in, dims) == 0)
    std::fill(out.begin(), out.end(), kNaN);
}

void reduce_max(const HostTensor& in, const std::vector<int64_t>& dims, std::vector<double>& out) {
  reduce_extremum(in, dims, -kInf, nan_max, out);
}

void reduce_min(const HostTensor& in, const std::vector<int64_t>& dims, std::vector<double>& out) {
  reduce_extremum(in, dims, kInf, nan_min, out);
}

// torch's algorithm: shift by the slice max (by 0 where that max is infinite,
// so an all -inf slice gives -inf rather than NaN), sum the exps, log, unshift.
void reduce_logsumexp(const HostTensor& in, const std::vector<int64_t>& dims,
                      std::vector<double>& out) {
  std::vector<double> shift(out.size());
  fold(in, dims, -kInf, nan_max, shift);
  for (double& m : shift)
    m = std::isinf(m) ? 0.0 : m;
  std::fill(out.begin(), out.end(), 0.0);
  ops::for_each_reduced(in.shape, dims, [&](int64_t out_index, int64_t in_index) {
    auto o = static_cast<size_t>(out_index);
    out[o] += std::exp(in.data[static_cast<size_t>(in_index)] - shift[o]);
  });
  for (size_t o = 0; o < out.size(); ++o)
    out[o] = std::log(out[o]) + shift[o];
}

struct ReductionOp {
  std::string name;
  DimParam dim;
  bool needs_nonempty; // no identity element: reducing a zero-size dim is an error
  Reducer reduce;
  Statistic statistic;
};

void add_reduction(OpRegistry& registry, const ReductionOp& op) {
  DimParam dim = op.dim;
  bool needs_nonempty = op.needs_nonempty;
  Reducer reduce = op.reduce;
  registry.add({
      .name = op.name,
      .kind = OpKind::Reduction,
      .params = {ops::tensor("input"), dim_param(dim), ops::attr("keepdim", ParamKind::Bool, false)},
      .infer = [dim, needs_nonempty](ShapeContext& ctx) { return infer_reduction(ctx, dim, needs_nonempty); },
      .reference =
          [reduce](ReferenceContext& ctx) {
            const HostTensor& in = *ctx.tensor("input");
            reduce(in, reference_dims(ctx, in.rank()), ctx.out.data);
          },
      .mutates = {},
      .traits = {.statistic = op.statistic},
  });
}

} // namespace

void register_reduction_ops(OpRegistry& registry) {
  const ReductionOp table[] = {
      {"sum", DimParam::OptionalInts, false, reduce_sum, Statistic::Sum},
      {"mean", DimParam::OptionalInts, false, reduce_mean, Statistic::Mean},
      {"amax", DimParam::OptionalInts, true, reduce_max, Statistic::Max},
      {"amin", DimParam::OptionalInts, true, reduce_min, Statistic::Min},
      {"max", DimParam::Int, true, reduce_max, Statistic::Max}, // values only, no indices
      {"min", DimParam::Int, true, reduce_min, Statistic::Min},
      {"logsumexp", DimParam::Ints, false, reduce_logsumexp, Statistic::LogSumExp},
  };
  for (const ReductionOp& op : table)
    add_reduction(registry, op);
}

} // namespace fusegen
