// Stats-finalize kernels (templates/stats_finalize.cu): combine the partial
// statistics (count, mean, M2) of a split normalization with Chan's formula
// in a fixed order and write mean and 1/sqrt(biased var + eps):
//  * batch_norm (training): partials [ceil(N / tile_m), C, 3] (or after a
//    convolution [N, ceil(positions / tile_m), C, 3]) -> stats [C, 2],
//    and the running stats updated in place as torch does (momentum-weighted,
//    unbiased variance);
//  * group_norm: partials [N, G, ceil(positions / tile_m), 3] -> stats [N, G, 2].
// These are the layouts PointwiseEmitter::apply_split_norm reads.
#include "codegen/BatchNormStats.h"
#include "codegen/Emitters.h"
#include "codegen/KernelParts.h"
#include "fusegen/OpRegistry.h"
#include "ops/OpHelpers.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace fusegen::codegen {
namespace {

constexpr int64_t kMaxGrid = INT_MAX;
constexpr int64_t kFewRows = 512; // batch_norm channels up to this get 32 threads each

// Dim `d` of a plan buffer in device code, divided (rounding up) by its ceil_div.
std::string buffer_extent(const EmitContext& ctx, const PlanBuffer& buffer, size_t d) {
  int64_t divisor = d < buffer.ceil_div.size() ? std::max<int64_t>(buffer.ceil_div[d], 1) : 1;
  const Dim& dim = buffer.shape[d];
  if (dim.is_constant())
    return std::to_string((dim.value() + divisor - 1) / divisor) + "LL";
  if (divisor == 1)
    return ctx.dim(dim);
  return "((" + ctx.dim(dim) + " + " + std::to_string(divisor - 1) + "LL) / " + std::to_string(divisor) + "LL)";
}

// What differs between the normalizations: rows, parts, where a partial is,
// and the per-row work after the combine.
struct Layout {
  int row_lanes = 32, part_lanes = 8;
  bool parts_contiguous = false;
  std::string rows, parts;      // device expressions
  std::string partial_offset;   // float offset of (row, part)'s triple
  std::vector<std::string> finalize;
  SizeExpr row_count;           // for the launch
};

Result<Layout> batch_norm_layout(const EmitContext& ctx, const Node& node, const PlanBuffer& partials,
                                 BufferId stats) {
  const Shape& input = ctx.fusion().value(node.operands[0]).type.shape;
  // [parts, C, 3], or after a convolution [N, position tiles, C, 3]: the
  // dims before the channels are the parts.
  if (partials.shape.size() != 3 && partials.shape.size() != 4)
    return Error{"internal error: unexpected layout of " + partials.name + " " + shape_str(partials.shape)};
  Layout layout;
  std::string channels = ctx.dim(input[1]);
  layout.rows = channels;
  layout.parts = buffer_extent(ctx, partials, 0);
  if (partials.shape.size() == 4)
    layout.parts = "(" + layout.parts + " * " + buffer_extent(ctx, partials, 1) + ")";
  layout.partial_offset = "(part * " + channels + " + row) * 3";
  layout.row_count = ctx.size(input, 1, 2);
  // Few channels: more threads per channel, so a long series of row tiles
  // (large N) is not merged by 8 threads alone.
  if (layout.row_count.value && *layout.row_count.value <= kFewRows)
    layout.part_lanes = 32;
  Result<std::vector<std::string>> finalize = batch_norm_finalize(ctx, node, stats, "row");
  if (!finalize)
    return Error{finalize.error()};
  layout.finalize = std::move(finalize.value());
  return layout;
}

Result<Layout> group_norm_layout(const EmitContext& ctx, const Node& node, const PlanBuffer& partials,
                                 BufferId stats) {
  const Shape& input = ctx.fusion().value(node.operands[0]).type.shape;
  if (partials.shape.size() != 4 || !partials.shape[1].is_constant())
    return Error{"internal error: unexpected layout of " + partials.name + " " + shape_str(partials.shape)};
  const PlanBuffer& finalized = ctx.plan().buffer(stats);
  Shape expected = {input[0], partials.shape[1], Dim::constant(2)};
  if (finalized.shape != expected)
    return Error{"internal error: " + finalized.name + " has shape " + shape_str(finalized.shape) +
                 "; group_norm's finalized statistics are " + shape_str(expected) + " (mean, 1/std per sample, group)"};
  Layout layout;
  layout.row_lanes = 8;
  layout.part_lanes = 32;
  layout.parts_contiguous = true;
  int64_t groups = partials.shape[1].value();
  std::string samples = ctx.dim(input[0]);
  layout.rows = input[0].is_constant() ? std::to_string(input[0].value() * groups) + "LL"
                                       : "(" + samples + " * " + std::to_string(groups) + "LL)";
  layout.parts = buffer_extent(ctx, partials, 2);
  layout.partial_offset = "(row * " + layout.parts + " + part) * 3";
  layout.row_count = ctx.mul(ctx.size(input, 0, 1), ctx.constant(groups));
  double eps = std::get<double>(node.attrs.at("eps"));
  if (!std::isfinite(eps))
    return Error{"group_norm eps must be finite"};
  layout.finalize = finalized_stat_writes(ctx, stats, "row", eps);
  return layout;
}

} // namespace

