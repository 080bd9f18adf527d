// GEMM operand mappings (GemmParts.h): linear, matmul and a 2-D convolution
// (implicit GEMM: im2col addressing in the operand loads) onto
// templates/gemm.cu's C[b][m][n] = sum_k A(b, m, k) * B(b, k, n).
#include "codegen/BatchNormStats.h"
#include "codegen/Emitters.h"
#include "codegen/GemmParts.h"
#include "codegen/HookBody.h"
#include "codegen/KernelParts.h"
#include "codegen/PointwiseEmitter.h"
#include "fusegen/OpRegistry.h"
#include "ops/OpHelpers.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace fusegen::codegen {

bool mentions(const std::vector<std::string>& lines, const std::string& name) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return uses(line, name); });
}

ValueId operand(const Node& node, const char* param) {
  int slot = OpRegistry::builtin().find(node.op)->tensor_slot(param);
  return slot < 0 ? kNoId : node.operands[static_cast<size_t>(slot)];
}

const Shape& shape_of(const EmitContext& ctx, ValueId value) { return ctx.fusion().value(value).type.shape; }

// Inserts `(void)name;` after the first `defined` lines of `body` for each of
// `names` the rest of the body does not use (decoded coordinates).
std::vector<std::string> void_unused(std::vector<std::string> body, size_t defined,
                                     const std::vector<std::string>& names) {
  std::vector<std::string> rest(body.begin() + static_cast<std::ptrdiff_t>(defined), body.end());
  std::vector<std::string> voids;
  for (const std::string& name : names)
    if (name != "m" && name != "n" && !mentions(rest, name))
      voids.push_back("(void)" + name + ";");
  body.insert(body.begin() + static_cast<std::ptrdiff_t>(defined), voids.begin(), voids.end());
  return body;
}

