#include "codegen/VectorLanes.h"

namespace fusegen::codegen {

int vector_dim(const Shape& domain) {
  for (size_t d = domain.size(); d-- > 0;)
    if (!is_unit(domain[d]))
      return static_cast<int>(d);
  return -1;
}

std::vector<VectorLeaf> declare_vector_leaves(const EmitContext& ctx, const Shape& domain, int along,
                                              const std::vector<ValueId>& values,
                                              const std::vector<std::string>& coords, Body& body,
                                              const std::string& flat_index) {
  std::vector<VectorLeaf> leaves;
  for (ValueId value : values) {
    const Shape& shape = ctx.fusion().value(value).type.shape;
    // Shapes broadcast from the right: the operand's dim under the domain's.
    const int own = static_cast<int>(shape.size()) - static_cast<int>(domain.size()) + along;
    VectorLeaf leaf{value, "in" + std::to_string(value), own >= 0 && !is_unit(shape[static_cast<size_t>(own)])};
    const std::string offset =
        !flat_index.empty() && shape == domain ? flat_index : broadcast_offset(ctx, shape, coords);
    if (leaf.varies)
      body.declare(leaf.name, "const float4 " + leaf.name + " = *reinterpret_cast<const float4*>(" +
                                  ctx.value_buffer(value) + " + " + offset + ");");
    else
      body.declare(leaf.name, "const float " + leaf.name + " = " + ctx.value_buffer(value) + "[" + offset + "];");
    leaves.push_back(std::move(leaf));
  }
  return leaves;
}

std::vector<std::string> lane_coordinates(const std::vector<std::string>& coords, int along, int lane) {
  std::vector<std::string> out = coords;
  out[static_cast<size_t>(along)] = "(" + coords[static_cast<size_t>(along)] + " + " + std::to_string(lane) + ")";
  return out;
}

void bind_vector_leaves(const std::vector<VectorLeaf>& leaves, int lane, PointwiseEmitter& pointwise) {
  for (const VectorLeaf& leaf : leaves)
    pointwise.bind(leaf.value, leaf.varies ? leaf.name + "." + kLaneNames[lane] : leaf.name);
}

void append_lane_block(Body& body, int lane, const std::vector<std::string>& lines,
                       const std::vector<std::pair<std::string, std::string>>& fields) {
  body.lines().push_back("{ // lane " + std::to_string(lane));
  for (const std::string& line : lines)
    body.lines().push_back("  " + line);
  for (const auto& [variable, value] : fields)
    body.lines().push_back("  " + variable + "." + kLaneNames[lane] + " = " + value + ";");
  body.lines().push_back("}");
}

} // namespace fusegen::codegen
