// Column-statistics kernels (templates/column_stats.cu): per-(row tile,
// channel) partial statistics (count, mean, M2) of a training batch_norm's
// input that does not come from a GEMM, written to the norm's partials
// buffer [ceil(N / tile_m), C, 3] for the stats-finalize kernel.
#include "codegen/Emitters.h"
#include "codegen/KernelParts.h"
#include "plan/PlanQueries.h"

#include <climits>

namespace fusegen::codegen {
namespace {

constexpr int kColumnBlock = 256;   // [N, C]: 32 channels x 8 row lanes
constexpr int kPlaneBlock = 256;    // [N, C, S] with small tiles
constexpr int kWidePlaneBlock = 1024; // [N, C, S] when a (tile, channel) holds many values
constexpr int64_t kWidePlaneValues = 32768;
constexpr int64_t kChannelLanes = 32; // channels per block in column mode (see the template)
constexpr int64_t kMaxGrid = INT_MAX;

} // namespace

Result<KernelSource> emit_column_stats(const EmitContext& ctx) {
  const KernelStep& step = ctx.step();
  NodeId norm = step.stats_out;
  if (norm == kNoId || !plan::is_column_norm(ctx.fusion().node(norm)))
    return Error{"internal error: a column-statistics kernel needs a training batch_norm (stats_out)"};
  const Node& node = ctx.fusion().node(norm);
  ValueId input = node.operands[0];
  const Shape& shape = ctx.fusion().value(input).type.shape;
  if (shape.size() < 2)
    return Error{"batch_norm expects an [N, C, *] input, got " + shape_str(shape)};
  if (!ctx.is_materialized(input))
    return Error{"internal error: batch_norm's input is not in memory for the column-statistics kernel"};
  BufferId partials = ctx.stats_buffer(norm, false);
  if (partials == kNoId)
    return Error{"internal error: no partial statistics buffer for batch_norm"};
  const PlanBuffer& buffer = ctx.plan().buffer(partials);
  int64_t tile = ctx.plan().options.gemm_tile_m;
  if (buffer.ceil_div.empty() || buffer.ceil_div[0] != tile)
    return Error{"internal error: " + buffer.name + " is not tiled by PlanOptions::gemm_tile_m"};

  SizeExpr spatial = ctx.size(shape, 2, shape.size());
  bool column_mode = spatial.value && *spatial.value == 1;
  int block = kColumnBlock;
  if (!column_mode)
    block = spatial.value && *spatial.value * tile >= kWidePlaneValues ? kWidePlaneBlock : kPlaneBlock;

  KernelSource source;
  source.template_file = "column_stats.cu";
  source.hooks["block_size"] = constant_hook("kBlockSize", block);
  source.hooks["tile_m"] = constant_hook("kTileM", tile);
  source.hooks["column_mode"] = constant_hook("kColumnMode", column_mode ? 1 : 0);
  source.hooks["batch"] = args_function_hook("long long", "batch", ctx.dim(shape[0]));
  source.hooks["channels"] = args_function_hook("long long", "channels", ctx.dim(shape[1]));
  source.hooks["spatial"] = args_function_hook("long long", "spatial", ctx.product(shape, 2, shape.size()));
  source.hooks["input"] = args_function_hook("const float*", "input", ctx.value_buffer(input));
  source.hooks["partials"] = args_function_hook("float*", "partials", ctx.buffer(partials));
  source.hooks["entry"] = entry_hook(ctx, "kBlockSize", "column_stats_main(args);");

  SizeExpr tiles = ctx.ceil_div(ctx.size(shape, 0, 1), tile);
  SizeExpr channels = ctx.size(shape, 1, 2);
  SizeExpr columns = column_mode ? ctx.ceil_div(channels, kChannelLanes) : channels;
  source.launch.grid = {grid_stride_blocks(ctx, ctx.mul(tiles, columns), 1, kMaxGrid), ctx.constant(1),
                        ctx.constant(1)};
  source.launch.block = block;
  return source;
}

} // namespace fusegen::codegen
