#include "codegen/PointwiseEmitter.h"

#include "fusegen/OpRegistry.h"
#include "ops/OpHelpers.h"
#include "plan/PlanQueries.h"

#include <cassert>

namespace fusegen::codegen {

PointwiseEmitter::PointwiseEmitter(const EmitContext& ctx, std::vector<std::string>& lines, Shape domain,
                                   std::vector<std::string> coords)
    : ctx_(ctx), lines_(lines), domain_(std::move(domain)), coords_(std::move(coords)),
      in_kernel_(ctx.fusion().nodes.size(), false) {
  for (NodeId id : ctx.step().nodes())
    in_kernel_[id] = true;
}

void PointwiseEmitter::bind(ValueId value, std::string expr) { values_[value] = std::move(expr); }

void PointwiseEmitter::bind_stats(NodeId norm, NormTerms terms) { stats_[norm] = std::move(terms); }

std::string PointwiseEmitter::value(ValueId id) {
  if (auto it = values_.find(id); it != values_.end())
    return it->second;
  // Operands before their users, in the order a recursive walk would take
  // (first operand first), with an explicit stack: a spec may chain 10,000
  // statements, far deeper than the call stack allows (issue 23).
  std::vector<std::pair<ValueId, bool>> pending = {{id, false}};
  while (!pending.empty()) {
    auto [next, operands_done] = pending.back();
    pending.pop_back();
    if (values_.count(next))
      continue;
    const Value& v = ctx_.fusion().value(next);
    const bool computed = v.kind == ValueKind::Result && in_kernel_[v.producer];
    if (computed && !operands_done) {
      pending.push_back({next, true});
      std::vector<ValueId> operands = operands_computed_from(ctx_.fusion().node(v.producer));
      for (auto it = operands.rbegin(); it != operands.rend(); ++it)
        if (!values_.count(*it))
          pending.push_back({*it, false});
      continue;
    }
    materialize(next);
  }
  return values_.at(id);
}

std::vector<ValueId> PointwiseEmitter::operands_computed_from(const Node& node) const {
  // A normalization applied here reads only its input as a value; its
  // statistics and affine params are read from buffers (apply_split_norm,
  // apply_batch_norm_eval).
  if (node.id == ctx_.step().stats_in || plan::is_column_norm(node))
    return {node.operands[0]};
  std::vector<ValueId> operands;
  for (ValueId operand : node.operands)
    if (operand != kNoId)
      operands.push_back(operand);
  return operands;
}

void PointwiseEmitter::materialize(ValueId id) {
  const Value& v = ctx_.fusion().value(id);
  std::string expr;
  if (v.kind == ValueKind::Result && plan::is_constant(ctx_.fusion().node(v.producer))) {
    expr = ops::cuda_float(std::get<double>(ctx_.fusion().node(v.producer).attrs.at("value")));
    values_[id] = expr;
    return;
  }
  if (v.kind == ValueKind::Result && in_kernel_[v.producer])
    expr = compute(ctx_.fusion().node(v.producer));
  else
    expr = load(id);
  std::string name = "v" + std::to_string(id);
  lines_.push_back("const float " + name + " = " + expr + ";");
  values_[id] = name;
}

std::string PointwiseEmitter::load(ValueId id) {
  const Shape& shape = ctx_.fusion().value(id).type.shape;
  const std::string at = broadcast_offset(ctx_, shape, coords_);
  if (!ctx_.is_partials(id))
    return ctx_.read(id, at);
  const PlanBuffer& buffer = ctx_.plan().buffer(ctx_.plan().buffer_of(id));
  // A row minimum/maximum as partials [parts, rows] (Plan.h): the value of
  // row `at` combines its parts, in part order.
  const int64_t parts = (buffer.shape[0].value() + buffer.ceil_div[0] - 1) / buffer.ceil_div[0];
  const std::string combine = buffer.combine == PlanBuffer::Combine::Min ? "fusegen_minimum" : "fusegen_maximum";
  std::string expr = ctx_.value_buffer(id) + "[" + at + "]";
  for (int64_t p = 1; p < parts; ++p)
    expr = combine + "(" + expr + ", " + ctx_.value_buffer(id) + "[" + std::to_string(p) + "LL * " +
           ctx_.dim(buffer.shape[1]) + " + " + at + "])";
  return expr;
}

// The channel (dim 1) coordinate of a tensor of `rank` inside the domain.
std::string PointwiseEmitter::channel_coord(size_t rank) const {
  assert(rank >= 2 && coords_.size() >= rank);
  return coords_[coords_.size() - rank + 1];
}

std::string PointwiseEmitter::affine(const Node& node, const std::string& normalized, const std::string& channel,
                                     const NormTerms* bound) {
  const OpDef* op = OpRegistry::builtin().find(node.op);
  std::string result = normalized;
  ValueId weight = node.operands[static_cast<size_t>(op->tensor_slot("weight"))];
  ValueId bias = node.operands[static_cast<size_t>(op->tensor_slot("bias"))];
  auto param = [&](ValueId id, const std::string& given) { return !given.empty() ? given : ctx_.read(id, channel); };
  if (weight != kNoId)
    result = "(" + result + " * " + param(weight, bound ? bound->weight : "") + ")";
  if (bias != kNoId)
    result = "(" + result + " + " + param(bias, bound ? bound->bias : "") + ")";
  return result;
}

std::string PointwiseEmitter::apply_batch_norm_eval(const Node& node) {
  const OpDef* op = OpRegistry::builtin().find(node.op);
  std::string x = value(node.operands[0]);
  std::string c = channel_coord(ctx_.fusion().value(node.operands[0]).type.rank());
  std::string mean = ctx_.value_buffer(node.operands[static_cast<size_t>(op->tensor_slot("running_mean"))]);
  std::string var = ctx_.value_buffer(node.operands[static_cast<size_t>(op->tensor_slot("running_var"))]);
  std::string eps = ops::cuda_float(std::get<double>(node.attrs.at("eps")));
  return affine(node, "((" + x + " - " + mean + "[" + c + "]) * fusegen_rsqrt(" + var + "[" + c + "] + " + eps + "))",
                c);
}

// (x - mean) * rstd, then the affine params, for a normalization whose
// statistics another kernel computed.
std::string PointwiseEmitter::apply_split_norm(const Node& node) {
  const Fusion& fusion = ctx_.fusion();
  std::string x = value(node.operands[0]);
  const Shape& shape = fusion.value(node.operands[0]).type.shape;
  std::string c = channel_coord(shape.size());
  std::string mean, rstd;
  const NormTerms* bound = nullptr;
  if (auto it = stats_.find(node.id); it != stats_.end())
    bound = &it->second;
  if (bound && !bound->mean.empty()) {
    mean = bound->mean;
    rstd = bound->rstd;
  } else {
    BufferId stats = ctx_.stats_buffer(node.id, true);
    assert(stats != kNoId && "split normalization without finalized statistics");
    std::string base = ctx_.buffer(stats);
    std::string row;
    if (plan::is_column_norm(node)) {
      row = c;
    } else { // group_norm: statistics per (sample, group)
      int64_t groups = plan::channel_groups(node);
      std::string n = coords_[coords_.size() - shape.size()];
      std::string per_group = "(" + ctx_.dim(shape[1]) + " / " + std::to_string(groups) + "LL)";
      row = "(" + n + " * " + std::to_string(groups) + "LL + " + c + " / " + per_group + ")";
    }
    mean = base + "[2 * " + row + "]";
    rstd = base + "[2 * " + row + " + 1]";
  }
  return affine(node, "((" + x + " - " + mean + ") * " + rstd + ")", c, bound);
}

std::string PointwiseEmitter::compute(const Node& node) {
  if (node.id == ctx_.step().stats_in)
    return apply_split_norm(node);
  if (plan::is_column_norm(node))
    return apply_batch_norm_eval(node);
  const OpDef* op = OpRegistry::builtin().find(node.op);
  assert(op && op->cuda && "pointwise op without a CUDA expression");
  std::vector<std::string> operands;
  for (ValueId operand : node.operands)
    operands.push_back(operand == kNoId ? "" : value(operand));
  return op->cuda(operands, node.attrs);
}

} // namespace fusegen::codegen
