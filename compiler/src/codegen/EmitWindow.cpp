// Window kernels (templates/window.cu): max_pool2d, avg_pool2d and
// adaptive_avg_pool2d over [N, C, H, W] or [C, H, W], with the kernel's
// pointwise prologue evaluated on every input tap (input coordinates) and its
// epilogue on every pooled value (output coordinates). A group_norm applied
// in the prologue whose statistics are still per-tile partials (from a conv
// epilogue) gets its mean and 1/std combined per plane by the template.
#include "codegen/Emitters.h"
#include "codegen/KernelParts.h"
#include "codegen/PointwiseEmitter.h"
#include "ops/OpHelpers.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace fusegen::codegen {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kTapsPerThread = 16;   // windows up to this many taps: one thread per output
constexpr int64_t kRoundsPerBlock = 4;   // output rounds of a block before a plane is split over blocks
// Blocks of 256 threads per SM that fill the GPU (8 on every supported
// generation's 2048 threads): a launch of fewer than sm_count times this
// takes fewer rounds per block, for more loads in flight.
constexpr int64_t kBlocksPerSm = 8;
constexpr int64_t kMaxPlanesPerBlock = 256;
constexpr int64_t kMaxGridX = INT_MAX;
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxExtent = 1 << 20; // spatial sizes handled with int arithmetic in the template

enum PoolMode { kMax = 0, kAverage = 1, kAdaptive = 2 };

struct Geometry {
  PoolMode mode = kMax;
  int64_t kernel_h = 0, kernel_w = 0; // adaptive: the largest bin; 0 when H/W are symbolic
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t out_h = 0, out_w = 0;
};

// A (H, W) attribute as two ints; None or empty gives `fallback`.
std::vector<int64_t> pair_attr(const Node& node, const std::string& name, const std::vector<int64_t>& fallback) {
  auto it = node.attrs.find(name);
  if (it == node.attrs.end() || !std::holds_alternative<std::vector<int64_t>>(it->second))
    return fallback;
  const auto& values = std::get<std::vector<int64_t>>(it->second);
  if (values.empty())
    return fallback;
  return ops::spatial_pair(values);
}

// The widest of torch's adaptive bins [floor(i*in/out), ceil((i+1)*in/out)).
int64_t largest_bin(int64_t in, int64_t out) {
  int64_t widest = 0;
  for (int64_t i = 0; i < out; ++i)
    widest = std::max(widest, ((i + 1) * in + out - 1) / out - i * in / out);
  return widest;
}

Result<Geometry> geometry_of(const Node& node, const Shape& input, const Shape& output) {
  Geometry g;
  size_t rank = input.size();
  const Dim &height = input[rank - 2], &width = input[rank - 1];
  g.out_h = output[rank - 2].value();
  g.out_w = output[rank - 1].value();
  const OpTraits& traits = plan::traits_of(node);
  if (traits.adaptive_window) {
    g.mode = kAdaptive;
    if (height.is_constant() && width.is_constant()) {
      g.kernel_h = largest_bin(height.value(), g.out_h);
      g.kernel_w = largest_bin(width.value(), g.out_w);
    }
  } else {
    g.mode = traits.window == WindowCombine::Max ? kMax : kAverage;
    std::vector<int64_t> kernel = pair_attr(node, "kernel_size", {});
    if (kernel.size() != 2)
      return Error{"internal error: " + node.op + " without kernel_size"};
    std::vector<int64_t> stride = pair_attr(node, "stride", kernel);
    std::vector<int64_t> padding = pair_attr(node, "padding", {0, 0});
    g.kernel_h = kernel[0], g.kernel_w = kernel[1];
    g.stride_h = stride[0], g.stride_w = stride[1];
    g.pad_h = padding[0], g.pad_w = padding[1];
  }
  for (int64_t v : {g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.out_h, g.out_w})
    if (v > kMaxExtent)
      return Error{node.op + " with a window, stride or output dim above " + std::to_string(kMaxExtent) +
                   " is not supported"};
  for (const Dim* d : {&height, &width})
    if (d->is_constant() && d->value() > kMaxExtent)
      return Error{node.op + " over a spatial dim above " + std::to_string(kMaxExtent) + " is not supported"};
  // The template counts a window's taps in int (a symbolic H x W is assumed to fit).
  if (height.is_constant() && width.is_constant() && height.value() * width.value() > INT_MAX)
    return Error{node.op + " over planes of more than " + std::to_string(INT_MAX) + " elements is not supported"};
  if (g.out_h * g.out_w > INT_MAX / 2)
    return Error{node.op + " with " + std::to_string(g.out_h * g.out_w) + " outputs per plane is not supported"};
  return g;
}

