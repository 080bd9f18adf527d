// `constant`: a scalar literal in a tensor position (`h + 1.0`, `2 * x`) is
// materialized as a 0-d tensor so every pointwise op sees only tensors.
#include "ops/OpHelpers.h"

namespace fusegen {

void register_constant_ops(OpRegistry& registry) {
  registry.add({
      .name = "constant",
      .kind = OpKind::Constant,
      .params = {ops::attr("value", ParamKind::Float)},
      .infer = [](ShapeContext&) -> std::optional<TensorType> { return TensorType{DType::F32, {}}; },
      .reference = [](ReferenceContext& ctx) { ctx.out.data.assign(1, ctx.get_float("value")); },
      .mutates = {},
      .cuda = [](const std::vector<std::string>&, const Attrs& attrs) {
        return ops::cuda_float(std::get<double>(attrs.at("value")));
      },
  });
}

} // namespace fusegen
