// Ops that do not change values in inference: dropout in eval mode.
#include "ops/OpHelpers.h"

namespace fusegen {
namespace {

std::optional<TensorType> infer_dropout(ShapeContext& ctx) {
  double p = ctx.get_float("p");
  // Same check as torch (which also rejects NaN), before the training check.
  if (!(p >= 0.0 && p <= 1.0))
    return ctx.error("p", "probability p has to be between 0 and 1, but got " +
                              format_double(p));
  if (ctx.get_bool("training"))
    return ctx.error("training", "training mode is not supported yet");
  return *ctx.tensor("input");
}

} // namespace

void register_misc_ops(OpRegistry& registry) {
  registry.add({
      .name = "dropout",
      .kind = OpKind::Identity,
      // torch.nn.functional.dropout defaults training=True; a fusion is an
      // inference graph, so the default here is eval mode.
      .params = {ops::tensor("input"), ops::attr("p", ParamKind::Float, 0.5),
                 ops::attr("training", ParamKind::Bool, false)},
      .infer = infer_dropout,
      .reference = [](ReferenceContext& ctx) { ctx.out.data = ctx.tensor("input")->data; },
      .mutates = {},
      .cuda = [](const std::vector<std::string>& x, const Attrs&) { return x[0]; },
  });
}

} // namespace fusegen
