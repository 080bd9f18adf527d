#include "plan/GpuSupport.h"

#include "plan/PlanQueries.h"

#include <string>
#include <variant>

namespace fusegen::plan {
namespace {

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
  if (traits.contraction == ContractionForm::Convolution)
    return symbolic_spatial(fusion, node, traits.spatial_dims + 1)
               ? "convolutions over symbolic channel or spatial dims (give them with --dims)"
               : std::string{};
  // A pool's output extents must be constants (adaptive pools fix them).
  if (traits.window != WindowCombine::None && !traits.adaptive_window &&
      symbolic_spatial(fusion, node, traits.spatial_dims))
    return "pools over symbolic spatial dims (give them with --dims)";
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
