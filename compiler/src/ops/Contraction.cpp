// Contraction ops: linear and matmul (convolutions are in Convolution.cpp). Shape inference mirrors the
// checks torch makes; the references are plain loops in double.
#include "ops/OpHelpers.h"

#include <algorithm>

namespace fusegen {
namespace {

using ops::attr;
using ops::optional_tensor;
using ops::tensor;

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
  if (!ops::check_bias(ctx, w.shape[0], w))
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
}

} // namespace fusegen
