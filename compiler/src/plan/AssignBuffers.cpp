#include "plan/AssignBuffers.h"

#include "plan/GemmFamily.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <limits>
#include <set>

namespace fusegen::plan {
namespace {

void add_unique(std::vector<BufferId>& list, BufferId id) {
  if (std::find(list.begin(), list.end(), id) == list.end())
    list.push_back(id);
}

BufferId add_buffer(Plan& plan, PlanBuffer buffer) {
  plan.buffers.push_back(std::move(buffer));
  return static_cast<BufferId>(plan.buffers.size() - 1);
}

// The product of the spatial dims (2 and on) of a known shape.
int64_t positions_of(const Shape& shape) {
  int64_t positions = 1;
  for (size_t d = 2; d < shape.size(); ++d)
    positions *= shape[d].value();
  return positions;
}

// Partial statistics of a split normalization, written by `producer`:
// (count, mean, M2) triples.
PlanBuffer partials_buffer(const Plan& plan, const Node& norm, const KernelStep& producer) {
  const Fusion& fusion = plan.fusion;
  const Shape& input = fusion.value(norm.operands[0]).type.shape;
  PlanBuffer buffer;
  buffer.role = PlanBuffer::Role::Statistics;
  buffer.name = "partials_" + std::to_string(norm.id);
  if (is_column_norm(norm) && producer.kind == KernelKind::Gemm &&
      convolution_rows_are_positions(fusion, fusion.node(producer.anchor()))) {
    // A convolution's epilogue: one triple per (sample, row tile of the
    // output positions, channel); the parts of a channel are the first two
    // dims together.
    buffer.shape = {input[0], Dim::constant(positions_of(input)), input[1], Dim::constant(3)};
    buffer.ceil_div = {1, plan.options.gemm_tile_m, 1, 1};
    buffer.what = "per sample, row tile and channel: count, mean, M2 of batch_norm's input";
  } else if (is_column_norm(norm)) {
    // One triple per (tile of dim 0, channel); a tile also covers the
    // spatial dims of its samples.
    buffer.shape = {input[0], input[1], Dim::constant(3)};
    buffer.ceil_div = {plan.options.gemm_tile_m, 1, 1};
    buffer.what = "per row tile and channel: count, mean, M2 of batch_norm's input";
  } else {
    // A grouped norm (group_norm) after a convolution: one triple per
    // (sample, group, row tile of the output positions).
    int64_t groups = channel_groups(norm);
    buffer.shape = {input[0], Dim::constant(groups), Dim::constant(positions_of(input)), Dim::constant(3)};
    buffer.ceil_div = {1, 1, plan.options.gemm_tile_m, 1};
    buffer.what = "per sample, group and row tile: count, mean, M2 of " + norm.op + "'s input";
  }
  return buffer;
}

// A statistics buffer of `norm` named prefix + its id.
PlanBuffer statistics_buffer(const std::string& prefix, const Node& norm, Shape shape, std::string what) {
  PlanBuffer buffer;
  buffer.role = PlanBuffer::Role::Statistics;
  buffer.name = prefix + std::to_string(norm.id);
  buffer.shape = std::move(shape);
  buffer.what = std::move(what);
  return buffer;
}

PlanBuffer finalized_buffer(const Plan& plan, const Node& norm) {
  const Shape& input = plan.fusion.value(norm.operands[0]).type.shape;
  if (is_column_norm(norm))
    return statistics_buffer("stats_", norm, {input[1], Dim::constant(2)},
                             "per channel: batch mean, 1/sqrt(biased var + eps)");
  return statistics_buffer("stats_", norm, {input[0], Dim::constant(channel_groups(norm)), Dim::constant(2)},
                           "per sample and group: mean, 1/sqrt(biased var + eps)");
}

// A GEMM that finalizes its batch_norm (KernelStep::finalizes_stats): each
// sample's merged triples, and the arrival counters that pick the blocks
// that merge (templates/helpers.cu fusegen_finalize_sample_stats).
PlanBuffer sample_stats_buffer(const Plan& plan, const Node& norm) {
  const Shape& input = plan.fusion.value(norm.operands[0]).type.shape;
  return statistics_buffer("sample_stats_", norm, {input[0], input[1], Dim::constant(3)},
                           "per sample and channel: count, mean, M2 of batch_norm's input, merged from the row tiles");
}

PlanBuffer arrival_counters_buffer(const Plan& plan, const Node& norm) {
  const Shape& input = plan.fusion.value(norm.operands[0]).type.shape;
  // N + 1 used: a counter per sample, then the batch's.
  return statistics_buffer("counters_", norm, {Dim::constant(2), input[0]},
                           "arrival counters (32-bit): per sample, then the whole batch; zero between calls");
}

// Whether a batched convolution's input `buffer` can be stored channels-last
// by the kernel computing it (marked so): an intermediate written by one
// elementwise kernel and read by `conv` alone. That kernel then walks its
// domain channels-last, and the conv needs no copy pass (a write and a read
// of the tensor fewer; the ResNet basic block's batch_norm + relu).
bool stored_channels_last(Plan& plan, const KernelStep& conv, BufferId buffer) {
  if (plan.buffers[buffer].role != PlanBuffer::Role::Intermediate)
    return false;
  int writers = 0, readers = 0;
  bool elementwise = true;
  for (const KernelStep& step : plan.kernels) {
    if (std::find(step.writes.begin(), step.writes.end(), buffer) != step.writes.end()) {
      ++writers;
      elementwise = elementwise && step.kind == KernelKind::Elementwise;
    }
    if (&step != &conv && std::find(step.reads.begin(), step.reads.end(), buffer) != step.reads.end())
      ++readers;
  }
  if (writers != 1 || !elementwise || readers != 0)
    return false;
  plan.buffers[buffer].channels_last = true;
  return true;
}

// Rows from which a strict linear splits its weight once per call (chain 39
// v0.1: 16384; not 62 and 75 at 1024, whose weight pass would cost a tenth
// of their GEMM).
constexpr int64_t kSplitWeightMinRows = 8192;

// The product of shape's dims before `end` but `skip` (a GEMM's rows), or
// -1 if one of them is symbolic; saturates instead of overflowing.
int64_t known_rows(const Shape& shape, size_t end, size_t skip) {
  int64_t rows = 1;
  for (size_t d = 0; d < end && rows >= 0; ++d)
    if (d != skip)
      rows = !shape[d].is_constant() ? -1
             : shape[d].value() > 0 && rows > std::numeric_limits<int64_t>::max() / shape[d].value()
                 ? std::numeric_limits<int64_t>::max()
                 : rows * shape[d].value();
  return rows;
}

// The kernel that updates a node's state in place (batch_norm's running
// stats) reads and writes it.
void add_state_updates(KernelStep& step, const Node& node, const std::vector<BufferId>& value_buffer) {
  const OpDef& op = op_of(node);
  if (!op.mutates)
    return;
  for (const std::string& param : op.mutates(node.attrs)) {
    BufferId state = value_buffer[node.operands[static_cast<size_t>(op.tensor_slot(param))]];
    add_unique(step.reads, state);
    add_unique(step.writes, state);
  }
}

} // namespace

void assign_buffers(Plan& plan) {
  const Fusion& fusion = plan.fusion;
  std::vector<int> kernel_of_value(fusion.values.size(), -1);
  for (size_t k = 0; k < plan.kernels.size(); ++k)
    for (NodeId id : plan.kernels[k].nodes())
      kernel_of_value[fusion.node(id).result] = static_cast<int>(k);

  // Arguments first, in declaration order, then outputs.
  std::vector<BufferId> value_buffer(fusion.values.size(), kNoId);
  for (ValueId id : fusion.arguments)
    value_buffer[id] = add_buffer(plan, {fusion.value(id).name,
                                         PlanBuffer::Role::Argument,
                                         id,
                                         fusion.value(id).type.shape,
                                         {},
                                         "",
                                         PlanBuffer::Combine::None});
  for (const FusionOutput& output : fusion.outputs)
    if (value_buffer[output.value] == kNoId)
      value_buffer[output.value] = add_buffer(plan, {output.name,
                                                     PlanBuffer::Role::Output,
                                                     output.value,
                                                     fusion.value(output.value).type.shape,
                                                     {},
                                                     "",
                                                     PlanBuffer::Combine::None});

  // Values crossing kernels.
  for (const Node& node : fusion.nodes) {
    if (is_constant(node))
      continue;
    int consumer = kernel_of_value[node.result];
    for (ValueId operand : node.operands) {
      if (operand == kNoId || value_buffer[operand] != kNoId)
        continue;
      const Node& producer = fusion.node(fusion.value(operand).producer);
      if (is_constant(producer) || kernel_of_value[operand] == consumer)
        continue;
      value_buffer[operand] = add_buffer(plan, {"t" + std::to_string(operand),
                                                PlanBuffer::Role::Intermediate,
                                                operand,
                                                fusion.value(operand).type.shape,
                                                {},
                                                "",
                                                PlanBuffer::Combine::None});
    }
  }

  // A row minimum/maximum kept as one partial per column tile (the GEMM's
  // row_reduce_parts): [parts, rows], read by combining the parts.
  for (const KernelStep& step : plan.kernels) {
    if (step.row_reduce_parts == 0)
      continue;
    const Node& reduce = fusion.node(step.stages.back().op);
    const Shape& input = fusion.value(reduce.operands[0]).type.shape;
    PlanBuffer& buffer = plan.buffers.at(value_buffer[reduce.result]);
    buffer.shape = {input[1], input[0]};
    buffer.ceil_div = {plan.options.gemm_tile_n, 1};
    buffer.combine =
        traits_of(reduce).statistic == Statistic::Min ? PlanBuffer::Combine::Min : PlanBuffer::Combine::Max;
    const std::string combine = combine_name(buffer.combine);
    buffer.what = "per " + std::to_string(plan.options.gemm_tile_n) + "-column tile and row: the " + combine +
                  " of the tile's columns; readers take the " + combine + " of the " +
                  std::to_string(step.row_reduce_parts) + " parts";
  }

  // Reads and writes of value buffers.
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    KernelStep& step = plan.kernels[k];
    std::set<ValueId> computed;
    for (NodeId id : step.nodes())
      computed.insert(fusion.node(id).result);
    for (NodeId id : step.nodes()) {
      const Node& node = fusion.node(id);
      for (ValueId operand : node.operands)
        if (operand != kNoId && !computed.count(operand) && value_buffer[operand] != kNoId)
          add_unique(step.reads, value_buffer[operand]);
      if (value_buffer[node.result] != kNoId)
        add_unique(step.writes, value_buffer[node.result]);
      // In-place updates (batch_norm running stats) happen where the op is
      // finalized: the finalize kernel, not the apply kernel (below); or
      // here, where the kernel computes the whole op (a GEMM's column norm).
      if (id != step.stats_in && id != step.stats_out)
        add_state_updates(step, node, value_buffer);
    }
  }

