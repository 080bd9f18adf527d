#include "fusegen/DeadCode.h"

#include "fusegen/OpRegistry.h"

namespace fusegen {
namespace {

bool has_side_effects(const Node& node) {
  const OpDef* op = OpRegistry::builtin().find(node.op);
  return op && op->mutates && !op->mutates(node.attrs).empty();
}

} // namespace

void eliminate_dead_code(Fusion& fusion) {
  std::vector<bool> live_value(fusion.values.size(), false);
  for (const FusionOutput& output : fusion.outputs)
    live_value[output.value] = true;
  std::vector<bool> live_node(fusion.nodes.size(), false);
  for (size_t i = fusion.nodes.size(); i-- > 0;) {
    const Node& node = fusion.nodes[i];
    if (!live_value[node.result] && !has_side_effects(node))
      continue;
    live_node[i] = true;
    for (ValueId operand : node.operands)
      if (operand != kNoId)
        live_value[operand] = true;
  }

  // Renumber: arguments first (as declared), then live results in node order.
  std::vector<ValueId> new_id(fusion.values.size(), kNoId);
  Fusion result;
  result.name = fusion.name;
  result.loc = fusion.loc;
  result.precision = fusion.precision;
  result.fixed_dims = fusion.fixed_dims;
  for (ValueId id : fusion.arguments) {
    new_id[id] = add_value(result, fusion.value(id));
    result.arguments.push_back(new_id[id]);
  }
  for (size_t i = 0; i < fusion.nodes.size(); ++i) {
    if (!live_node[i])
      continue;
    Node node = fusion.nodes[i];
    for (ValueId& operand : node.operands)
      if (operand != kNoId)
        operand = new_id[operand];
    Value value = fusion.value(node.result);
    node.result = new_id[node.result] = add_value(result, std::move(value));
    NodeId node_id = add_node(result, std::move(node));
    result.value(result.nodes.back().result).producer = node_id;
  }
  for (FusionOutput output : fusion.outputs) {
    output.value = new_id[output.value];
    result.outputs.push_back(std::move(output));
  }
  fusion = std::move(result);
}

} // namespace fusegen
