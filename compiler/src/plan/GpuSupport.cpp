#include "plan/GpuSupport.h"

#include "plan/PlanQueries.h"

#include <string>
#include <variant>

namespace fusegen::plan {
namespace {

bool attr_is(const Node& node, const std::string& name, const AttrValue& value) {
  auto it = node.attrs.find(name);
  return it == node.attrs.end() || it->second == value;
}

bool ints_all(const Node& node, const std::string& name, int64_t value) {
  auto it = node.attrs.find(name);
  if (it == node.attrs.end())
    return true;
  if (const auto* one = std::get_if<int64_t>(&it->second))
    return *one == value;
  if (const auto* many = std::get_if<std::vector<int64_t>>(&it->second)) {
    for (int64_t v : *many)
      if (v != value)
        return false;
    return true;
  }
  return false;
}

// Whether any of the input's trailing `n` dims is symbolic.
bool symbolic_spatial(const Fusion& fusion, const Node& node, int n) {
  const Shape& shape = fusion.value(node.operands[0]).type.shape;
  for (size_t i = shape.size() - static_cast<size_t>(n); i < shape.size(); ++i)
    if (shape[i].is_symbol())
      return true;
  return false;
}

// What no kernel handles about a convolution or window node; empty if supported.
std::string gap(const Fusion& fusion, const Node& node) {
  const OpTraits& traits = traits_of(node);
  const std::string dims = std::to_string(traits.spatial_dims) + "-D";
  if (traits.contraction == ContractionForm::Convolution) {
    if (traits.transposed)
      return "transposed convolutions";
    if (traits.spatial_dims != 2)
      return dims + " convolutions";
    if (std::holds_alternative<std::string>(node.attrs.at("padding")))
      return "padding=\"same\" with uneven padding (an even dilated kernel)";
    if (symbolic_spatial(fusion, node, 2))
      return "convolutions over symbolic spatial dims";
    return {};
  }
  if (traits.window == WindowCombine::None)
    return {};
  if (traits.spatial_dims != 2)
    return dims + " pools";
  if (traits.adaptive_window)
    return traits.window == WindowCombine::Max ? "adaptive max pools" : std::string{};
  if (!attr_is(node, "ceil_mode", AttrValue(false)))
    return "ceil_mode=true";
  if (!ints_all(node, "dilation", 1))
    return "dilated pools";
  if (!attr_is(node, "count_include_pad", AttrValue(true)))
    return "count_include_pad=false";
  if (!attr_is(node, "divisor_override", AttrValue(NoneAttr{})))
    return "divisor_override";
  if (symbolic_spatial(fusion, node, 2))
    return "pools over symbolic spatial dims";
  return {};
}

} // namespace

std::optional<Error> gpu_kernel_gap(const Fusion& fusion) {
  for (const Node& node : fusion.nodes) {
    std::string what = gap(fusion, node);
    if (!what.empty())
      return Error{node.op + ": no GPU kernel for " + what +
                       " yet (the reference interpreter runs it: fusegen run "
                       "--reference)",
                   node.loc};
  }
  return std::nullopt;
}

} // namespace fusegen::plan