Result<KernelSource> emit_stats_finalize(const EmitContext& ctx) {
  NodeId norm = ctx.step().stats_in;
  if (norm == kNoId)
    return Error{"internal error: a stats-finalize kernel needs its normalization (stats_in)"};
  const Node& node = ctx.fusion().node(norm);
  BufferId partials = ctx.stats_buffer(norm, false);
  BufferId stats = ctx.stats_buffer(norm, true);
  if (partials == kNoId || stats == kNoId)
    return Error{"internal error: " + node.op + " has no partial or finalized statistics buffer"};
  Result<Layout> result = Error{"stats-finalize supports batch_norm and group_norm, not " + node.op};
  if (plan::is_column_norm(node))
    result = batch_norm_layout(ctx, node, ctx.plan().buffer(partials), stats);
  else if (plan::channel_groups(node) > 0)
    result = group_norm_layout(ctx, node, ctx.plan().buffer(partials), stats);
  if (!result)
    return Error{result.error()};
  const Layout& layout = result.value();

  KernelSource source;
  source.template_file = "stats_finalize.cu";
  source.hooks["row_lanes"] = constant_hook("kRowLanes", layout.row_lanes);
  source.hooks["part_lanes"] = constant_hook("kPartLanes", layout.part_lanes);
  source.hooks["parts_contiguous"] = constant_hook("kPartsContiguous", layout.parts_contiguous ? 1 : 0);
  source.hooks["rows"] = args_function_hook("long long", "rows", layout.rows);
  source.hooks["parts"] = args_function_hook("long long", "parts", layout.parts);
  source.hooks["load_partial"] =
      function_hook("FusegenWelford", "load_partial", "const FusegenArgs& args, long long row, long long part",
                    {"const float* p = " + ctx.buffer(partials) + " + " + layout.partial_offset + ";",
                     "return FusegenWelford{p[0], p[1], p[2]};"});
  source.hooks["finalize_row"] = function_hook(
      "void", "finalize_row", "const FusegenArgs& args, long long row, FusegenWelford total", layout.finalize);
  source.hooks["entry"] = entry_hook(ctx, "kBlockSize", "stats_finalize_main(args);");
  source.launch.grid = {grid_stride_blocks(ctx, layout.row_count, layout.row_lanes, kMaxGrid), ctx.constant(1),
                        ctx.constant(1)};
  source.launch.block = layout.row_lanes * layout.part_lanes;
  return source;
}

} // namespace fusegen::codegen
