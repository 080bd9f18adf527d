#include "codegen/BatchNormStats.h"

#include "fusegen/OpRegistry.h"
#include "ops/OpHelpers.h"

#include <cmath>

namespace fusegen::codegen {

std::string batch_norm_rstd(const std::string& total, double eps) {
  return "1.0f / sqrtf(fmaxf(" + total + ".m2 / " + total + ".count, 0.0f) + " + ops::cuda_float(eps) + ")";
}

std::vector<std::string> finalized_stat_writes(const EmitContext& ctx, BufferId stats, const std::string& row,
                                               double eps) {
  const std::string out = ctx.buffer(stats);
  return {"const float mean = total.mean;", out + "[2 * " + row + "] = mean;",
          out + "[2 * " + row + " + 1] = " + batch_norm_rstd("total", eps) + "; // biased variance: normalizes the batch"};
}

Result<std::vector<std::string>> batch_norm_finalize(const EmitContext& ctx, const Node& node, BufferId stats,
                                                     const std::string& channel) {
  Result<std::vector<std::string>> updates = running_stat_updates(ctx, node, channel, "mean", "total");
  if (!updates)
    return Error{updates.error()};
  std::vector<std::string> lines = finalized_stat_writes(ctx, stats, channel, std::get<double>(node.attrs.at("eps")));
  if (!updates.value().empty())
    lines.push_back("// running stats as torch updates them: momentum-weighted, unbiased variance");
  lines.insert(lines.end(), updates.value().begin(), updates.value().end());
  return lines;
}

Result<std::vector<std::string>> running_stat_updates(const EmitContext& ctx, const Node& node,
                                                      const std::string& channel, const std::string& mean,
                                                      const std::string& total) {
  double eps = std::get<double>(node.attrs.at("eps"));
  double momentum = std::get<double>(node.attrs.at("momentum"));
  if (!std::isfinite(eps) || !std::isfinite(momentum))
    return Error{"batch_norm eps and momentum must be finite"};
  const OpDef& op = *OpRegistry::builtin().find(node.op);
  std::vector<std::string> lines;
  const std::string m = ops::cuda_float(momentum), keep = ops::cuda_float(1.0 - momentum);
  for (const std::string& param : op.mutates(node.attrs)) {
    ValueId state = node.operands[static_cast<size_t>(op.tensor_slot(param))];
    if (state == kNoId || ctx.fusion().value(state).kind != ValueKind::State)
      return Error{"batch_norm's " + param + " must be a `state` tensor to be updated in place"};
    std::string at = ctx.value_buffer(state) + "[" + channel + "]";
    std::string batch = param == "running_mean" ? mean : "(" + total + ".m2 / (" + total + ".count - 1.0f))";
    lines.push_back(at + " = " + keep + " * " + at + " + " + m + " * " + batch + ";");
  }
  return lines;
}

} // namespace fusegen::codegen
