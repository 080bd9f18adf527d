// The GEMM kernel's epilogue stages (GemmParts.h): stage-0 pointwise ops on
// the contraction result, then optionally a row norm (group_norm /
// layer_norm over the columns of an [M, C] result) with its pointwise ops and
// a row min/max, or partial statistics for a batch_norm (per row tile and
// column) or a group_norm after a convolution (per sample, group and row tile).
#include "codegen/BatchNormStats.h"
#include "codegen/Emitters.h"
#include "codegen/GemmParts.h"
#include "codegen/HookBody.h"
#include "codegen/KernelParts.h"
#include "codegen/PointwiseEmitter.h"
#include "fusegen/OpRegistry.h"
#include "ops/OpHelpers.h"
#include "plan/GemmFamily.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace fusegen::codegen {
namespace {

size_t stage_of(const KernelStep& step, const Fusion& fusion, ValueId value) {
  const Value& v = fusion.value(value);
  for (size_t s = 0; s < step.stages.size(); ++s) {
    if (step.stages[s].op == v.producer)
      return s;
    for (NodeId id : step.stages[s].pointwise)
      if (id == v.producer)
        return s;
  }
  return step.stages.size();
}

// Every materialized value of `stage`, stored at the element's output offset.
std::vector<std::pair<ValueId, BufferId>> stage_stores(const EmitContext& ctx, size_t stage) {
  std::vector<std::pair<ValueId, BufferId>> out;
  for (const auto& stored : stored_values(ctx))
    if (stage_of(ctx.step(), ctx.fusion(), stored.first) == stage)
      out.push_back(stored);
  return out;
}

// Puts each store of `stage` in the hook's `stores` (helpers.cu
// FusegenStores: the template writes them after the loads of its next
// elements).
void store_stage(const EmitContext& ctx, size_t stage, const Shape& domain, const std::vector<std::string>& coords,
                 PointwiseEmitter& pointwise, std::vector<std::string>& body) {
  const auto stores = stage_stores(ctx, stage);
  if (!stores.empty())
    body.push_back("const long long out = " + broadcast_offset(ctx, domain, coords) + ";");
  defer_stores(ctx, stores, "out", pointwise, body);
}

} // namespace

Result<Stages> read_stages(const EmitContext& ctx, const GemmMapping& g) {
  const KernelStep& step = ctx.step();
  const Fusion& fusion = ctx.fusion();
  Stages s;
  if (step.stages.empty() || step.stages.size() > 3 || !step.prologue.empty() || step.stats_in != kNoId)
    return Error{"internal error: unexpected GEMM kernel layout (a contraction, optionally a row norm and a row "
                 "reduction; no prologue)"};
  s.contraction = &fusion.node(step.anchor());
  if (step.stages.size() >= 2) {
    s.norm = &fusion.node(step.stages[1].op);
    s.column_norm = plan::is_column_norm(*s.norm);
    if (s.column_norm) {
      if (step.stages.size() != 2 || step.stats_out != kNoId)
        return Error{"internal error: a GEMM's fused batch_norm is its last stage"};
    } else if (!plan::is_row_moments(*s.norm)) {
      return Error{"internal error: GEMM epilogue stage " + s.norm->op + " is not a row or column norm"};
    } else {
      s.norm_group = plan::row_group_width(fusion, *s.norm);
      if (s.norm_group <= 0 || kTile % s.norm_group != 0)
        return Error{"internal error: " + s.norm->op + " groups do not fit a " + std::to_string(kTile) + "-wide tile"};
    }
  }
  if (step.stages.size() == 3) {
    s.reduce = &fusion.node(step.stages[2].op);
    if (!plan::is_min_max(*s.reduce) || plan::reduced_dims(fusion, *s.reduce) != std::vector<int64_t>{1} ||
        !step.stages[2].pointwise.empty())
      return Error{"internal error: GEMM epilogue stage " + s.reduce->op + " is not a row min/max"};
    s.row_reduce = plan::traits_of(*s.reduce).statistic == Statistic::Min ? RowReduce::Min : RowReduce::Max;
    if (!ctx.is_materialized(s.reduce->result))
      return Error{"internal error: the row " + s.reduce->op + " result is not in memory"};
  }
  const bool convolution = plan::traits_of(*s.contraction).contraction == ContractionForm::Convolution;
  if (step.stats_out != kNoId) {
    s.stats = &fusion.node(step.stats_out);
    if (convolution && !plan::convolution_rows_are_positions(fusion, *s.contraction))
      return Error{"internal error: " + s.stats->op + " statistics after an unbatched or transposed " +
                   s.contraction->op + " in the GEMM epilogue"};
    if (plan::is_column_norm(*s.stats)) {
      s.stats_group = 1;
    } else if (plan::channel_groups(*s.stats) > 0 && convolution) {
      const Shape& input = shape_of(ctx, s.stats->operands[0]);
      int64_t groups = plan::channel_groups(*s.stats);
      s.stats_group = input[1].value() / groups;
      int64_t conv_groups = std::get<int64_t>(s.contraction->attrs.at("groups"));
      int64_t group_outputs = input[1].value() / conv_groups;
      if (conv_groups > 1 && group_outputs % s.stats_group != 0)
        return Error{"group_norm groups of " + std::to_string(s.stats_group) + " channels straddle the conv2d's " +
                     std::to_string(conv_groups) + " channel groups of " + std::to_string(group_outputs) +
                     "; the GEMM kernel cannot compute their statistics"};
    } else {
      return Error{"internal error: GEMM epilogue statistics for " + s.stats->op + " after " + s.contraction->op};
    }
    if (s.stats_group <= 0 || kTile % s.stats_group != 0)
      return Error{"internal error: statistics groups do not fit a " + std::to_string(kTile) + "-wide tile"};
    if (ctx.stats_buffer(s.stats->id, false) == kNoId)
      return Error{"internal error: no partial statistics buffer for " + s.stats->op};
  }
  bool needs_matrix = s.norm != nullptr || (s.stats != nullptr && plan::is_column_norm(*s.stats) && !convolution);
  if (needs_matrix && !g.is_matrix) {
    std::string operands;
    for (ValueId operand : s.contraction->operands)
      if (operand != kNoId)
        operands += (operands.empty() ? "" : " and ") + shape_str(shape_of(ctx, operand));
    return Error{s.contraction->op + " of " + operands + " gives " + shape_str(shape_of(ctx, s.contraction->result)) +
                 ", whose rows are not GEMM rows; the GEMM kernel fuses " + (s.norm ? s.norm->op : s.stats->op) +
                 " only into the result of 2-d operands"};
  }
  return s;
}

