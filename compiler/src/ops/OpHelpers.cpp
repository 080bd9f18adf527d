#include "ops/OpHelpers.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <string>

namespace fusegen::ops {

std::vector<int64_t> broadcast_indices(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape) {
  assert(in_shape.size() <= out_shape.size());
  size_t rank = out_shape.size(), offset = rank - in_shape.size();
  // Stride of each output dim in the input (0 where the input broadcasts).
  std::vector<int64_t> in_strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = in_shape.size(); i-- > 0;) {
    in_strides[i + offset] = in_shape[i] == 1 ? 0 : stride;
    stride *= in_shape[i];
  }
  int64_t total = numel_of(out_shape);
  std::vector<int64_t> result(static_cast<size_t>(total));
  std::vector<int64_t> counter(rank, 0);
  int64_t in_index = 0;
  for (int64_t i = 0; i < total; ++i) {
    result[static_cast<size_t>(i)] = in_index;
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < out_shape[d]) {
        in_index += in_strides[d];
        break;
      }
      in_index -= in_strides[d] * (out_shape[d] - 1);
      counter[d] = 0;
    }
  }
  return result;
}

void for_each_reduced(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& dims,
                      const std::function<void(int64_t, int64_t)>& fn) {
  size_t rank = in_shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : dims)
    reduced[static_cast<size_t>(d)] = true;
  // Output strides over the kept dims.
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    if (reduced[i])
      continue;
    out_strides[i] = stride;
    stride *= in_shape[i];
  }
  int64_t total = numel_of(in_shape);
  if (total == 0)
    return;
  std::vector<int64_t> counter(rank, 0);
  int64_t out_index = 0;
  for (int64_t i = 0; i < total; ++i) {
    fn(out_index, i);
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < in_shape[d]) {
        out_index += out_strides[d];
        break;
      }
      out_index -= out_strides[d] * (in_shape[d] - 1);
      counter[d] = 0;
    }
  }
}

std::vector<int64_t> reduced_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims,
                                   bool keepdim) {
  std::vector<int64_t> result;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool is_reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!is_reduced)
      result.push_back(shape[i]);
    else if (keepdim)
      result.push_back(1);
  }
  return result;
}


std::optional<std::vector<int64_t>> normalize_dims(ShapeContext& ctx, std::string_view param,
                                                   const std::vector<int64_t>& dims, size_t rank) {
  std::vector<int64_t> result;
  for (int64_t dim : dims) {
    std::optional<int64_t> normalized = ctx.normalize_dim(param, dim, rank);
    if (!normalized)
      return std::nullopt;
    if (std::find(result.begin(), result.end(), *normalized) != result.end()) {
      ctx.error(param, "dim " + std::to_string(*normalized) + " appears twice");
      return std::nullopt;
    }
    result.push_back(*normalized);
  }
  std::sort(result.begin(), result.end());
  return result;
}

Shape reduced_symbolic_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  Shape result;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool is_reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!is_reduced)
      result.push_back(shape[i]);
    else if (keepdim)
      result.push_back(Dim::constant(1));
  }
  return result;
}

} // namespace fusegen::ops

namespace fusegen::ops {

std::optional<std::vector<int64_t>> spatial_pair_attr(ShapeContext& ctx, const std::string& param) {
  return spatial_attr(ctx, param, 2);
}

std::optional<std::vector<int64_t>> spatial_attr(ShapeContext& ctx, const std::string& param, size_t n) {
  static const char* const kShapes[] = {"", "a 1-tuple of ints (L)", "a pair of ints (H, W)",
                                        "a triple of ints (D, H, W)"};
  const std::string shape = n == 2 ? "a pair of ints" : kShapes[n];
  auto it = ctx.attrs().find(param);
  if (it != ctx.attrs().end() && std::holds_alternative<std::string>(it->second))
    return ctx.error(param,
                     "string " + param + " values such as \"same\" are not supported; " + "give an int or " + shape);
  if (it == ctx.attrs().end() || !(std::holds_alternative<int64_t>(it->second) ||
                                   std::holds_alternative<std::vector<int64_t>>(it->second)))
    return ctx.error(param, param + " must be an int or " + shape);
  std::vector<int64_t> values = ctx.get_ints(param);
  if (values.size() != 1 && values.size() != n)
    return ctx.error(param, param + " must be an int or " + kShapes[n] + " but got " + std::to_string(values.size()) +
                                " values");
  std::vector<int64_t> result = spatial_values(values, n);
  ctx.set_attr(param, result);
  return result;
}

std::vector<int64_t> spatial_pair(const std::vector<int64_t>& values) {
  assert(!values.empty());
  return {values.front(), values.back()};
}

std::vector<int64_t> spatial_values(const std::vector<int64_t>& values, size_t n) {
  assert(!values.empty());
  if (values.size() == n)
    return values;
  return std::vector<int64_t>(n, values.front());
}

std::string spatial_names(size_t n) { return n == 1 ? "L" : n == 2 ? "H, W" : "D, H, W"; }

bool check_bias(ShapeContext& ctx, const Dim& out, const TensorType& weight) {
  const TensorType* bias = ctx.tensor("bias");
  if (!bias)
    return true;
  if (bias->rank() != 1) {
    ctx.error("bias", "expected a 1-d bias [" + out.str() + "] but got " + shape_str(bias->shape));
    return false;
  }
  return ctx.unify(bias->shape[0], out,
                   "bias has " + shape_str(bias->shape) + " but weight has " + shape_str(weight.shape) +
                       ": expected one bias value per output");
}

std::string pair_str(const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? "x" : "") + std::to_string(values[i]);
  return out;
}

Shape resolve_shape(const ShapeContext& ctx, const Shape& shape) {
  Shape result;
  for (const Dim& d : shape)
    result.push_back(ctx.resolve(d));
  return result;
}

std::string cuda_float(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(f))
    return "__int_as_float(0x7fc00000)";
  if (std::isinf(f))
    return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char text[48];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(f));
  std::string literal = text;
  if (literal.find_first_of(".e") == std::string::npos)
    literal += ".0";
  return literal + "f";
}

} // namespace fusegen::ops
