#include "plan/PlanQueries.h"

#include <algorithm>
#include <cassert>

namespace fusegen::plan {

const OpDef& op_of(const Node& node) {
  const OpDef* op = OpRegistry::builtin().find(node.op);
  assert(op && "verified IR has only known ops");
  return *op;
}

const OpTraits& traits_of(const Node& node) { return op_of(node).traits; }

bool is_column_norm(const Node& node) { return op_of(node).kind == OpKind::ColumnNorm; }

bool is_training_batch_norm(const Node& node) {
  if (!is_column_norm(node))
    return false;
  auto it = node.attrs.find("training");
  return it != node.attrs.end() && std::get<bool>(it->second);
}

bool is_min_max(const Node& node) {
  const OpDef& op = op_of(node);
  return op.kind == OpKind::Reduction &&
         (op.traits.statistic == Statistic::Max || op.traits.statistic == Statistic::Min);
}

bool is_row_moments(const Node& node) {
  const OpDef& op = op_of(node);
  return op.kind == OpKind::Normalization && op.traits.statistic == Statistic::Moments;
}

int64_t channel_groups(const Node& node) {
  const OpTraits& traits = traits_of(node);
  return traits.channel_groups ? traits.channel_groups(node.attrs) : 0;
}

bool is_pointwise(const Node& node) {
  OpKind kind = op_of(node).kind;
  if (kind == OpKind::ColumnNorm)
    return !is_training_batch_norm(node); // eval mode: a per-channel affine map
  return kind == OpKind::Pointwise || kind == OpKind::Identity;
}

bool is_constant(const Node& node) { return op_of(node).kind == OpKind::Constant; }

std::vector<std::vector<NodeId>> value_users(const Fusion& fusion) {
  std::vector<std::vector<NodeId>> users(fusion.values.size());
  for (const Node& node : fusion.nodes)
    for (ValueId operand : node.operands)
      if (operand != kNoId && (users[operand].empty() || users[operand].back() != node.id))
        users[operand].push_back(node.id);
  return users;
}

bool is_output(const Fusion& fusion, ValueId value) {
  for (const FusionOutput& output : fusion.outputs)
    if (output.value == value)
      return true;
  return false;
}

std::vector<int64_t> reduced_dims(const Fusion& fusion, const Node& node) {
  size_t rank = fusion.value(node.operands.at(0)).type.rank();
  if (const OpTraits& traits = traits_of(node); traits.reduced_dims)
    return traits.reduced_dims(node.attrs, rank);
  auto it = node.attrs.find("dim");
  if (it == node.attrs.end() || std::holds_alternative<NoneAttr>(it->second)) {
    std::vector<int64_t> all(rank);
    for (size_t d = 0; d < rank; ++d)
      all[d] = static_cast<int64_t>(d);
    return all;
  }
  if (const auto* single = std::get_if<int64_t>(&it->second))
    return {*single < 0 ? *single + static_cast<int64_t>(rank) : *single};
  std::vector<int64_t> dims = std::get<std::vector<int64_t>>(it->second);
  for (int64_t& d : dims)
    if (d < 0)
      d += static_cast<int64_t>(rank);
  std::sort(dims.begin(), dims.end());
  return dims;
}

bool are_trailing(const std::vector<int64_t>& dims, size_t rank) {
  if (dims.empty() || dims.size() > rank)
    return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != static_cast<int64_t>(rank - dims.size() + i))
      return false;
  return true;
}

int64_t row_group_width(const Fusion& fusion, const Node& node) {
  const Shape& shape = fusion.value(node.operands.at(0)).type.shape;
  if (shape.size() != 2 || !shape[1].is_constant() || !is_row_moments(node) ||
      reduced_dims(fusion, node) != std::vector<int64_t>{1})
    return 0;
  int64_t channels = shape[1].value();
  if (!traits_of(node).channel_groups)
    return channels;
  int64_t groups = channel_groups(node);
  return groups > 0 ? channels / groups : 0;
}

VectorOperands vector_operands(const Fusion& fusion, const Node& contraction) {
  auto multiple_of_4 = [](const Dim& d) { return d.is_constant() && d.value() % 4 == 0; };
  const Shape& a = fusion.value(contraction.operands[0]).type.shape;
  const Shape& b = fusion.value(contraction.operands[1]).type.shape;
  if (a.empty() || b.empty())
    return {};
  if (traits_of(contraction).contraction == ContractionForm::RowsTimesWeight) { // weight [N, K]: both along the depth
    const bool depth = multiple_of_4(b.back());
    return {depth, depth};
  }
  return {multiple_of_4(a.back()), multiple_of_4(b.back())};
}

} // namespace fusegen::plan
