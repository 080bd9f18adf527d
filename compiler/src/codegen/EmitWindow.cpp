// Window kernels (templates/window.cu): max, average and adaptive pools in
// 1-D to 3-D over [N, C, ...] or [C, ...], with the kernel's
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

enum PoolMode { kMax = 0, kAverage = 1, kAdaptive = 2, kAdaptiveMax = 3 };

// The window over (D, H, W): a 1-D or 2-D pool's leading dims are 1.
struct Geometry {
  PoolMode mode = kMax;
  size_t spatial = 2;            // pooled trailing dims
  int64_t kernel[3] = {1, 1, 1}; // adaptive: the largest bin; 0 when that input dim is symbolic
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  bool count_include_pad = true;
  int64_t divisor_override = 0;
  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t outputs() const { return out[0] * out[1] * out[2]; }
};

// An int-or-tuple attribute over the `n` pooled dims; None or empty gives `fallback`.
std::vector<int64_t> spatial_ints(const Node& node, const std::string& name, size_t n,
                                  const std::vector<int64_t>& fallback) {
  auto it = node.attrs.find(name);
  if (it == node.attrs.end() || !std::holds_alternative<std::vector<int64_t>>(it->second))
    return fallback;
  const auto& values = std::get<std::vector<int64_t>>(it->second);
  if (values.empty())
    return fallback;
  return ops::spatial_values(values, n);
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
  const OpTraits& traits = plan::traits_of(node);
  const auto n = static_cast<size_t>(traits.spatial_dims);
  g.spatial = n;
  const size_t rank = input.size(), first = 3 - n; // (D, H, W) slot of the first pooled dim
  for (size_t i = 0; i < n; ++i)
    g.out[first + i] = output[rank - n + i].value();
  if (traits.adaptive_window) {
    g.mode = traits.window == WindowCombine::Max ? kAdaptiveMax : kAdaptive;
    for (size_t i = 0; i < n; ++i) {
      const Dim& in = input[rank - n + i];
      g.kernel[first + i] = in.is_constant() ? largest_bin(in.value(), g.out[first + i]) : 0;
    }
  } else {
    g.mode = traits.window == WindowCombine::Max ? kMax : kAverage;
    std::vector<int64_t> kernel = spatial_ints(node, "kernel_size", n, {});
    if (kernel.size() != n)
      return Error{"internal error: " + node.op + " without kernel_size"};
    std::vector<int64_t> stride = spatial_ints(node, "stride", n, kernel);
    std::vector<int64_t> padding = spatial_ints(node, "padding", n, std::vector<int64_t>(n, 0));
    std::vector<int64_t> dilation = spatial_ints(node, "dilation", n, std::vector<int64_t>(n, 1));
    for (size_t i = 0; i < n; ++i) {
      g.kernel[first + i] = kernel[i];
      g.stride[first + i] = stride[i];
      g.pad[first + i] = padding[i];
      g.dilation[first + i] = dilation[i];
    }
    if (auto it = node.attrs.find("count_include_pad"); it != node.attrs.end())
      g.count_include_pad = std::get<bool>(it->second);
    if (auto it = node.attrs.find("divisor_override"); it != node.attrs.end()) {
      if (const auto* one = std::get_if<int64_t>(&it->second))
        g.divisor_override = *one;
      else if (const auto* many = std::get_if<std::vector<int64_t>>(&it->second); many && many->size() == 1)
        g.divisor_override = many->front();
    }
  }
  for (size_t d = 0; d < 3; ++d)
    for (int64_t v : {g.kernel[d], g.stride[d], g.pad[d], g.dilation[d], g.out[d]})
      if (v > kMaxExtent)
        return Error{node.op + " with a window, stride, dilation or output dim above " + std::to_string(kMaxExtent) +
                     " is not supported"};
  int64_t plane = 1;
  bool plane_known = true;
  for (size_t i = rank - n; i < rank; ++i) {
    if (!input[i].is_constant()) {
      plane_known = false;
      continue;
    }
    if (input[i].value() > kMaxExtent)
      return Error{node.op + " over a spatial dim above " + std::to_string(kMaxExtent) + " is not supported"};
    plane *= input[i].value();
  }
  // The template counts a window's taps in int (a symbolic plane is assumed to fit).
  if (plane_known && plane > INT_MAX)
    return Error{node.op + " over planes of more than " + std::to_string(INT_MAX) + " elements is not supported"};
  if (g.outputs() > INT_MAX / 2)
    return Error{node.op + " with " + std::to_string(g.outputs()) + " outputs per plane is not supported"};
  if (g.dilation[0] * (g.kernel[0] - 1) > INT_MAX / 4 || g.dilation[1] * (g.kernel[1] - 1) > INT_MAX / 4 ||
      g.dilation[2] * (g.kernel[2] - 1) > INT_MAX / 4)
    return Error{node.op + " with a dilated window above 2^29 is not supported"};
  return g;
}