  // Statistics buffers of split normalizations.
  for (const Node& node : fusion.nodes) {
    int producer = -1, finalizer = -1;
    std::vector<size_t> appliers;
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      const KernelStep& step = plan.kernels[k];
      if (step.stats_out == node.id)
        producer = static_cast<int>(k);
      if (step.stats_in == node.id) {
        if (step.kind == KernelKind::StatsFinalize)
          finalizer = static_cast<int>(k);
        else
          appliers.push_back(k);
      }
    }
    if (producer < 0)
      continue;
    BufferId partials = add_buffer(plan, partials_buffer(plan, node, plan.kernels[static_cast<size_t>(producer)]));
    plan.kernels[static_cast<size_t>(producer)].writes.push_back(partials);
    if (KernelStep& source = plan.kernels[static_cast<size_t>(producer)]; source.kind == KernelKind::ColumnStats)
      add_unique(source.reads, value_buffer[node.operands[0]]);
    const OpDef& op = op_of(node);
    std::vector<std::string> mutated = op.mutates ? op.mutates(node.attrs) : std::vector<std::string>{};
    KernelStep& source = plan.kernels[static_cast<size_t>(producer)];
    if (finalizer < 0 && !source.finalizes_stats) { // the apply merges the partials (and updates the running stats)
      for (size_t k : appliers) {
        add_unique(plan.kernels[k].reads, partials);
        add_state_updates(plan.kernels[k], node, value_buffer);
      }
      continue;
    }
    BufferId finalized = add_buffer(plan, finalized_buffer(plan, node));
    KernelStep& finalize = finalizer >= 0 ? plan.kernels[static_cast<size_t>(finalizer)] : source;
    add_unique(finalize.reads, partials);
    add_unique(finalize.writes, finalized);
    add_state_updates(finalize, node, value_buffer);
    if (finalizer < 0)
      for (BufferId merge :
           {add_buffer(plan, sample_stats_buffer(plan, node)), add_buffer(plan, arrival_counters_buffer(plan, node))}) {
        add_unique(finalize.reads, merge);
        add_unique(finalize.writes, merge);
      }
    for (size_t k : appliers) {
      add_unique(plan.kernels[k].reads, finalized);
      // The apply step reads only the input and affine params, not the running stats.
      std::erase_if(plan.kernels[k].reads, [&](BufferId id) {
        const PlanBuffer& b = plan.buffers[id];
        for (const std::string& param : mutated)
          if (b.value == node.operands[static_cast<size_t>(op.tensor_slot(param))])
            return true;
        return false;
      });
    }
  }
  // A strict linear over many rows may split its weight's fp32 values into
  // tf32 parts once per call (a pass over the weight) instead of once per
  // block in shared memory, which cost 9% of chain 39's GEMM (bench/NOTES.md
  // v21): the pass costs a read and a write of the weight, which pays when
  // every block row re-reads it many times.
  for (KernelStep& step : plan.kernels) {
    if (step.kind != KernelKind::Gemm || fusion.precision != Precision::Strict)
      continue;
    const Node& anchor = fusion.node(step.anchor());
    if (traits_of(anchor).contraction != ContractionForm::RowsTimesWeight)
      continue; // the weight is one [N, K] matrix that every block row re-reads
    const Shape& x = fusion.value(anchor.operands[0]).type.shape;
    const int64_t rows = x.empty() ? 1 : known_rows(x, x.size() - 1, x.size());
    ValueId weight = anchor.operands[static_cast<size_t>(op_of(anchor).tensor_slot("weight"))];
    BufferId source = value_buffer[weight];
    if (x.size() < 2 || rows < kSplitWeightMinRows || source == kNoId ||
        plan.buffers[source].role != PlanBuffer::Role::Argument)
      continue;
    PlanBuffer scratch{"tf32_small_" + plan.buffers[source].name,
                       PlanBuffer::Role::Scratch,
                       kNoId,
                       fusion.value(weight).type.shape,
                       {},
                       "tf32 small parts of " + plan.buffers[source].name +
                           ", split once per call where the GEMM runs on wgmma (sm_90)",
                       PlanBuffer::Combine::None};
    step.b_split = add_buffer(plan, scratch);
    add_unique(step.writes, step.b_split);
    add_unique(step.reads, step.b_split);
  }
  // A convolution over many channels reads channels-last copies of its
  // input and weight (bench/NOTES.md v44).
  for (KernelStep& step : plan.kernels) {
    if (step.kind != KernelKind::Gemm || !conv_reads_channels_last(fusion, fusion.node(step.anchor())))
      continue;
    const Node& conv = fusion.node(step.anchor());
    const auto spatial = static_cast<size_t>(traits_of(conv).spatial_dims);
    ValueId input = conv.operands[0], weight = conv.operands[static_cast<size_t>(op_of(conv).tensor_slot("weight"))];
    if (value_buffer[input] == kNoId || value_buffer[weight] == kNoId)
      continue;
    auto channels_last = [&](ValueId value, const std::string& prefix) {
      const Shape& shape = fusion.value(value).type.shape;
      const size_t channel = shape.size() - spatial - 1;
      Shape moved(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(channel));
      moved.insert(moved.end(), shape.begin() + static_cast<std::ptrdiff_t>(channel) + 1, shape.end());
      moved.push_back(shape[channel]);
      const std::string& source = plan.buffers[value_buffer[value]].name;
      PlanBuffer scratch{prefix + source,
                         PlanBuffer::Role::Scratch,
                         kNoId,
                         moved,
                         {},
                         "channels-last copy of " + source + " for " + conv.op + "'s vector loads",
                         PlanBuffer::Combine::None};
      BufferId id = add_buffer(plan, scratch);
      add_unique(step.writes, id);
      add_unique(step.reads, id);
      return id;
    };
    const bool batched = fusion.value(input).type.rank() == spatial + 2; // channels are dim 1
    step.a_layout = batched && stored_channels_last(plan, step, value_buffer[input])
                        ? value_buffer[input]
                        : channels_last(input, "channels_last_");
    if (!traits_of(conv).transposed) {
      step.b_layout = channels_last(weight, "channels_last_");
      continue;
    }
    // A transposed convolution's weight per (conv group, output phase): dense
    // [C_out / groups, taps of a phase, C_in / groups] slices, zeros for the
    // taps a phase lacks.
    const Shape& w = fusion.value(weight).type.shape;
    const std::vector<int64_t>& stride = std::get<std::vector<int64_t>>(conv.attrs.at("stride"));
    int64_t phases = 1;
    for (size_t d = 0; d < spatial; ++d)
      phases *= stride.size() == 1 ? stride[0] : stride[d];
    const int64_t floats = phases * w[0].value() * w[1].value() * transposed_phase_taps(fusion, conv);
    const std::string& source = plan.buffers[value_buffer[weight]].name;
    PlanBuffer scratch{"phases_" + source,
                       PlanBuffer::Role::Scratch,
                       kNoId,
                       Shape{Dim::constant(floats)},
                       {},
                       source + " per output phase, channels-last, for " + conv.op + "'s vector loads",
                       PlanBuffer::Combine::None};
    step.b_layout = add_buffer(plan, scratch);
    add_unique(step.writes, step.b_layout);
    add_unique(step.reads, step.b_layout);
  }
  // A strict convolution over many output positions whose weight is read
  // from its dense copy (above) splits that copy into tf32 parts once per
  // call, as a linear does (bench/NOTES.md v52).
  for (KernelStep& step : plan.kernels) {
    if (step.kind != KernelKind::Gemm || fusion.precision != Precision::Strict || step.b_layout == kNoId ||
        step.b_split != kNoId)
      continue;
    const Node& conv = fusion.node(step.anchor());
    const Shape& out = fusion.value(conv.result).type.shape;
    const size_t channel = out.size() - static_cast<size_t>(traits_of(conv).spatial_dims) - 1;
    if (known_rows(out, out.size(), channel) < kSplitWeightMinRows) // output positions
      continue;
    const std::string layout = plan.buffers[step.b_layout].name;
    PlanBuffer scratch{"tf32_small_" + layout,
                       PlanBuffer::Role::Scratch,
                       kNoId,
                       plan.buffers[step.b_layout].shape,
                       {},
                       "tf32 small parts of " + layout + ", split once per call where the GEMM runs on wgmma (sm_90)",
                       PlanBuffer::Combine::None};
    step.b_split = add_buffer(plan, scratch);
    add_unique(step.writes, step.b_split);
    add_unique(step.reads, step.b_split);
  }
  for (KernelStep& step : plan.kernels) {
    std::sort(step.reads.begin(), step.reads.end());
    std::sort(step.writes.begin(), step.writes.end());
  }
}

} // namespace fusegen::plan