// Stage 0: the contraction result (accumulator plus bias), its pointwise ops,
// stores; returns the value the next stage reads.
std::vector<std::string> epilogue_body(const EmitContext& ctx, const GemmMapping& g, const Stages& s) {
  const Shape& domain = shape_of(ctx, s.contraction->result);
  std::vector<std::string> body = g.coord_lines;
  PointwiseEmitter pointwise(ctx, body, domain, g.coords);
  ValueId result = s.contraction->result;
  if (g.bias.empty()) {
    pointwise.bind(result, "acc");
  } else {
    std::string name = "v" + std::to_string(result);
    body.push_back("const float " + name + " = acc + " + g.bias + ";");
    pointwise.bind(result, name);
  }
  store_stage(ctx, 0, domain, g.coords, pointwise, body);
  ValueId next = s.norm ? s.norm->operands[0] : s.stats ? s.stats->operands[0] : result;
  body.push_back("return " + pointwise.value(next) + ";");
  return void_unused(body, g.coord_lines.size(), g.coords);
}

// Stage 1: the row norm's affine params on the normalized value, its
// pointwise ops, stores; returns the value the row reduction reads.
std::vector<std::string> norm_apply_body(const EmitContext& ctx, const Stages& s) {
  std::vector<std::string> body;
  if (!s.norm)
    return {"return normalized;"};
  const Shape& domain = shape_of(ctx, s.norm->result);
  std::vector<std::string> coords = {"m", "n"};
  PointwiseEmitter pointwise(ctx, body, domain, coords);
  std::string value = "normalized";
  if (ValueId weight = operand(*s.norm, "weight"); weight != kNoId)
    value += " * " + ctx.value_buffer(weight) + "[n]";
  if (ValueId bias = operand(*s.norm, "bias"); bias != kNoId)
    value += " + " + ctx.value_buffer(bias) + "[n]";
  if (value == "normalized") {
    pointwise.bind(s.norm->result, value); // no affine params
  } else {
    std::string name = "v" + std::to_string(s.norm->result);
    body.push_back("const float " + name + " = " + value + ";");
    pointwise.bind(s.norm->result, name);
  }
  store_stage(ctx, 1, domain, coords, pointwise, body);
  body.push_back("return " + pointwise.value(s.reduce ? s.reduce->operands[0] : s.norm->result) + ";");
  return body;
}