// Threads cooperating on one output: enough that each handles about
// kTapsPerThread taps of the largest window.
int team_size(const Geometry& g) {
  if (g.kernel_h == 0) // adaptive over symbolic H/W: global pooling gets the whole block
    return g.out_h * g.out_w == 1 ? kBlock : 8;
  int64_t taps = g.kernel_h * g.kernel_w;
  int team = 1;
  while (team < kBlock && taps > kTapsPerThread * team)
    team *= 2;
  return team;
}

struct Tiling {
  int planes_per_block = 1;
  int64_t outputs_per_block = 1; // a chunk of one plane's outputs
  int64_t chunks = 1;            // blocks along grid y
};

Tiling tiling_of(const Geometry& g, int team, std::optional<int64_t> planes, int64_t rounds = kRoundsPerBlock) {
  Tiling t;
  int64_t teams = kBlock / team;
  int64_t outputs = g.out_h * g.out_w;
  int64_t capacity = teams * rounds; // outputs per block
  if (outputs <= capacity) {
    // Whole planes per block; several when they are small, so threads stay busy.
    int64_t per_block = std::clamp<int64_t>(capacity / outputs, 1, kMaxPlanesPerBlock);
    if (planes)
      per_block = std::min(per_block, std::max<int64_t>(*planes, 1));
    t.planes_per_block = static_cast<int>(per_block);
    t.outputs_per_block = outputs;
    return t;
  }
  t.outputs_per_block = capacity;
  t.chunks = (outputs + capacity - 1) / capacity;
  if (t.chunks > kMaxGridY) {
    int64_t needed = ((outputs + kMaxGridY - 1) / kMaxGridY + teams - 1) / teams; // rounds
    t.outputs_per_block = needed * teams;
    t.chunks = (outputs + t.outputs_per_block - 1) / t.outputs_per_block;
  }
  return t;
}

// The plane index split into the input's leading coordinates.
std::vector<std::string> plane_coords(const EmitContext& ctx, const Shape& shape) {
  if (shape.size() == 3)
    return {"plane"};
  std::string channels = ctx.dim(shape[1]);
  return {"(plane / " + channels + ")", "(plane % " + channels + ")"};
}

std::vector<std::string> with_spatial(std::vector<std::string> coords, const std::string& h, const std::string& w) {
  coords.push_back(h);
  coords.push_back(w);
  return coords;
}

// Statistics of a prologue normalization that only exist as partials
// (count, mean, M2) per (sample, group, row tile): the plane's group is
// combined by the template.
struct PlaneStats {
  NodeId norm = kNoId;
  BufferId partials = kNoId;
  int64_t groups = 0, parts = 0;
  double eps = 0;
};

Result<PlaneStats> plane_stats_of(const EmitContext& ctx, const Shape& input) {
  PlaneStats stats;
  NodeId norm = ctx.step().stats_in;
  if (norm == kNoId || ctx.stats_buffer(norm, true) != kNoId)
    return stats; // none, or finalized statistics the prologue reads itself
  const Node& node = ctx.fusion().node(norm);
  BufferId partials = ctx.stats_buffer(norm, false);
  if (plan::channel_groups(node) <= 0 || partials == kNoId)
    return Error{"internal error: " + node.op + " in a window prologue has neither partial nor finalized statistics"};
  const Shape& norm_input = ctx.fusion().value(node.operands[0]).type.shape;
  if (input.size() != 4 || norm_input != input)
    return Error{"group_norm statistics from partials need the pool's 4-d [N, C, H, W] input to be group_norm's "
                 "input shape (got " + shape_str(input) + ")"};
  const PlanBuffer& buffer = ctx.plan().buffer(partials);
  if (buffer.shape.size() != 4 || buffer.ceil_div.size() != 4 || !buffer.shape[1].is_constant() ||
      !buffer.shape[2].is_constant() || !input[1].is_constant())
    return Error{"internal error: unexpected layout of " + buffer.name + " " + shape_str(buffer.shape)};
  stats.norm = norm;
  stats.partials = partials;
  stats.groups = buffer.shape[1].value();
  int64_t tile = std::max<int64_t>(buffer.ceil_div[2], 1);
  stats.parts = (buffer.shape[2].value() + tile - 1) / tile;
  stats.eps = std::get<double>(node.attrs.at("eps"));
  if (!std::isfinite(stats.eps))
    return Error{"group_norm eps must be finite"};
  return stats;
}

