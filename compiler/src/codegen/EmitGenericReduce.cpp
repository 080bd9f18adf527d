// Generic reductions (templates/generic_reduce.cu): a reduction over dims that
// are not the trailing ones, or softmax/log_softmax along a dim that is not
// the last, with an optional pointwise prologue on the input and epilogue on
// the result. One thread per independent row; the row's elements are found
// with general index math (kept coordinates from the row index, reduced ones
// from the element index). See docs/kernels-reduce.md.
#include "codegen/Emitters.h"
#include "codegen/HookBody.h"
#include "codegen/KernelParts.h"
#include "codegen/PointwiseEmitter.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

namespace fusegen::codegen {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 65536; // grid-stride beyond this

// Declares the coordinates of `dims` (ascending dims of `shape`) as the
// row-major decoding of flat `index` over their extents, and records their
// names (or "0LL" for extent-1 dims) in `coords`.
void declare_coordinates(const EmitContext& ctx, const Shape& shape, const std::vector<int64_t>& dims,
                         const std::string& index, Body& body, std::vector<std::string>& coords) {
  Shape extents;
  for (int64_t d : dims)
    extents.push_back(shape[static_cast<size_t>(d)]);
  for (size_t t = 0; t < dims.size(); ++t) {
    auto d = static_cast<size_t>(dims[t]);
    if (is_unit(extents[t])) {
      coords[d] = "0LL";
      continue;
    }
    std::string stride = ctx.product(extents, t + 1, extents.size());
    std::string expr = stride == "1LL" ? index : "(" + index + " / " + stride + ")";
    if (t > 0)
      expr += " % " + ctx.dim(extents[t]);
    coords[d] = "c" + std::to_string(d);
    body.declare(coords[d], "const long long " + coords[d] + " = " + expr + ";");
  }
}

// Row-major offset of coordinates `coords` in `shape`.
std::string offset_of(const EmitContext& ctx, const Shape& shape, const std::vector<std::string>& coords) {
  std::string offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (coords[d] == "0LL")
      continue;
    std::string stride = ctx.product(shape, d + 1, shape.size());
    offset += (offset.empty() ? "" : " + ") + (stride == "1LL" ? coords[d] : coords[d] + " * " + stride);
  }
  return offset.empty() ? "0LL" : offset;
}

// ---- what the kernel computes ----

// templates/generic_reduce.cu's kAnchor for the node's statistic; none for
// the normalizations by moments, which run on row_reduce.cu.
std::optional<std::string> anchor_constant(const Node& node) {
  const Statistic statistic = plan::traits_of(node).statistic;
  if (statistic == Statistic::Moments || statistic == Statistic::None)
    return std::nullopt;
  return std::string("kGen") + statistic_name(statistic);
}

bool is_softmax(const Node& node) {
  Statistic statistic = plan::traits_of(node).statistic;
  return statistic == Statistic::Softmax || statistic == Statistic::LogSoftmax;
}

// The anchor's input split into kept dims (one row per combination) and
// reduced dims (the row's elements).
struct RowLayout {
  const Node* anchor = nullptr;
  Shape input;
  std::vector<int64_t> kept, reduced;
  Shape kept_extents, reduced_extents;
};