// The (count, mean, M2) triple of a statistics group (see AssignBuffers'
// partials layouts).
std::vector<std::string> stats_slot_body(const EmitContext& ctx, const GemmMapping& g, const Stages& s) {
  if (!s.stats)
    return {"return nullptr;"};
  std::string partials = ctx.buffer(ctx.stats_buffer(s.stats->id, false));
  const bool convolution = plan::traits_of(*s.contraction).contraction == ContractionForm::Convolution;
  if (plan::is_column_norm(*s.stats) && !convolution) // [ceil(M / tile), C, 3]
    return {"return " + partials + " + (row_tile * " + g.cols + " + n) * 3;"};
  int64_t conv_groups = std::get<int64_t>(s.contraction->attrs.at("groups"));
  const Shape& out = shape_of(ctx, s.contraction->result);
  int64_t positions = 1;
  for (size_t d = 2; d < out.size(); ++d)
    positions *= out[d].value();
  std::string tiles = std::to_string((positions + kTile - 1) / kTile) + "LL";
  std::vector<std::string> body;
  if (conv_groups == 1) {
    body.push_back("const long long sample = batch, channel = n;");
  } else {
    std::string cg = std::to_string(conv_groups) + "LL";
    body.push_back("const long long sample = batch / " + cg + ";");
    body.push_back("const long long channel = (batch % " + cg + ") * " + g.cols + " + n;");
  }
  if (plan::is_column_norm(*s.stats)) { // batch_norm: [N, ceil(output positions / tile), C, 3]
    body.push_back("return " + partials + " + ((sample * " + tiles + " + row_tile) * " + ctx.dim(out[1]) +
                   " + channel) * 3;");
    return body;
  }
  // group_norm: [N, G, ceil(output positions / tile), 3]
  std::string g_text = std::to_string(plan::channel_groups(*s.stats)) + "LL";
  std::string per_group = std::to_string(s.stats_group) + "LL";
  body.push_back("return " + partials + " + ((sample * " + g_text + " + channel / " + per_group + ") * " + tiles +
                 " + row_tile) * 3;");
  return body;
}

// The fused batch_norm's running stats from a column's statistics.
Result<std::vector<std::string>> column_stats_body(const EmitContext& ctx, const Stages& s) {
  std::vector<std::string> body = {"(void)args;",  "(void)batch;", "(void)n;",
                                   "(void)count;", "(void)mean;",  "(void)m2;"};
  if (!s.column_norm)
    return body;
  Result<std::vector<std::string>> updates = running_stat_updates(ctx, *s.norm, "n", "mean", "total");
  if (!updates)
    return Error{updates.error()};
  if (updates.value().empty())
    return body;
  body.push_back("const FusegenWelford total{count, mean, m2};");
  body.insert(body.end(), updates.value().begin(), updates.value().end());
  return body;
}

// The arrival counters, each sample's merged triple ([N, C, 3]), and a
// column's finalized statistics with the running stats updated, as the
// finalize kernel writes them (batch_norm_finalize).
Result<StatsFinalizeBodies> stats_finalize_bodies(const EmitContext& ctx, const Stages& s) {
  StatsFinalizeBodies bodies{{"return nullptr;"}, {"return nullptr;"}, {}};
  if (!ctx.step().finalizes_stats)
    return bodies;
  if (!s.stats || !plan::is_column_norm(*s.stats))
    return Error{"internal error: " + ctx.kernel_name() + " finalizes statistics it does not compute"};
  const Node& norm = *s.stats;
  const BufferId counters = ctx.stats_buffer("counters_", norm.id),
                 samples = ctx.stats_buffer("sample_stats_", norm.id), finalized = ctx.stats_buffer(norm.id, true);
  if (counters == kNoId || samples == kNoId || finalized == kNoId)
    return Error{"internal error: no buffers to finalize " + norm.op + "'s statistics in " + ctx.kernel_name()};
  const std::string channels = ctx.dim(shape_of(ctx, norm.operands[0])[1]);
  bodies.counters = {"return reinterpret_cast<unsigned int*>(" + ctx.buffer(counters) + ");"};
  bodies.sample_slot = {"return " + ctx.buffer(samples) + " + (batch * " + channels + " + n) * 3;"};
  Result<std::vector<std::string>> finalize = batch_norm_finalize(ctx, norm, finalized, "n");
  if (!finalize)
    return Error{finalize.error()};
  bodies.finalize_column = std::move(finalize.value());
  return bodies;
}

// The row reduction's slot: its one element per row (atomics), or with
// partials per tile the tile's own: [tile, row].
std::vector<std::string> reduce_slot_body(const EmitContext& ctx, const Stages& s) {
  if (!s.reduce)
    return {"return nullptr;"};
  if (ctx.step().row_reduce_parts == 0)
    return {"return " + ctx.value_buffer(s.reduce->result) + " + m;"};
  const Shape& input = shape_of(ctx, s.reduce->operands[0]);
  return {"return " + ctx.value_buffer(s.reduce->result) + " + (n / " + std::to_string(kTile) + ") * " +
          ctx.dim(input[0]) + " + m;"};
}

std::vector<std::string> returns(const std::string& expr) { return {"return " + expr + ";"}; }

int epilogue_stores(const EmitContext& ctx) { return static_cast<int>(stage_stores(ctx, 0).size()); }

int norm_stores(const EmitContext& ctx, const Stages& s) {
  return s.norm ? static_cast<int>(stage_stores(ctx, 1).size()) : 0;
}

} // namespace fusegen::codegen