// Threads cooperating on one output: enough that each handles about
// kTapsPerThread taps of the largest window.
int team_size(const Geometry& g) {
  if (g.taps() == 0) // adaptive over a symbolic extent: global pooling gets the whole block
    return g.outputs() == 1 ? kBlock : 8;
  int64_t taps = g.taps();
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
  int64_t outputs = g.outputs();
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

// The plane index split into the input's leading coordinates (sample and
// channel, or channel alone).
std::vector<std::string> plane_coords(const EmitContext& ctx, const Shape& shape, size_t spatial) {
  if (shape.size() == spatial + 1)
    return {"plane"};
  std::string channels = ctx.dim(shape[1]);
  return {"(plane / " + channels + ")", "(plane % " + channels + ")"};
}

// The coordinates of the pooled dims: the last `spatial` of (d, h, w), each
// name with `prefix` ("o" for outputs).
std::vector<std::string> with_spatial(std::vector<std::string> coords, size_t spatial, const std::string& prefix) {
  const char* names[] = {"d", "h", "w"};
  for (size_t i = 3 - spatial; i < 3; ++i)
    coords.push_back(prefix + names[i]);
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
  if (input.size() < 3 || norm_input != input)
    return Error{"group_norm statistics from partials need the pool's batched [N, C, ...] input to be group_norm's "
                 "input shape (got " +
                 shape_str(input) + ")"};
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

std::string load_input_hook(const EmitContext& ctx, ValueId input, const Shape& shape, size_t spatial,
                            const PlaneStats& stats) {
  std::vector<std::string> body;
  PointwiseEmitter pointwise(ctx, body, shape, with_spatial(plane_coords(ctx, shape, spatial), spatial, ""));
  if (stats.norm != kNoId)
    pointwise.bind_stats(stats.norm, {"mean", "rstd", "", ""});
  std::string value = pointwise.value(input);
  body.push_back("return " + value + ";");
  return function_hook("float", "load_input",
                       "const FusegenArgs& args, long long plane, long long d, long long h, long long w, float mean, "
                       "float rstd",
                       body);
}

Result<std::string> store_output_hook(const EmitContext& ctx, ValueId pooled, const Shape& shape, const Geometry& g) {
  std::vector<std::string> body;
  PointwiseEmitter pointwise(ctx, body, shape, with_spatial(plane_coords(ctx, shape, g.spatial), g.spatial, "o"));
  pointwise.bind(pooled, "pooled");
  std::string offset = "plane * " + std::to_string(g.outputs()) + "LL";
  if (g.spatial == 3)
    offset += " + od * " + std::to_string(g.out[1] * g.out[2]) + "LL";
  if (g.spatial >= 2)
    offset += " + oh * " + std::to_string(g.out[2]) + "LL";
  offset += " + ow";
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
                       "const FusegenArgs& args, long long plane, long long od, long long oh, long long ow, "
                       "float pooled",
                       body);
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
  const auto spatial = static_cast<size_t>(plan::traits_of(pool).spatial_dims);
  const size_t rank = in_shape.size();
  if (rank != spatial + 1 && rank != spatial + 2)
    return Error{pool.op + " expects a " + std::to_string(spatial + 1) + "-d or " + std::to_string(spatial + 2) +
                 "-d input, got " + shape_str(in_shape)};
  for (size_t i = rank - spatial; i < rank; ++i)
    if (!out_shape[i].is_constant())
      return Error{pool.op + " needs constant output spatial dims, got " + shape_str(out_shape)};
  Result<Geometry> geometry = geometry_of(pool, in_shape, out_shape);
  if (!geometry)
    return Error{geometry.error()};
  const Geometry& g = geometry.value();
  Result<PlaneStats> plane_stats = plane_stats_of(ctx, in_shape);
  if (!plane_stats)
    return Error{plane_stats.error()};
  const PlaneStats& stats = plane_stats.value();

  SizeExpr planes = ctx.size(in_shape, 0, rank - spatial);
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
  const char* axes[] = {"D", "H", "W"};
  const char* hook_axes[] = {"d", "h", "w"};
  for (size_t d = 0; d < 3; ++d) {
    const std::string axis = hook_axes[d], name = axes[d];
    hooks["kernel_" + axis] = constant_hook("kKernel" + name, g.kernel[d]);
    hooks["stride_" + axis] = constant_hook("kStride" + name, g.stride[d]);
    hooks["pad_" + axis] = constant_hook("kPad" + name, g.pad[d]);
    hooks["dilation_" + axis] = constant_hook("kDilation" + name, g.dilation[d]);
    hooks["out_" + axis] = constant_hook("kOut" + name, g.out[d]);
  }
  hooks["count_include_pad"] = bool_hook("kCountIncludePad", g.count_include_pad);
  hooks["divisor_override"] = constant_hook("kDivisorOverride", g.divisor_override);
  hooks["planes_per_block"] = constant_hook("kPlanesPerBlock", tiling.planes_per_block);
  hooks["outputs_per_block"] = constant_hook("kOutputsPerBlock", tiling.outputs_per_block);
  hooks["plane_stats"] = constant_hook("kPlaneStats", stats.norm != kNoId ? 1 : 0);
  hooks["stats_eps"] = "constexpr float kStatsEps = " + ops::cuda_float(stats.norm != kNoId ? stats.eps : 0.0) + ";";
  hooks["planes"] = args_function_hook("long long", "planes", ctx.product(in_shape, 0, rank - spatial));
  // The pooled dims' extents in (D, H, W) order; 1 where the pool has none.
  const char* extent_hooks[] = {"in_depth", "in_height", "in_width"};
  for (size_t d = 0; d < 3; ++d) {
    const size_t first = 3 - spatial;
    const std::string extent = d < first ? "1LL" : ctx.dim(in_shape[rank - spatial + (d - first)]);
    hooks[extent_hooks[d]] = args_function_hook("long long", extent_hooks[d], extent);
  }
  hooks["stats_parts"] = args_function_hook("long long", "stats_parts", std::to_string(stats.parts) + "LL");
  hooks["stats_partials"] = stats_partials_hook(ctx, in_shape, stats);
  hooks["load_input"] = load_input_hook(ctx, input, in_shape, spatial, stats);
  Result<std::string> store = store_output_hook(ctx, pool.result, out_shape, g);
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
