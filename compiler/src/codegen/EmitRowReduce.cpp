// Row reductions (templates/row_reduce.cu): a normalization or reduction over
// the trailing dims of its input, with an optional pointwise prologue on the
// input, a pointwise epilogue on the result, and optionally a reduction over
// the normalized rows (e.g. group_norm then min over dim 1).
//
// The input is cut into contiguous segments: one per output element of a
// reduction, one per normalized row (group_norm: per (sample, group)). Short
// segments go to warp slices (several per block), long ones to a whole block;
// normalized segments are cached in shared memory between passes when they
// fit (a block-wide one up to the target's per-block limit).
// See docs/kernels-reduce.md.
#include "codegen/Emitters.h"
#include "codegen/HookBody.h"
#include "codegen/KernelParts.h"
#include "codegen/PointwiseEmitter.h"
#include "codegen/VectorLanes.h"
#include "fusegen/OpRegistry.h"
#include "ops/OpHelpers.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

namespace fusegen::codegen {
namespace {

constexpr int kBlock = 256;        // threads per block
constexpr int kLongRowBlock = 512; // for segments of kLongRow elements or more
constexpr int64_t kLongRow = 32768;
constexpr int64_t kWarpSliceMax = 1024;    // segments up to this long go to warp slices
constexpr int64_t kCacheBytes = 64 * 1024; // row cache of a block of several teams (above 48 KiB: opt-in)
// A block-wide segment is cached up to what the target lets a block opt
// into, less this much for the template's static scratch (kWarps RowAccs).
constexpr int64_t kStaticSharedBytes = 1024;
constexpr int64_t kMaxBlocks = 65536; // grid-stride beyond this
constexpr int kMaxClusterSize = 8;    // the portable limit of a thread-block cluster
// A cluster's part of a segment is at least this long: below it the cluster
// barrier costs more than spreading the row gains.
constexpr int64_t kMinClusterPart = 1024;
// A row longer than a block's cache is split until its parts are at most
// the anchor's part target, and parts at least kLongClusterPart long take
// 512 threads, else 256: about 20-48 elements a thread. Measured on an H100
// (bench/NOTES.md v53, v56): a norm's part (three passes: sum, centered
// squares, write) does best at 16000 with 512 threads (layer_norm over
// 32000: 0.47 ms, parts of 8000 with 256: 0.58, without weight and bias
// 0.376 against 0.394); softmax's (two passes) at 8000-10000 with 256
// (softmax over 32000: parts of 16000 0.466 ms, of 8000 0.425; log_softmax
// over 40000 in parts of 10000 0.53 ms with 256 threads, 0.72 with 512).
constexpr int64_t kNormClusterPartTarget = 16384;
constexpr int64_t kSoftmaxClusterPartTarget = 12288;
constexpr int64_t kLongClusterPart = 12288;
// Loads a thread issues before using any. A block-wide team: 8 (1024
// threads x 8 floats = 32 KiB in flight per SM covers the memory latency).
// A warp slice has ceil(length / its unroll limit) lanes (a power of two,
// at most 32) and takes its elements per lane up to that many, so a row is
// read in few round trips and a short one shuffles over few lanes (softmax
// [262144, 64] on an H100: 0.104 -> 0.057 ms; bench/NOTES.md v54). The
// limit is 8, and 16 for softmax and log_softmax over rows of 256 or more
// (softmax [65536, 256] 0.054 -> 0.051 ms; layer_norm over 1024 and
// softmax over 64 or 100 were 1-4% slower with it; v58).
constexpr int kBlockUnroll = 8;
constexpr int kWarpSliceUnrollMax = 8;
constexpr int kSoftmaxWarpSliceUnrollMax = 16;
constexpr int64_t kSoftmaxLongWarpSliceRow = 256;

// ---- what the kernel computes ----

// templates/row_reduce.cu's kAnchor / kFinalOp constant for the node's statistic.
std::optional<std::string> anchor_constant(const Node& node) {
  const Statistic statistic = plan::traits_of(node).statistic;
  if (plan::is_column_norm(node) || statistic == Statistic::None)
    return std::nullopt; // batch_norm runs on the column-statistics kernels
  return std::string("kRow") + statistic_name(statistic);
}

bool is_reduction(const Node& node) { return plan::op_of(node).kind == OpKind::Reduction; }

// How the anchor's input splits into segments, and how the kernel runs them.
struct RowShape {
  const Node* anchor = nullptr;
  const Node* final_op = nullptr; // the fused reduction of stage 1, if any
  Shape input;                    // the anchor input's shape
  size_t first_reduced = 0;       // the trailing dims from here on are reduced
  int64_t groups = 1;             // segments per row: num_groups for group_norm
  std::string segments;           // device: number of segments
  std::string length;             // device: elements per segment
  std::optional<int64_t> length_value;
  SizeExpr items; // host: grid-stride items
  int block = kBlock;
  int team = kBlock;
  int segments_per_item = 1;
  int64_t cache_floats = 0;
  int cluster = 1; // blocks sharing a segment
  int unroll = kBlockUnroll;
  int vector_along = -1; // the dim runs of 4 adjacent elements step along, or -1: none
};

std::optional<int64_t> constant_product(const Shape& shape, size_t first, size_t last) {
  return shape_numel(
      Shape(shape.begin() + static_cast<std::ptrdiff_t>(first), shape.begin() + static_cast<std::ptrdiff_t>(last)));
}

// Segment count and length in device code; group_norm splits each sample
// into num_groups segments of C/G channels times the spatial size.
void describe_segments(const EmitContext& ctx, RowShape& row) {
  const Shape& s = row.input;
  size_t rank = s.size();
  if (plan::channel_groups(*row.anchor) <= 0) {
    row.segments = ctx.product(s, 0, row.first_reduced);
    row.length = ctx.product(s, row.first_reduced, rank);
    row.length_value = constant_product(s, row.first_reduced, rank);
    return;
  }
  row.groups = plan::channel_groups(*row.anchor);
  std::string groups = std::to_string(row.groups) + "LL";
  std::string batch = ctx.product(s, 0, 1);
  row.segments = row.groups == 1 ? batch : "(" + batch + " * " + groups + ")";
  std::optional<int64_t> spatial = constant_product(s, 2, rank);
  if (s[1].is_constant()) {
    Shape per_group = {Dim::constant(s[1].value() / row.groups)};
    per_group.insert(per_group.end(), s.begin() + 2, s.end());
    row.length = ctx.product(per_group, 0, per_group.size());
    if (spatial)
      row.length_value = s[1].value() / row.groups * *spatial;
  } else {
    std::string spatial_text = ctx.product(s, 2, rank);
    row.length = "(" + ctx.dim(s[1]) + " / " + groups + ")" + (spatial_text == "1LL" ? "" : " * " + spatial_text);
    row.length = "(" + row.length + ")";
  }
}

// Bytes of cache a block of one team may take on the target.
int64_t block_cache_bytes(const Target& target) {
  // Half the opt-in limit, so that two blocks share an SM: one block per SM
  // runs its passes one after another with nothing to overlap them, and was
  // slower than reading the row twice (log_softmax [4096, 32000] on an H100:
  // the whole row cached by 1024 threads 0.618 ms, reloaded from L2 0.558 ms;
  // bench/NOTES.md v45).
  return std::max<int64_t>(kCacheBytes, target.max_shared_bytes_per_block / 2 - kStaticSharedBytes);
}

// Blocks of a cluster sharing each segment (1: none): a normalized row
// longer than a block's cache is split until each block's part has at most
// the anchor's part target (with 8 parts, until it fits), so it is read
// from global memory once instead of partly reloaded; few rows are
// split further, while each part keeps kMinClusterPart elements, so that
// they fill the SMs (bench/NOTES.md v53). Rows too long for 8 parts keep
// the prefix cache.
int cluster_size(const EmitContext& ctx, const RowShape& row, const SizeExpr& segments, int64_t cache_limit) {
  if (!ctx.target().clusters || is_reduction(*row.anchor) || row.final_op || !row.length_value ||
      *row.length_value <= kWarpSliceMax)
    return 1;
  const int64_t length = *row.length_value;
  const int64_t part_target = plan::is_row_moments(*row.anchor) ? kNormClusterPartTarget : kSoftmaxClusterPartTarget;
  int cluster = 1;
  while (length > cache_limit && cluster < kMaxClusterSize &&
         ceil_div(length, cluster) > std::min(cache_limit, part_target))
    cluster *= 2;
  if (ceil_div(length, cluster) > cache_limit)
    return 1;
  while (segments.value && cluster < kMaxClusterSize && *segments.value * cluster < ctx.target().sm_count &&
         ceil_div(length, 2 * cluster) >= kMinClusterPart)
    cluster *= 2;
  return cluster;
}

// A norm's weight or bias, as the anchor has them (none for softmax or a
// norm without them), in that order.
struct AffineParam {
  std::string name; // "weight" or "bias"
  ValueId value;
};

std::vector<AffineParam> affine_params(const Node& anchor) {
  std::vector<AffineParam> params;
  const OpDef& op = plan::op_of(anchor);
  for (const char* param : {"weight", "bias"}) {
    const int slot = op.tensor_slot(param);
    if (slot >= 0 && anchor.operands[static_cast<size_t>(slot)] != kNoId)
      params.push_back({param, anchor.operands[static_cast<size_t>(slot)]});
  }
  return params;
}

// The dim along which the kernel takes runs of 4 adjacent elements
// (row_reduce.cu "vector": 16-byte loads and stores), or -1. Runs never
// cross a row or the row's innermost dim (a constant multiple of 4), read
// no partial statistics, and a norm's weight and bias are contiguous along
// the row (layer_norm) or one per run (per channel, with a spatial size
// that is a multiple of 4).
int vector_along(const EmitContext& ctx, const RowShape& row) {
  const int along = vector_dim(row.input);
  if (!row.length_value || *row.length_value % kVectorLanes != 0 || along < static_cast<int>(row.first_reduced) ||
      !row.input[static_cast<size_t>(along)].is_constant() ||
      row.input[static_cast<size_t>(along)].value() % kVectorLanes != 0)
    return -1;
  for (ValueId value : loaded_values(ctx))
    if (ctx.is_partials(value))
      return -1;
  if (!affine_params(*row.anchor).empty() && plan::traits_of(*row.anchor).affine != AffineLayout::OverReducedDims) {
    std::optional<int64_t> spatial = constant_product(row.input, 2, row.input.size());
    if (!spatial || *spatial % kVectorLanes != 0)
      return -1;
  }
  return along;
}

// The most elements a lane of a warp slice takes in one chunk (above).
int warp_slice_unroll_max(const RowShape& row) {
  const bool softmax = !is_reduction(*row.anchor) && !plan::is_row_moments(*row.anchor);
  return softmax && row.length_value && *row.length_value >= kSoftmaxLongWarpSliceRow ? kSoftmaxWarpSliceUnrollMax
                                                                                      : kWarpSliceUnrollMax;
}

// Threads per segment, block size, segments per grid-stride item, cache.
// Normalized segments of constant length are cached: teams of warp slices
// share kCacheBytes when their rows fit; a block-wide team takes up to the
// target's limit, so a long row is read from global memory once, and a row
// longer than that keeps as much of itself cached as fits and reloads the
// rest (from L2: with two such blocks per SM the rest of the rows in flight
// is small; log_softmax [4096, 32000] on an H100, bench/NOTES.md v48).
void choose_launch(const EmitContext& ctx, RowShape& row) {
  const bool normalizes = !is_reduction(*row.anchor);
  const bool wide = !row.length_value || *row.length_value > kWarpSliceMax;
  const bool cacheable = normalizes && row.length_value && *row.length_value > 0;
  // Rows of the input (group_norm: samples), each of `groups` segments.
  SizeExpr rows = ctx.size(row.input, 0, row.first_reduced);
  SizeExpr segments = row.groups > 1 ? ctx.mul(rows, ctx.constant(row.groups)) : rows;
  if (wide)
    row.cluster = cluster_size(ctx, row, segments, block_cache_bytes(ctx.target()) / 4);
  if (row.cluster > 1) {
    // Parts are whole runs of 4 where the kernel takes them (row_reduce_main rounds alike).
    const int64_t run = row.vector_along >= 0 ? kVectorLanes : 1;
    row.cache_floats = ceil_div(ceil_div(*row.length_value, row.cluster), run) * run;
    row.block = row.team = row.cache_floats >= kLongClusterPart ? kLongRowBlock : kBlock;
  } else if (wide) {
    row.block = !row.length_value || *row.length_value >= kLongRow ? kLongRowBlock : kBlock;
    row.team = row.block;
    if (cacheable) {
      row.cache_floats = std::min(*row.length_value, block_cache_bytes(ctx.target()) / 4);
      if (row.vector_along >= 0)
        row.cache_floats -= row.cache_floats % kVectorLanes; // a run is wholly cached or not
      if (row.cache_floats * 4 > kCacheBytes)
        row.block = row.team = kLongRowBlock; // two blocks per SM: 1024 threads
    }
  } else {
    row.team = power_of_two_at_least(ceil_div(*row.length_value, warp_slice_unroll_max(row)), 32);
    // With a final reduction a block handles one row: just enough teams for its segments.
    row.block = row.final_op ? std::clamp(row.team * power_of_two_at_least(row.groups, kBlock), 32, kBlock) : kBlock;
    if (cacheable && row.block / row.team * *row.length_value * 4 <= kCacheBytes)
      row.cache_floats = *row.length_value;
  }
  if (row.team < row.block) {
    const int64_t per_lane = ceil_div(*row.length_value, row.team);
    row.unroll = power_of_two_at_least(per_lane, warp_slice_unroll_max(row));
  }
  int teams = row.block / row.team;
  row.segments_per_item = row.final_op ? static_cast<int>(row.groups) : teams;

  if (row.final_op) {
    row.items = rows; // an item is a row of the final reduction
  } else {
    row.items = row.segments_per_item == 1 ? segments : ctx.ceil_div(segments, row.segments_per_item);
  }
}

// One block per item up to kMaxBlocks (the kernel grid-strides beyond).
SizeExpr grid_blocks(const EmitContext& ctx, const SizeExpr& items) {
  if (items.value)
    return ctx.constant(std::clamp<int64_t>(*items.value, 1, kMaxBlocks));
  std::string c = items.c, limit = std::to_string(kMaxBlocks) + "LL";
  return {"(" + c + " < 1LL ? 1LL : (" + c + " > " + limit + " ? " + limit + " : " + c + "))", std::nullopt};
}

// ---- checks: the kernel has the shape the planner promises ----

std::set<ValueId> results_of(const Fusion& fusion, const std::vector<NodeId>& nodes) {
  std::set<ValueId> values;
  for (NodeId id : nodes)
    values.insert(fusion.node(id).result);
  return values;
}

std::vector<NodeId> stage_nodes(const Stage& stage) {
  std::vector<NodeId> nodes;
  if (stage.op != kNoId)
    nodes.push_back(stage.op);
  nodes.insert(nodes.end(), stage.pointwise.begin(), stage.pointwise.end());
  return nodes;
}

// Every operand computed in this kernel must come from the part that holds it:
// the prologue feeds the anchor's input, each stage's epilogue its own stage.
Status check_dataflow(const EmitContext& ctx) {
  const Fusion& fusion = ctx.fusion();
  const KernelStep& step = ctx.step();
  std::set<ValueId> in_kernel = results_of(fusion, step.nodes());
  std::set<ValueId> prologue = results_of(fusion, step.prologue);
  for (const auto& [value, buffer] : stored_values(ctx))
    if (prologue.count(value))
      return Error{"internal error: row_reduce prologue value v" + std::to_string(value) + " is materialized"};
  for (size_t s = 0; s < step.stages.size(); ++s) {
    std::set<ValueId> stage = results_of(fusion, stage_nodes(step.stages[s]));
    std::set<ValueId> feeding = s == 0 ? prologue : results_of(fusion, stage_nodes(step.stages[s - 1]));
    for (NodeId id : stage_nodes(step.stages[s])) {
      const Node& node = fusion.node(id);
      for (size_t slot = 0; slot < node.operands.size(); ++slot) {
        ValueId operand = node.operands[slot];
        if (operand == kNoId || !in_kernel.count(operand) || stage.count(operand))
          continue;
        if (!(id == step.stages[s].op && slot == 0 && feeding.count(operand)))
          return Error{"internal error: " + node.op + " in row_reduce kernel " + step.name +
                       " uses a value computed in another part of the kernel"};
      }
    }
  }
  return {};
}

Result<RowShape> analyze(const EmitContext& ctx) {
  const Fusion& fusion = ctx.fusion();
  const KernelStep& step = ctx.step();
  if (step.stages.empty() || step.stages.size() > 2 || step.stages[0].op == kNoId)
    return Error{"internal error: row_reduce kernel " + step.name + " needs an anchor and at most one fused reduction"};
  if (step.stats_out != kNoId)
    return Error{"internal error: row_reduce kernels do not emit partial statistics"};
  RowShape row;
  row.anchor = &fusion.node(step.stages[0].op);
  if (!anchor_constant(*row.anchor))
    return Error{"row_reduce: " + row.anchor->op + " is not a reduction or row normalization"};
  row.input = fusion.value(row.anchor->operands[0]).type.shape;
  std::vector<int64_t> dims = plan::reduced_dims(fusion, *row.anchor);
  size_t rank = row.input.size();
  if (rank > 0 && !plan::are_trailing(dims, rank))
    return Error{"row_reduce: " + row.anchor->op + " does not reduce the trailing dims of " + shape_str(row.input) +
                 " (a generic_reduce kernel handles that)"};
  row.first_reduced = rank == 0 ? 0 : static_cast<size_t>(dims.front());
  if (step.stages.size() == 2) {
    const Stage& final_stage = step.stages[1];
    if (final_stage.op == kNoId || !is_reduction(fusion.node(final_stage.op)) || is_reduction(*row.anchor) ||
        plan::reduced_dims(fusion, fusion.node(final_stage.op)) != dims)
      return Error{"internal error: row_reduce kernel " + step.name +
                   " fuses something other than a reduction over the normalized rows"};
    row.final_op = &fusion.node(final_stage.op);
    if (row.final_op->operands[0] !=
        fusion.node(step.stages[0].pointwise.empty() ? step.stages[0].op : step.stages[0].pointwise.back()).result)
      return Error{"internal error: the fused reduction of " + step.name + " does not reduce the normalized rows"};
  }
  if (Status flow = check_dataflow(ctx); !flow)
    return Error{flow.error()};
  for (const AffineParam& param : affine_params(*row.anchor))
    if (!ctx.is_materialized(param.value))
      return Error{"internal error: " + row.anchor->op + " " + param.name + " is not in memory"};
  describe_segments(ctx, row);
  row.vector_along = vector_along(ctx, row);
  choose_launch(ctx, row);
  if (row.unroll % kVectorLanes != 0)
    row.vector_along = -1;
  return row;
}

// ---- hook bodies ----

const char* kLoadParams = "const FusegenArgs& args, long long segment, long long i";
const char* kElementParams =
    "const FusegenArgs& args, long long segment, long long i, float value, ElementStores& stores";

std::string element_index(const RowShape& row) { return "const long long index = segment * " + row.length + " + i;"; }

// The anchor's input element i of a segment, prologue applied.
std::vector<std::string> load_body(const EmitContext& ctx, const RowShape& row) {
  Body body;
  body.declare("index", element_index(row));
  declare_coordinates(ctx, row.input, "index", body);
  PointwiseEmitter pointwise(ctx, body.lines(), row.input, coord_names(row.input.size()));
  bind_domain_loads(ctx, row.input, "index", body, pointwise);
  std::string x = pointwise.value(row.anchor->operands[0]);
  body.lines().push_back("return " + x + ";");
  return body.finish({"args", "segment", "i"});
}

// Every materialized value computed in `stage`.
std::vector<std::pair<ValueId, BufferId>> stage_stores(const EmitContext& ctx, const Stage& stage) {
  std::set<ValueId> computed = results_of(ctx.fusion(), stage_nodes(stage));
  std::vector<std::pair<ValueId, BufferId>> out;
  for (const auto& stored : stored_values(ctx))
    if (computed.count(stored.first))
      out.push_back(stored);
  return out;
}

// Stores every materialized value computed in `stage` at flat index `index`.
void store_stage(const EmitContext& ctx, const Stage& stage, const std::string& index, PointwiseEmitter& pointwise,
                 Body& body) {
  for (const auto& [value, buffer] : stage_stores(ctx, stage))
    body.lines().push_back(ctx.buffer(buffer) + "[" + index + "] = " + pointwise.value(value) + ";");
}

// One result of the anchor reduction: epilogue and stores at the segment's output element.
std::vector<std::string> store_segment_body(const EmitContext& ctx, const RowShape& row) {
  const std::vector<std::string> params = {"args", "segment", "value"};
  if (!is_reduction(*row.anchor))
    return Body().finish(params);
  Body body;
  const Shape& result = ctx.fusion().value(row.anchor->result).type.shape;
  declare_coordinates(ctx, result, "segment", body);
  PointwiseEmitter pointwise(ctx, body.lines(), result, coord_names(result.size()));
  bind_domain_loads(ctx, result, "segment", body, pointwise);
  pointwise.bind(row.anchor->result, "value");
  store_stage(ctx, ctx.step().stages[0], "segment", pointwise, body);
  return body.finish(params);
}

// The channel whose affine params apply to element i of a segment.
std::string affine_index(const EmitContext& ctx, const RowShape& row) {
  const Shape& s = row.input;
  if (plan::traits_of(*row.anchor).affine == AffineLayout::OverReducedDims)
    return "i"; // position inside the normalized dims (layer_norm)
  if (plan::channel_groups(*row.anchor) <= 0)
    return "segment % " + ctx.dim(s[1]); // a segment per (sample, channel): instance_norm
  // group_norm: the segment's first channel plus the channel within the group.
  std::string spatial = ctx.product(s, 2, s.size());
  std::string within = spatial == "1LL" ? "i" : "i / " + spatial;
  if (row.groups == 1)
    return within;
  std::string per_group = s[1].is_constant() ? std::to_string(s[1].value() / row.groups) + "LL"
                                             : "(" + ctx.dim(s[1]) + " / " + std::to_string(row.groups) + "LL)";
  return "(segment % " + std::to_string(row.groups) + "LL) * " + per_group + " + " + within;
}

// `value` with the normalization's optional weight and bias applied.
std::string affine(const EmitContext& ctx, const RowShape& row, Body& body) {
  std::string result = "value";
  for (const AffineParam& param : affine_params(*row.anchor))
    result = "(" + result + (param.name == "weight" ? " * " : " + ") + ctx.read(param.value, "channel") + ")";
  if (result != "value")
    body.declare("channel", "const long long channel = " + affine_index(ctx, row) + ";");
  return result;
}

// True if store_element reads memory: the norm's affine params, or an
// operand of the ops after the anchor that is in memory. Only then do its
// stores wait for a chunk's loads (row_reduce.cu "defer_element_stores").
bool element_reads_memory(const EmitContext& ctx, const RowShape& row) {
  const Stage& stage = ctx.step().stages[0];
  for (size_t slot = 1; slot < row.anchor->operands.size(); ++slot)
    if (row.anchor->operands[slot] != kNoId && ctx.is_materialized(row.anchor->operands[slot]))
      return true;
  const std::set<ValueId> computed = results_of(ctx.fusion(), stage_nodes(stage));
  for (NodeId id : stage.pointwise)
    for (ValueId operand : ctx.fusion().node(id).operands)
      if (operand != kNoId && !computed.count(operand) && ctx.is_materialized(operand))
        return true;
  return false;
}

// One normalized element: affine params, epilogue, stores; returns what the
// final reduction folds.
std::vector<std::string> store_element_body(const EmitContext& ctx, const RowShape& row) {
  const std::vector<std::string> params = {"args", "segment", "i", "value", "stores"};
  Body body;
  if (is_reduction(*row.anchor)) {
    body.lines().push_back("return value;");
    return body.finish(params);
  }
  body.declare("index", element_index(row));
  std::string result = "value"; // softmax, or a normalization without weight and bias
  if (plan::is_row_moments(*row.anchor)) {
    const std::string scaled = affine(ctx, row, body);
    if (scaled != "value") {
      body.declare("y", "const float y = " + scaled + ";");
      result = "y";
    }
  }
  declare_coordinates(ctx, row.input, "index", body);
  PointwiseEmitter pointwise(ctx, body.lines(), row.input, coord_names(row.input.size()));
  bind_domain_loads(ctx, row.input, "index", body, pointwise);
  pointwise.bind(row.anchor->result, result);
  defer_stores(ctx, stage_stores(ctx, ctx.step().stages[0]), "index", pointwise, body.lines());
  std::string folded = row.final_op ? pointwise.value(row.final_op->operands[0]) : "value";
  body.lines().push_back("return " + folded + ";");
  return body.finish(params);
}

// ---- runs of 4 adjacent elements (row.vector_along >= 0) ----

const char* kLoad4Params = "const FusegenArgs& args, long long segment, long long i";
const char* kElement4Params =
    "const FusegenArgs& args, long long segment, long long i, float4 value, ElementStores4& stores";

// The operands the pointwise ops of this kernel load (the norm reads its
// weight and bias itself), declared for a run at element i's coordinates.
std::vector<VectorLeaf> declare_run_leaves(const EmitContext& ctx, const RowShape& row, Body& body) {
  const std::vector<AffineParam> params = affine_params(*row.anchor);
  std::vector<ValueId> values;
  for (ValueId value : loaded_values(ctx))
    if (std::none_of(params.begin(), params.end(), [&](const AffineParam& param) { return param.value == value; }))
      values.push_back(value);
  declare_coordinates(ctx, row.input, "index", body);
  return declare_vector_leaves(ctx, row.input, row.vector_along, values, coord_names(row.input.size()), body, "index");
}

// Elements i .. i + 3 of a segment (i a multiple of 4), prologue applied.
std::vector<std::string> load4_body(const EmitContext& ctx, const RowShape& row) {
  const std::vector<std::string> params = {"args", "segment", "i"};
  Body body;
  if (row.vector_along < 0) {
    body.lines().push_back("return make_float4(0.0f, 0.0f, 0.0f, 0.0f); // kVector is 1: never called");
    return body.finish(params);
  }
  body.declare("index", element_index(row));
  const std::vector<VectorLeaf> leaves = declare_run_leaves(ctx, row, body);
  const std::vector<std::string> coords = coord_names(row.input.size());
  body.declare("x", "float4 x;");
  for (int lane = 0; lane < kVectorLanes; ++lane) {
    std::vector<std::string> lines;
    PointwiseEmitter pointwise(ctx, lines, row.input, lane_coordinates(coords, row.vector_along, lane));
    bind_vector_leaves(leaves, lane, pointwise);
    append_lane_block(body, lane, lines, {{"x", pointwise.value(row.anchor->operands[0])}});
  }
  body.lines().push_back("return x;");
  return body.finish(params);
}

// store_element on elements i .. i + 3 at once: the norm's weight and bias
// as one float4 each (contiguous along the row) or one float (per channel),
// the epilogue per lane, each stored value as one float4.
std::vector<std::string> store_element4_body(const EmitContext& ctx, const RowShape& row) {
  const std::vector<std::string> params = {"args", "segment", "i", "value", "stores"};
  Body body;
  if (row.vector_along < 0 || is_reduction(*row.anchor)) {
    body.lines().push_back("return value; // never called: kVector is 1, or a reduction writes no elements");
    return body.finish(params);
  }
  body.declare("index", element_index(row));
  const bool contiguous = plan::traits_of(*row.anchor).affine == AffineLayout::OverReducedDims;
  const std::vector<AffineParam> affine = affine_params(*row.anchor);
  if (!affine.empty())
    body.declare("channel", "const long long channel = " + affine_index(ctx, row) + ";");
  for (const AffineParam& param : affine) {
    // Read-only (__ldg), as store_element reads them (EmitContext::read).
    body.declare(param.name, contiguous ? "const float4 " + param.name + " = __ldg(reinterpret_cast<const float4*>(" +
                                              ctx.value_buffer(param.value) + " + channel));"
                                        : "const float " + param.name + " = " + ctx.read(param.value, "channel") + ";");
  }
  const std::vector<VectorLeaf> leaves = declare_run_leaves(ctx, row, body);
  const std::vector<std::string> coords = coord_names(row.input.size());
  const std::vector<std::pair<ValueId, BufferId>> stores = stage_stores(ctx, ctx.step().stages[0]);
  for (size_t o = 0; o < stores.size(); ++o)
    body.declare("out" + std::to_string(o), "float4 out" + std::to_string(o) + ";");
  body.declare("folded", "float4 folded;");
  for (int lane = 0; lane < kVectorLanes; ++lane) {
    const std::string field = std::string(".") + kLaneNames[lane];
    std::string y = "value" + field;
    for (const AffineParam& param : affine)
      y = "(" + y + (param.name == "weight" ? " * " : " + ") + param.name + (contiguous ? field : "") + ")";
    std::vector<std::string> lines = {"const float y = " + y + ";"};
    PointwiseEmitter pointwise(ctx, lines, row.input, lane_coordinates(coords, row.vector_along, lane));
    bind_vector_leaves(leaves, lane, pointwise);
    pointwise.bind(row.anchor->result, "y");
    std::vector<std::pair<std::string, std::string>> fields;
    for (size_t o = 0; o < stores.size(); ++o)
      fields.push_back({"out" + std::to_string(o), pointwise.value(stores[o].first)});
    fields.push_back({"folded", row.final_op ? pointwise.value(row.final_op->operands[0]) : "value" + field});
    append_lane_block(body, lane, lines, fields);
  }
  for (size_t o = 0; o < stores.size(); ++o) {
    const std::string slot = std::to_string(o);
    body.lines().push_back("stores.at[" + slot + "] = reinterpret_cast<float4*>(" + ctx.buffer(stores[o].second) +
                           " + index);");
    body.lines().push_back("stores.value[" + slot + "] = out" + slot + ";");
  }
  body.lines().push_back("return folded;");
  return body.finish(params);
}

// One result of the final reduction: epilogue and stores at the row's output element.
std::vector<std::string> store_final_body(const EmitContext& ctx, const RowShape& row) {
  const std::vector<std::string> params = {"args", "item", "value"};
  if (!row.final_op)
    return Body().finish(params);
  Body body;
  const Shape& result = ctx.fusion().value(row.final_op->result).type.shape;
  declare_coordinates(ctx, result, "item", body);
  PointwiseEmitter pointwise(ctx, body.lines(), result, coord_names(result.size()));
  bind_domain_loads(ctx, result, "item", body, pointwise);
  pointwise.bind(row.final_op->result, "value");
  store_stage(ctx, ctx.step().stages[1], "item", pointwise, body);
  return body.finish(params);
}

std::string constant_text_hook(const std::string& type, const std::string& name, const std::string& value) {
  return "constexpr " + type + " " + name + " = " + value + ";";
}

} // namespace

Result<KernelSource> emit_row_reduce(const EmitContext& ctx) {
  Result<RowShape> analyzed = analyze(ctx);
  if (!analyzed)
    return Error{analyzed.error()};
  const RowShape& row = analyzed.value();
  if (stored_values(ctx).empty())
    return Error{"internal error: row_reduce kernel " + ctx.step().name + " stores nothing"};

  KernelSource source;
  source.template_file = "row_reduce.cu";
  source.hooks["block_size"] = constant_hook("kBlockSize", row.block);
  source.hooks["team_size"] = constant_hook("kTeamSize", row.team);
  source.hooks["segments_per_item"] = constant_hook("kSegmentsPerItem", row.segments_per_item);
  source.hooks["cluster_size"] = constant_hook("kClusterSize", row.cluster);
  source.hooks["unroll"] = constant_hook("kUnroll", row.unroll);
  source.hooks["vector"] = constant_hook("kVector", row.vector_along >= 0 ? kVectorLanes : 1);
  source.hooks["cache_floats"] = constant_hook("kCacheFloats", row.cache_floats);
  source.hooks["anchor"] = constant_text_hook("int", "kAnchor", *anchor_constant(*row.anchor));
  source.hooks["final_op"] =
      constant_text_hook("int", "kFinalOp", row.final_op ? *anchor_constant(*row.final_op) : "kRowNone");
  double eps = plan::is_row_moments(*row.anchor) ? std::get<double>(row.anchor->attrs.at("eps")) : 0.0;
  source.hooks["eps"] = constant_text_hook("float", "kEps", ops::cuda_float(eps));
  source.hooks["num_segments"] = args_function_hook("long long", "num_segments", row.segments);
  source.hooks["segment_length"] = args_function_hook("long long", "segment_length", row.length);
  source.hooks["load"] = function_hook("float", "load", kLoadParams, load_body(ctx, row));
  source.hooks["load4"] = function_hook("float4", "load4", kLoad4Params, load4_body(ctx, row));
  source.hooks["store_segment"] = function_hook(
      "void", "store_segment", "const FusegenArgs& args, long long segment, float value", store_segment_body(ctx, row));
  const int element_stores =
      is_reduction(*row.anchor) ? 0 : static_cast<int>(stage_stores(ctx, ctx.step().stages[0]).size());
  source.hooks["element_stores"] = constant_hook("kElementStores", element_stores);
  source.hooks["store_element"] = function_hook("float", "store_element", kElementParams, store_element_body(ctx, row));
  source.hooks["store_element4"] =
      function_hook("float4", "store_element4", kElement4Params, store_element4_body(ctx, row));
  source.hooks["store_final"] = function_hook(
      "void", "store_final", "const FusegenArgs& args, long long item, float value", store_final_body(ctx, row));
  // A cluster's 512-thread parts are chosen for two blocks per SM. A write
  // pass that defers its stores holds 8 addresses and values a thread: a
  // layer_norm part of 16032 floats took 92 registers, one block per SM;
  // bounded, [1024, 128256] 0.655 -> 0.612 ms. Softmax's kernels, bounded
  // the same way, were 19-39% slower, and a symbolic row's one-pass
  // moments spilled (bench/NOTES.md v55), so only these are bounded.
  const bool defers = element_stores > 0 && element_reads_memory(ctx, row);
  const bool two_blocks = row.cluster > 1 && row.block == kLongRowBlock && defers;
  const std::string bounds = two_blocks ? "kBlockSize, 2" : "kBlockSize";
  source.hooks["defer_element_stores"] = bool_hook("kDeferElementStores", defers);
  source.hooks["entry"] =
      entry_hook(ctx, bounds, "row_reduce_main(args);", row.cluster > 1 ? "__cluster_dims__(kClusterSize, 1, 1)" : "");
  SizeExpr blocks = grid_blocks(ctx, row.items);
  if (row.cluster > 1) {
    blocks = ctx.mul(blocks, ctx.constant(row.cluster));
    source.launch.variant = "a segment per cluster, a part per block";
  }
  source.launch.grid = {blocks, ctx.constant(1), ctx.constant(1)};
  source.launch.cluster = row.cluster;
  source.launch.block = row.block;
  source.launch.shared_bytes = row.block / row.team * row.cache_floats * 4;
  return source;
}

} // namespace fusegen::codegen
