#include "plan/PlanQueries.h"

#include <algorithm>
#include <cassert>

namespace fusegen::plan {

const OpDef& op_of(const Node& node) {
  const OpDef* op = OpRegistry::builtin().find(node.op);
  assert(op && "verified IR has only known ops");
  return *op;
}

bool is_training_batch_norm(const Node& node) {
  if (node.op != "batch_norm")
    return false;
  auto it = node.attrs.find("training");
  return it != node.attrs.end() && std::get<bool>(it->second);
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

namespace {
std::vector<int64_t> all_from(int64_t first, size_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = first; d < static_cast<int64_t>(rank); ++d)
    dims.push_back(d);
  return dims;
}
} // namespace

std::vector<int64_t> reduced_dims(const Fusion& fusion, const Node& node) {
  const TensorType& input = fusion.value(node.operands.at(0)).type;
  size_t rank = input.rank();
  if (node.op == "group_norm")
    return all_from(1, rank);
  if (node.op == "instance_norm")
    return all_from(2, rank);
  if (node.op == "layer_norm") {
    size_t normalized = std::get<std::vector<int64_t>>(node.attrs.at("normalized_shape")).size();
    return all_from(static_cast<int64_t>(rank - normalized), rank);
  }
  if (node.op == "batch_norm") {
    std::vector<int64_t> dims = {0};
    for (int64_t d = 2; d < static_cast<int64_t>(rank); ++d)
      dims.push_back(d);
    return dims;
  }
  auto it = node.attrs.find("dim");
  if (it == node.attrs.end() || std::holds_alternative<NoneAttr>(it->second))
    return all_from(0, rank);
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
  if (shape.size() != 2 || !shape[1].is_constant())
    return 0;
  int64_t channels = shape[1].value();
  if (node.op == "group_norm") {
    int64_t groups = std::get<int64_t>(node.attrs.at("num_groups"));
    return groups > 0 ? channels / groups : 0;
  }
  if (node.op == "layer_norm" && reduced_dims(fusion, node) == std::vector<int64_t>{1})
    return channels;
  return 0;
}

VectorOperands vector_operands(const Fusion& fusion, const Node& contraction) {
  auto multiple_of_4 = [](const Dim& d) { return d.is_constant() && d.value() % 4 == 0; };
  const Shape& a = fusion.value(contraction.operands[0]).type.shape;
  const Shape& b = fusion.value(contraction.operands[1]).type.shape;
  if (a.empty() || b.empty())
    return {};
  if (contraction.op == "linear") { // weight [N, K]: both along the depth
    const bool depth = multiple_of_4(b.back());
    return {depth, depth};
  }
  return {multiple_of_4(a.back()), multiple_of_4(b.back())};
}

} // namespace fusegen::plan
