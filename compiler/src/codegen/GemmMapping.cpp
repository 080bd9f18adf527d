// GEMM operand mappings (GemmParts.h): linear and matmul (convolutions are
// ConvMapping.cpp's) onto
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

} // namespace

Result<GemmMapping> map_contraction(const EmitContext& ctx, const Node& node) {
  const OpTraits& traits = plan::traits_of(node);
  switch (traits.contraction) {
  case ContractionForm::RowsTimesWeight:
    return map_linear(ctx, node);
  case ContractionForm::BatchedMatmul:
    return map_matmul(ctx, node);
  case ContractionForm::Convolution:
    return map_convolution(ctx, node);
  case ContractionForm::None:
    break;
  }
  return Error{"internal error: a GEMM kernel anchored on " + node.op};
}

} // namespace fusegen::codegen