std::string stats_partials_hook(const EmitContext& ctx, const Shape& input, const PlaneStats& stats) {
  if (stats.norm == kNoId)
    return function_hook("const float*", "stats_partials", "const FusegenArgs& args, long long plane",
                         {"(void)args;", "(void)plane;", "return nullptr;"});
  int64_t channels = input[1].value();
  std::string per_group = std::to_string(channels / stats.groups) + "LL";
  std::string group = "(plane / " + std::to_string(channels) + "LL) * " + std::to_string(stats.groups) +
                      "LL + (plane % " + std::to_string(channels) + "LL) / " + per_group;
  return function_hook("const float*", "stats_partials", "const FusegenArgs& args, long long plane",
                       {"// (count, mean, M2) triples of the plane's (sample, group), one per row tile",
                        "return " + ctx.buffer(stats.partials) + " + (" + group + ") * " +
                            std::to_string(stats.parts * 3) + "LL;"});
}

std::string load_input_hook(const EmitContext& ctx, ValueId input, const Shape& shape, const PlaneStats& stats) {
  std::vector<std::string> body;
  PointwiseEmitter pointwise(ctx, body, shape, with_spatial(plane_coords(ctx, shape), "h", "w"));
  if (stats.norm != kNoId)
    pointwise.bind_stats(stats.norm, {"mean", "rstd", "", ""});
  std::string value = pointwise.value(input);
  body.push_back("return " + value + ";");
  return function_hook("float", "load_input",
                       "const FusegenArgs& args, long long plane, long long h, long long w, float mean, float rstd",
                       body);
}

Result<std::string> store_output_hook(const EmitContext& ctx, ValueId pooled, const Shape& shape) {
  std::vector<std::string> body;
  PointwiseEmitter pointwise(ctx, body, shape, with_spatial(plane_coords(ctx, shape), "oh", "ow"));
  pointwise.bind(pooled, "pooled");
  size_t rank = shape.size();
  int64_t out_h = shape[rank - 2].value(), out_w = shape[rank - 1].value();
  std::string offset = "plane * " + std::to_string(out_h * out_w) + "LL + oh * " + std::to_string(out_w) + "LL + ow";
  std::vector<std::pair<ValueId, BufferId>> stored = stored_values(ctx);
  if (stored.empty())
    return Error{"internal error: window kernel stores nothing"};
  for (const auto& [value, buffer] : stored) {
    if (ctx.fusion().value(value).type.shape != shape)
      return Error{"internal error: window kernel stores " + ctx.plan().buffer(buffer).name +
                   " which is not in the pooled domain " + shape_str(shape)};
    std::string expr = pointwise.value(value);
    body.push_back(ctx.buffer(buffer) + "[" + offset + "] = " + expr + ";");
  }
  return function_hook("void", "store_output",
                       "const FusegenArgs& args, long long plane, long long oh, long long ow, float pooled", body);
}

} // namespace

