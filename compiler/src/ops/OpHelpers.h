// Small helpers shared by the op families' shape inference and reference code.
#pragma once

#include "fusegen/HostTensor.h"
#include "fusegen/OpRegistry.h"

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace fusegen::ops {

// Parameter-list shorthands for registry entries.
inline ParamSpec tensor(std::string name, ParamInit init = ParamInit::Normal) {
  return {std::move(name), ParamKind::Tensor, std::nullopt, init};
}
inline ParamSpec optional_tensor(std::string name, ParamInit init = ParamInit::Normal) {
  return {std::move(name), ParamKind::OptionalTensor, std::nullopt, init};
}
inline ParamSpec attr(std::string name, ParamKind kind) { return {std::move(name), kind, std::nullopt}; }
inline ParamSpec attr(std::string name, ParamKind kind, AttrValue default_value) {
  return {std::move(name), kind, std::move(default_value)};
}

// The flat index into `in` (whose shape broadcasts to `out_shape`) of every
// element of the output, in output order. `in` may have lower rank.
std::vector<int64_t> broadcast_indices(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape);

// Splits `shape` into (outer, reduced, inner) extents for a reduction over the
// sorted, unique `dims`, when those dims are contiguous; general reductions use
// reduce_axes below.
// Calls `fn(out_index, in_index)` for every input element, where out_index is
// the flat index of the element it reduces into (reduced dims removed).
void for_each_reduced(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& dims,
                      const std::function<void(int64_t out_index, int64_t in_index)>& fn);

// Shape with `dims` (sorted, normalized) removed, or set to 1 when keepdim.
std::vector<int64_t> reduced_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims,
                                   bool keepdim);

// Normalizes `dims` (the value of attribute `param`) for a tensor of `rank`:
// negative dims made positive, sorted. Reports an out-of-range or repeated dim
// at `param` and returns nullopt.
std::optional<std::vector<int64_t>> normalize_dims(ShapeContext& ctx, std::string_view param,
                                                   const std::vector<int64_t>& dims, size_t rank);

// Symbolic counterpart of reduced_shape: kept dims pass through unchanged.
Shape reduced_symbolic_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim);

// A CUDA float literal holding exactly float(value): "0.00999999978f",
// "-1.0f"; infinities and NaN through bit patterns (NVRTC has no math.h).
std::string cuda_float(double value);

} // namespace fusegen::ops

namespace fusegen::ops {

// ---- (H, W) attributes of conv and pooling ops ----

// Reads an int-or-tuple attribute that describes the two spatial dims (H, W);
// one int applies to both. Stores it back as a 2-element tuple so equal
// programs print alike. Reports other lengths and strings (e.g. "same").
std::optional<std::vector<int64_t>> spatial_pair_attr(ShapeContext& ctx, const std::string& param);
// The (H, W) pair of an int-or-tuple value at reference time (canonical or not).
std::vector<int64_t> spatial_pair(const std::vector<int64_t>& values);
// The N-d form (N = 1, 2, 3) of spatial_pair_attr: one int applies to every
// spatial dim; stored back as an N-element tuple. N == 2 is spatial_pair_attr.
std::optional<std::vector<int64_t>> spatial_attr(ShapeContext& ctx, const std::string& param, size_t n);
// The N values of an int-or-tuple value at reference time (canonical or not).
std::vector<int64_t> spatial_values(const std::vector<int64_t>& values, size_t n);
// "L", "H, W" or "D, H, W": the names of N trailing spatial dims.
std::string spatial_names(size_t n);
// The optional `bias` operand: absent, or 1-d [out] (`out` is the weight's
// output-feature dim). Reports other shapes.
bool check_bias(ShapeContext& ctx, const Dim& out, const TensorType& weight);
// "3x3" for {3, 3}.
std::string pair_str(const std::vector<int64_t>& values);
// `shape` with every symbol that inference has fixed replaced by its constant.
Shape resolve_shape(const ShapeContext& ctx, const Shape& shape);

} // namespace fusegen::ops
