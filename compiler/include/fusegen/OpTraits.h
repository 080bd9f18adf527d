// What the planner and the emitters need to know about an op beyond its kind,
// declared with the op in its registry entry (compiler/src/ops/) so that
// later stages query traits and never compare op names (MLIR's op traits).
// A new op of a known family is then one registry entry: the planner and the
// emitters pick it up from its traits. The unit test
// OpTraits.NoOpNameComparisonOutsideTheRegistry fails CI on an op-name
// comparison outside the registry.
#pragma once

#include "fusegen/IR.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace fusegen {

// The statistic a reduction-like op computes over its reduced dims.
enum class Statistic : uint8_t {
  None,
  Sum, // reductions: the reduced values combined into one
  Mean,
  Max,
  Min,
  LogSumExp,
  Moments, // normalizations: mean and variance, then (x - mean) / std
  Softmax, // max and sum of exp over the dim, applied to every element
  LogSoftmax,
};

// "Sum", "Mean", ..., "LogSoftmax"; "None". The reduction templates name
// their modes after it (kRowSum, kGenSoftmax).
const char* statistic_name(Statistic statistic);

// Where a normalization's optional weight and bias are indexed.
enum class AffineLayout : uint8_t {
  None,
  PerChannel,      // [C], dim 1 of the input (group_norm, instance_norm, batch_norm)
  OverReducedDims, // the shape of the reduced trailing dims (layer_norm)
};

// How a contraction maps onto the GEMM C[M, N] = sum_k A[M, k] * B[k, N]
// that the GEMM kernels run: which operand dims become rows, columns, depth
// and batches, and how A is addressed.
enum class ContractionForm : uint8_t {
  None,
  RowsTimesWeight, // x[..., K] . w[N, K]^T: x's leading dims are the rows, w is [N, K] (linear)
  BatchedMatmul,   // a[..., M, K] . b[..., K, N] with broadcast batch dims (matmul)
  Convolution,     // x[N, C, spatial...] * w[Cout, C/groups, k...]: implicit im2col of x
};

// How a window op combines the elements under its window.
enum class WindowCombine : uint8_t { None, Max, Average };

struct OpTraits {
  Statistic statistic = Statistic::None;
  // Reduced dims of an input of the given rank, sorted. Empty: the op's `dim`
  // attribute (all dims when None), as for sum or softmax.
  std::function<std::vector<int64_t>(const Attrs&, size_t rank)> reduced_dims = {};
  // A statistic per sample and group of consecutive channels (group_norm):
  // the number of groups. Empty: the reduced dims alone say what a
  // statistic covers.
  std::function<int64_t(const Attrs&)> channel_groups = {};
  AffineLayout affine = AffineLayout::None;
  ContractionForm contraction = ContractionForm::None;
  WindowCombine window = WindowCombine::None;
  bool adaptive_window = false; // window extents derived from the output size
  int spatial_dims = 0;         // convolutions and windows: the trailing dims they slide over
  // Convolutions: weight [C_in, C_out/groups, k...], the gradient of a
  // convolution with respect to its input (conv_transpose*).
  bool transposed = false;
};

} // namespace fusegen