Result<KernelSource> emit_window(const EmitContext& ctx) {
  const KernelStep& step = ctx.step();
  if (step.stages.size() != 1 || step.anchor() == kNoId)
    return Error{"internal error: a window kernel has exactly one pooling stage"};
  const Node& pool = ctx.fusion().node(step.anchor());
  ValueId input = pool.operands[0];
  const Shape& in_shape = ctx.fusion().value(input).type.shape;
  const Shape& out_shape = ctx.fusion().value(pool.result).type.shape;
  size_t rank = in_shape.size();
  if (rank != 3 && rank != 4)
    return Error{pool.op + " expects a 3-d or 4-d input, got " + shape_str(in_shape)};
  if (!out_shape[rank - 2].is_constant() || !out_shape[rank - 1].is_constant())
    return Error{pool.op + " needs constant output spatial dims, got " + shape_str(out_shape)};
  Result<Geometry> geometry = geometry_of(pool, in_shape, out_shape);
  if (!geometry)
    return Error{geometry.error()};
  const Geometry& g = geometry.value();
  Result<PlaneStats> plane_stats = plane_stats_of(ctx, in_shape);
  if (!plane_stats)
    return Error{plane_stats.error()};
  const PlaneStats& stats = plane_stats.value();

  SizeExpr planes = ctx.size(in_shape, 0, rank - 2);
  int team = team_size(g);
  // kRoundsPerBlock rounds per block, fewer (down to one) while the launch
  // would not fill the GPU (known plane count only).
  auto blocks_of = [&](const Tiling& t) {
    return (*planes.value + t.planes_per_block - 1) / t.planes_per_block * t.chunks;
  };
  const int64_t full_grid = ctx.target().sm_count * kBlocksPerSm;
  Tiling tiling = tiling_of(g, team, planes.value);
  for (int64_t rounds = kRoundsPerBlock / 2; rounds >= 1 && planes.value && blocks_of(tiling) < full_grid; rounds /= 2)
    tiling = tiling_of(g, team, planes.value, rounds);

  KernelSource source;
  source.template_file = "window.cu";
  auto& hooks = source.hooks;
  hooks["block_size"] = constant_hook("kBlockSize", kBlock);
  hooks["team_size"] = constant_hook("kTeamSize", team);
  hooks["pool_mode"] = constant_hook("kPoolMode", g.mode);
  hooks["kernel_h"] = constant_hook("kKernelH", g.kernel_h);
  hooks["kernel_w"] = constant_hook("kKernelW", g.kernel_w);
  hooks["stride_h"] = constant_hook("kStrideH", g.stride_h);
  hooks["stride_w"] = constant_hook("kStrideW", g.stride_w);
  hooks["pad_h"] = constant_hook("kPadH", g.pad_h);
  hooks["pad_w"] = constant_hook("kPadW", g.pad_w);
  hooks["out_h"] = constant_hook("kOutH", g.out_h);
  hooks["out_w"] = constant_hook("kOutW", g.out_w);
  hooks["planes_per_block"] = constant_hook("kPlanesPerBlock", tiling.planes_per_block);
  hooks["outputs_per_block"] = constant_hook("kOutputsPerBlock", tiling.outputs_per_block);
  hooks["plane_stats"] = constant_hook("kPlaneStats", stats.norm != kNoId ? 1 : 0);
  hooks["stats_eps"] = "constexpr float kStatsEps = " + ops::cuda_float(stats.norm != kNoId ? stats.eps : 0.0) + ";";
  hooks["planes"] = args_function_hook("long long", "planes", ctx.product(in_shape, 0, rank - 2));
  hooks["in_height"] = args_function_hook("long long", "in_height", ctx.dim(in_shape[rank - 2]));
  hooks["in_width"] = args_function_hook("long long", "in_width", ctx.dim(in_shape[rank - 1]));
  hooks["stats_parts"] = args_function_hook("long long", "stats_parts", std::to_string(stats.parts) + "LL");
  hooks["stats_partials"] = stats_partials_hook(ctx, in_shape, stats);
  hooks["load_input"] = load_input_hook(ctx, input, in_shape, stats);
  Result<std::string> store = store_output_hook(ctx, pool.result, out_shape);
  if (!store)
    return Error{store.error()};
  hooks["store_output"] = store.value();
  hooks["entry"] = entry_hook(ctx, "kBlockSize", "window_main(args);");

  source.launch.grid = {grid_stride_blocks(ctx, planes, tiling.planes_per_block, kMaxGridX),
                        ctx.constant(tiling.chunks), ctx.constant(1)};
  source.launch.block = kBlock;
  return source;
}

} // namespace fusegen::codegen