Result<RowLayout> analyze(const EmitContext& ctx) {
  const Fusion& fusion = ctx.fusion();
  const KernelStep& step = ctx.step();
  if (step.stages.size() != 1 || step.stages[0].op == kNoId)
    return Error{"internal error: generic_reduce kernel " + step.name + " needs exactly one anchor stage"};
  if (step.stats_out != kNoId)
    return Error{"internal error: generic_reduce kernels do not emit partial statistics"};
  RowLayout layout;
  layout.anchor = &fusion.node(step.stages[0].op);
  if (!anchor_constant(*layout.anchor))
    return Error{"generic_reduce: " + layout.anchor->op +
                 " is not supported (normalizations other than softmax/log_softmax reduce trailing dims and run as "
                 "row_reduce kernels)"};
  layout.input = fusion.value(layout.anchor->operands[0]).type.shape;
  std::vector<int64_t> dims = plan::reduced_dims(fusion, *layout.anchor);
  for (size_t d = 0; d < layout.input.size(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
    (reduced ? layout.reduced : layout.kept).push_back(static_cast<int64_t>(d));
    (reduced ? layout.reduced_extents : layout.kept_extents).push_back(layout.input[d]);
  }
  // The prologue feeds only the anchor's input; the epilogue only its own stage.
  std::set<ValueId> prologue;
  for (NodeId id : step.prologue)
    prologue.insert(fusion.node(id).result);
  for (const auto& [value, buffer] : stored_values(ctx))
    if (prologue.count(value))
      return Error{"internal error: generic_reduce prologue value v" + std::to_string(value) + " is materialized"};
  for (NodeId id : step.stages[0].pointwise)
    for (ValueId operand : fusion.node(id).operands)
      if (prologue.count(operand))
        return Error{"internal error: the epilogue of generic_reduce kernel " + step.name +
                     " uses a prologue value"};
  return layout;
}

// ---- hook bodies ----

// Coordinates of element j of a row: kept ones from `row`, reduced ones from `j`;
// declares `offset`, the element's flat index in the input.
std::vector<std::string> declare_element(const EmitContext& ctx, const RowLayout& layout, Body& body) {
  std::vector<std::string> coords(layout.input.size(), "0LL");
  declare_coordinates(ctx, layout.input, layout.kept, "row", body, coords);
  declare_coordinates(ctx, layout.input, layout.reduced, "j", body, coords);
  body.declare("offset", "const long long offset = " + offset_of(ctx, layout.input, coords) + ";");
  return coords;
}

std::vector<std::string> load_body(const EmitContext& ctx, const RowLayout& layout) {
  Body body;
  std::vector<std::string> coords = declare_element(ctx, layout, body);
  PointwiseEmitter pointwise(ctx, body.lines(), layout.input, coords);
  bind_domain_loads(ctx, layout.input, "offset", body, pointwise);
  std::string x = pointwise.value(layout.anchor->operands[0]);
  body.lines().push_back("return " + x + ";");
  return body.finish({"args", "row", "j"});
}

// Stores of the values this kernel writes at flat index `index` of the anchor's result.
void store_values(const EmitContext& ctx, const std::string& index, PointwiseEmitter& pointwise, Body& body) {
  for (const auto& [value, buffer] : stored_values(ctx))
    body.lines().push_back(ctx.buffer(buffer) + "[" + index + "] = " + pointwise.value(value) + ";");
}

// A reduction's result for one row: the row index is the output's flat index.
std::vector<std::string> store_row_body(const EmitContext& ctx, const RowLayout& layout) {
  const std::vector<std::string> params = {"args", "row", "value"};
  Body body;
  if (is_softmax(*layout.anchor))
    return body.finish(params);
  const Shape& result = ctx.fusion().value(layout.anchor->result).type.shape;
  std::vector<std::string> coords(result.size(), "0LL");
  std::vector<int64_t> all;
  for (size_t d = 0; d < result.size(); ++d)
    all.push_back(static_cast<int64_t>(d));
  declare_coordinates(ctx, result, all, "row", body, coords);
  PointwiseEmitter pointwise(ctx, body.lines(), result, coords);
  bind_domain_loads(ctx, result, "row", body, pointwise);
  pointwise.bind(layout.anchor->result, "value");
  store_values(ctx, "row", pointwise, body);
  return body.finish(params);
}

// A softmax element: same place in the output as in the input.
std::vector<std::string> store_element_body(const EmitContext& ctx, const RowLayout& layout) {
  const std::vector<std::string> params = {"args", "row", "j", "value"};
  Body body;
  if (!is_softmax(*layout.anchor))
    return body.finish(params);
  std::vector<std::string> coords = declare_element(ctx, layout, body);
  PointwiseEmitter pointwise(ctx, body.lines(), layout.input, coords);
  bind_domain_loads(ctx, layout.input, "offset", body, pointwise);
  pointwise.bind(layout.anchor->result, "value");
  store_values(ctx, "offset", pointwise, body);
  return body.finish(params);
}

// Blocks of kBlock threads for `rows`, at least 1 and at most kMaxBlocks.
SizeExpr grid_blocks(const EmitContext& ctx, const SizeExpr& rows) {
  return grid_stride_blocks(ctx, rows, kBlock, kMaxBlocks);
}

} // namespace

Result<KernelSource> emit_generic_reduce(const EmitContext& ctx) {
  Result<RowLayout> analyzed = analyze(ctx);
  if (!analyzed)
    return Error{analyzed.error()};
  const RowLayout& layout = analyzed.value();
  if (stored_values(ctx).empty())
    return Error{"internal error: generic_reduce kernel " + ctx.step().name + " stores nothing"};

  KernelSource source;
  source.template_file = "generic_reduce.cu";
  source.hooks["block_size"] = constant_hook("kBlockSize", kBlock);
  source.hooks["anchor"] = "constexpr int kAnchor = " + *anchor_constant(*layout.anchor) + ";";
  const Shape& kept = layout.kept_extents;
  const Shape& reduced = layout.reduced_extents;
  source.hooks["num_rows"] = args_function_hook("long long", "num_rows", ctx.product(kept, 0, kept.size()));
  source.hooks["row_length"] = args_function_hook("long long", "row_length", ctx.product(reduced, 0, reduced.size()));
  source.hooks["load"] =
      function_hook("float", "load", "const FusegenArgs& args, long long row, long long j", load_body(ctx, layout));
  source.hooks["store_row"] = function_hook("void", "store_row", "const FusegenArgs& args, long long row, float value",
                                            store_row_body(ctx, layout));
  source.hooks["store_element"] =
      function_hook("void", "store_element", "const FusegenArgs& args, long long row, long long j, float value",
                    store_element_body(ctx, layout));
  source.hooks["entry"] = entry_hook(ctx, "kBlockSize", "generic_reduce_main(args);");
  source.launch.grid = {grid_blocks(ctx, ctx.size(kept, 0, kept.size())), ctx.constant(1), ctx.constant(1)};
  source.launch.block = kBlock;
  return source;
}

} // namespace fusegen::codegen