namespace {

// ---- contraction mappings ----

// linear: x [..., K] (leading dims flattened into m), weight [N, K], bias [N].
GemmMapping map_linear(const EmitContext& ctx, const Node& node) {
  const Shape& x = shape_of(ctx, operand(node, "input"));
  const Shape& w = shape_of(ctx, operand(node, "weight"));
  const Shape& out = shape_of(ctx, node.result);
  GemmMapping g;
  size_t lead = x.size() - 1;
  g.rows = ctx.product(x, 0, lead);
  g.cols = ctx.dim(w[0]);
  g.depth = ctx.dim(w[1]);
  g.batches = "1LL";
  g.launch_rows = ctx.size(x, 0, lead);
  g.launch_cols = ctx.size(w, 0, 1);
  g.launch_batches = ctx.constant(1);
  g.launch_depth = ctx.size(w, 1, 2);
  g.a_along_k = g.b_along_k = true;
  const plan::VectorOperands vectors = plan::vector_operands(ctx.fusion(), node);
  g.a_vector = vectors.a;
  g.b_vector = vectors.b;
  g.a_offset = g.b_offset = {"return 0;"};
  g.a_address = {"return " + (ctx.value_buffer(operand(node, "input")) + " + m * " + g.depth + " + k") + ";"};
  g.b_address = {"return " + (ctx.value_buffer(operand(node, "weight")) + " + n * " + g.depth + " + k") + ";"};
  if (out.size() == 1) {
    g.coords = {"n"};
  } else if (out.size() == 2) {
    g.coords = {"m", "n"};
    g.is_matrix = true;
  } else {
    Shape leading(out.begin(), out.end() - 1);
    decode_index(ctx, leading, "m", "o", g.coord_lines);
    for (size_t d = 0; d < leading.size(); ++d)
      g.coords.push_back("o" + std::to_string(d));
    g.coords.push_back("n");
  }
  if (ValueId bias = operand(node, "bias"); bias != kNoId)
    g.bias = ctx.value_buffer(bias) + "[n]";
  return g;
}

// matmul with torch semantics: a [..., M, K] or [K], b [..., K, N] or [K];
// broadcast batch dims are folded into the batch index (a dim of 1 broadcasts).
GemmMapping map_matmul(const EmitContext& ctx, const Node& node) {
  ValueId a_id = operand(node, "input"), b_id = operand(node, "other");
  const Shape& a = shape_of(ctx, a_id);
  const Shape& b = shape_of(ctx, b_id);
  const Shape& out = shape_of(ctx, node.result);
  bool a_matrix = a.size() >= 2, b_matrix = b.size() >= 2;
  Shape a_batch(a.begin(), a.end() - (a_matrix ? 2 : 1));
  Shape b_batch(b.begin(), b.end() - (b_matrix ? 2 : 1));
  Shape batch(out.begin(), out.end() - (a_matrix ? 1 : 0) - (b_matrix ? 1 : 0));
  GemmMapping g;
  g.rows = a_matrix ? ctx.dim(a[a.size() - 2]) : "1LL";
  g.cols = b_matrix ? ctx.dim(b.back()) : "1LL";
  g.depth = ctx.dim(a.back());
  g.batches = ctx.product(batch, 0, batch.size());
  g.launch_rows = a_matrix ? ctx.size(a, a.size() - 2, a.size() - 1) : ctx.constant(1);
  g.launch_cols = b_matrix ? ctx.size(b, b.size() - 1, b.size()) : ctx.constant(1);
  g.launch_batches = ctx.size(batch, 0, batch.size());
  g.launch_depth = ctx.size(a, a.size() - 1, a.size());
  g.a_along_k = true;
  g.b_along_k = !b_matrix;
  const plan::VectorOperands vectors = plan::vector_operands(ctx.fusion(), node);
  g.a_vector = vectors.a;
  g.b_vector = vectors.b;

  std::vector<std::string> batch_lines, batch_coords;
  decode_index(ctx, batch, "batch", "b", batch_lines);
  for (size_t d = 0; d < batch.size(); ++d)
    batch_coords.push_back("b" + std::to_string(d));
  auto batch_offset = [&](const Shape& operand_batch, const std::string& matrix_size) {
    if (operand_batch.empty())
      return std::vector<std::string>{"return 0;"};
    std::vector<std::string> body = batch_lines;
    body.push_back("return (" + broadcast_offset(ctx, operand_batch, batch_coords) + ") * " + matrix_size + ";");
    return void_unused(body, batch_lines.size(), batch_coords);
  };
  g.a_offset = batch_offset(a_batch, "(" + g.rows + " * " + g.depth + ")");
  g.b_offset = batch_offset(b_batch, "(" + g.depth + " * " + g.cols + ")");
  std::string a_row = a_matrix ? "m * " + g.depth + " + " : "";
  g.a_address = {"return " + (ctx.value_buffer(a_id) + " + a_base + " + a_row + "k") + ";"};
  std::string b_index = b_matrix ? "k * " + g.cols + " + n" : "k";
  g.b_address = {"return " + (ctx.value_buffer(b_id) + " + b_base + " + b_index) + ";"};

  g.coord_lines = batch_lines;
  g.coords = batch_coords;
  if (a_matrix)
    g.coords.push_back("m");
  if (b_matrix)
    g.coords.push_back("n");
  g.is_matrix = batch.empty() && a_matrix && b_matrix;
  return g;
}

std::pair<int64_t, int64_t> pair_attr(const Node& node, const char* name) {
  const auto& values = std::get<std::vector<int64_t>>(node.attrs.at(name));
  return {values.at(0), values.at(1)};
}

// conv2d as implicit GEMM: batch = (sample, conv group), m = output position
// (oh, ow), n = output channel within the group, k = (input channel, kh, kw).
// A is gathered from the input (zero padding by bounds checks), B is the
// weight [O, C/groups * kh * kw] read as [N, K].
Result<GemmMapping> map_conv(const EmitContext& ctx, const Node& node) {
  ValueId x_id = operand(node, "input"), w_id = operand(node, "weight");
  const Shape& x = shape_of(ctx, x_id);
  const Shape& w = shape_of(ctx, w_id);
  const Shape& out = shape_of(ctx, node.result);
  size_t spatial = x.size() - 2;
  for (size_t d = x.size() - 3; d < x.size(); ++d)
    if (!x[d].is_constant())
      return Error{"conv2d input " + shape_str(x) +
                   " has a symbolic channel or spatial dim; the GEMM kernel "
                   "needs them constant"};
  if (!shape_is_constant(w))
    return Error{"conv2d weight " + shape_str(w) + " has symbolic dims; the GEMM kernel needs them constant"};
  int64_t channels = x[spatial - 1].value(), height = x[spatial].value(), width = x[spatial + 1].value();
  int64_t out_channels = w[0].value(), group_channels = w[1].value(), kh = w[2].value(), kw = w[3].value();
  int64_t out_height = out[out.size() - 2].value(), out_width = out[out.size() - 1].value();
  int64_t groups = std::get<int64_t>(node.attrs.at("groups"));
  auto [stride_h, stride_w] = pair_attr(node, "stride");
  auto [pad_h, pad_w] = pair_attr(node, "padding");
  auto [dil_h, dil_w] = pair_attr(node, "dilation");
  int64_t taps = kh * kw, depth = group_channels * taps, positions = out_height * out_width;
  int64_t group_outputs = out_channels / groups, plane = height * width;
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (positions > kIntMax || depth > kIntMax || plane > kIntMax)
    return Error{"conv2d output positions, K or input plane exceed 2^31 - 1"};
  bool batched = x.size() == 4;
  std::string n_text = std::to_string(groups) + "LL";
  auto num = [](int64_t v) { return std::to_string(v); };

  GemmMapping g;
  g.rows = num(positions) + "LL";
  g.cols = num(group_outputs) + "LL";
  g.depth = num(depth) + "LL";
  g.launch_rows = ctx.constant(positions);
  g.launch_cols = ctx.constant(group_outputs);
  g.launch_depth = ctx.constant(depth);
  if (batched) {
    g.batches = groups == 1 ? ctx.dim(x[0]) : "(" + ctx.dim(x[0]) + " * " + n_text + ")";
    g.launch_batches = ctx.mul(ctx.size(x, 0, 1), ctx.constant(groups));
  } else {
    g.batches = n_text;
    g.launch_batches = ctx.constant(groups);
  }
  g.a_along_k = false; // consecutive output positions read neighbouring input pixels
  g.b_along_k = true;
  g.out_along_m = true; // NCHW: an output channel's pixels are adjacent

  // A: the first input channel of (sample, conv group), then the gathered pixel.
  std::string sample_plane = num(channels * plane) + "LL";
  if (groups == 1)
    g.a_offset = {"return batch * " + sample_plane + ";"};
  else
    g.a_offset = {"return (batch / " + n_text + ") * " + sample_plane + " + (batch % " + n_text + ") * " +
                  num(group_channels * plane) + "LL;"};
  std::vector<std::string>& load = g.a_address;
  load.push_back("const int p = static_cast<int>(m);");
  load.push_back("const int oh = p / " + num(out_width) + ", ow = p % " + num(out_width) + ";");
  load.push_back("const int kq = static_cast<int>(k);");
  if (taps == 1) {
    load.push_back("const int c = kq, i = 0, j = 0;");
  } else {
    load.push_back("const int c = kq / " + num(taps) + ", tap = kq % " + num(taps) + ";");
    load.push_back("const int i = tap / " + num(kw) + ", j = tap % " + num(kw) + ";");
  }
  auto position = [&](const char* out_coord, const char* tap, int64_t stride, int64_t pad, int64_t dilation) {
    std::string text = std::string(out_coord) + (stride == 1 ? "" : " * " + num(stride));
    if (pad != 0)
      text += " - " + num(pad);
    return text + " + " + tap + (dilation == 1 ? "" : " * " + num(dilation));
  };
  load.push_back("const int ih = " + position("oh", "i", stride_h, pad_h, dil_h) + ";");
  load.push_back("const int iw = " + position("ow", "j", stride_w, pad_w, dil_w) + ";");
  // Without padding every tap of a valid output position is inside the input.
  std::string outside;
  if (pad_h != 0)
    outside += "ih < 0 || ih >= " + num(height);
  if (pad_w != 0)
    outside += std::string(outside.empty() ? "" : " || ") + "iw < 0 || iw >= " + num(width);
  if (!outside.empty())
    load.push_back("if (" + outside + ") return nullptr; // zero padding");
  std::string channel_offset =
      group_channels * plane > kIntMax ? "static_cast<long long>(c) * " + num(plane) + "LL" : "c * " + num(plane);
  load.push_back("return " +
                 (ctx.value_buffer(x_id) + " + a_base + " + channel_offset + " + ih * " + num(width) + " + iw") + ";");
  // Without padding the address separates into the output pixel's corner
  // (per row) and the tap's offset from it (per k, tabled once per block).
  if (pad_h == 0 && pad_w == 0 && depth <= kMaxDepthTable && group_channels * plane <= kIntMax) {
    g.a_depth_table = depth;
    g.a_row = {"const int p = static_cast<int>(m);",
               "const int oh = p / " + num(out_width) + ", ow = p % " + num(out_width) + ";",
               "return " + ctx.value_buffer(x_id) + " + a_base + oh * " + num(stride_h * width) + " + ow" +
                   (stride_w == 1 ? "" : " * " + num(stride_w)) + ";"};
    std::vector<std::string>& offset = g.a_depth_offset;
    offset.push_back("const int kq = static_cast<int>(k);");
    offset.push_back(taps == 1 ? "const int c = kq, i = 0, j = 0;"
                               : "const int c = kq / " + num(taps) + ", tap = kq % " + num(taps) + ";");
    if (taps != 1)
      offset.push_back("const int i = tap / " + num(kw) + ", j = tap % " + num(kw) + ";");
    offset.push_back("return c * " + num(plane) + " + i" + (dil_h == 1 ? "" : " * " + num(dil_h)) + " * " + num(width) +
                     " + j" + (dil_w == 1 ? "" : " * " + num(dil_w)) + ";");
  }

  if (groups == 1)
    g.b_offset = {"return 0;"};
  else
    g.b_offset = {"return (batch % " + n_text + ") * " + num(group_outputs * depth) + "LL;"};
  g.b_address = {"return " + (ctx.value_buffer(w_id) + " + b_base + n * " + g.depth + " + k") + ";"};

  std::string sample = groups == 1 ? "batch" : "batch / " + n_text;
  std::string channel = groups == 1 ? "n" : "(batch % " + n_text + ") * " + num(group_outputs) + "LL + n";
  if (batched)
    g.coord_lines.push_back("const long long sample = " + sample + ";");
  g.coord_lines.push_back("const long long o = " + channel + ";");
  g.coord_lines.push_back("const long long oh = m / " + num(out_width) + "LL, ow = m % " + num(out_width) + "LL;");
  if (batched)
    g.coords.push_back("sample");
  g.coords.insert(g.coords.end(), {"o", "oh", "ow"});
  if (ValueId bias = operand(node, "bias"); bias != kNoId)
    g.bias = ctx.value_buffer(bias) + "[o]";
  return g;
}

} // namespace

Result<GemmMapping> map_contraction(const EmitContext& ctx, const Node& node) {
  const OpTraits& traits = plan::traits_of(node);
  switch (traits.contraction) {
  case ContractionForm::RowsTimesWeight:
    return map_linear(ctx, node);
  case ContractionForm::BatchedMatmul:
    return map_matmul(ctx, node);
  case ContractionForm::Convolution:
    if (traits.spatial_dims == 2)
      return map_conv(ctx, node);
    break;
  case ContractionForm::None:
    break;
  }
  return Error{"internal error: a GEMM kernel anchored on " + node.op};
}

} // namespace fusegen::codegen
