#include "codegen/KernelParts.h"

#include "codegen/HookBody.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <set>
#include <span>

namespace fusegen::codegen {

std::string constant_hook(const std::string& name, int64_t value) {
  return "constexpr int " + name + " = " + std::to_string(value) + ";";
}

std::string bool_hook(const std::string& name, bool value) {
  return "constexpr bool " + name + " = " + (value ? "true" : "false") + ";";
}

std::string function_hook(const std::string& return_type, const std::string& name, const std::string& params,
                          const std::vector<std::string>& body) {
  std::string out = "__device__ __forceinline__ " + return_type + " " + name + "(" + params + ") {\n";
  for (const std::string& line : body)
    out += "  " + line + "\n";
  return out + "}";
}

std::string args_function_hook(const std::string& return_type, const std::string& name, const std::string& expr) {
  std::vector<std::string> body = {"return " + expr + ";"};
  if (!uses(expr, "args"))
    body.insert(body.begin(), "(void)args;");
  return function_hook(return_type, name, "const FusegenArgs& args", body);
}

std::string entry_hook(const EmitContext& ctx, const std::string& launch_bounds, const std::string& main_call,
                       const std::string& attributes, const std::string& name_suffix, GridWait wait) {
  std::string body = wait == GridWait::First
                         ? "  fusegen_grid_dependencies();\n  " + main_call + "\n"
                         : "  fusegen_grid_launch_dependents();\n  " + main_call + "\n  fusegen_grid_wait();\n";
  return "__global__ void __launch_bounds__(" + launch_bounds + ") " + (attributes.empty() ? "" : attributes + " ") +
         ctx.kernel_name() + name_suffix + "(const FusegenArgs args) {\n" + body + "}";
}

std::vector<std::pair<ValueId, BufferId>> stored_values(const EmitContext& ctx) {
  std::vector<std::pair<ValueId, BufferId>> result;
  for (NodeId id : ctx.step().nodes()) {
    ValueId value = ctx.fusion().node(id).result;
    BufferId buffer = ctx.plan().buffer_of(value);
    if (buffer != kNoId &&
        std::find(ctx.step().writes.begin(), ctx.step().writes.end(), buffer) != ctx.step().writes.end())
      result.push_back({value, buffer});
  }
  return result;
}

void defer_stores(const EmitContext& ctx, const std::vector<std::pair<ValueId, BufferId>>& stores,
                  const std::string& offset, PointwiseEmitter& pointwise, std::vector<std::string>& lines) {
  for (size_t i = 0; i < stores.size(); ++i) {
    const std::string slot = std::to_string(i);
    lines.push_back("stores.at[" + slot + "] = " + ctx.buffer(stores[i].second) + " + " + offset + ";");
    lines.push_back("stores.value[" + slot + "] = " + pointwise.value(stores[i].first) + ";");
  }
}

std::vector<ValueId> loaded_values(const EmitContext& ctx) {
  std::set<ValueId> computed;
  for (NodeId id : ctx.step().nodes())
    computed.insert(ctx.fusion().node(id).result);
  std::vector<ValueId> result;
  for (NodeId id : ctx.step().nodes()) {
    const Node& node = ctx.fusion().node(id);
    // A normalization applied here reads its params itself; its input is
    // loaded like any operand.
    const bool normalization = id == ctx.step().stats_in || plan::is_column_norm(node);
    const size_t operands = normalization ? std::min<size_t>(node.operands.size(), 1) : node.operands.size();
    for (ValueId operand : std::span(node.operands).first(operands)) {
      if (operand == kNoId || computed.count(operand))
        continue;
      const Value& v = ctx.fusion().value(operand);
      if (v.kind == ValueKind::Result && plan::is_constant(ctx.fusion().node(v.producer)))
        continue;
      if (std::find(result.begin(), result.end(), operand) == result.end())
        result.push_back(operand);
    }
  }
  return result;
}

int power_of_two_at_least(int64_t value, int cap) {
  int p = 1;
  while (p < cap && p < value)
    p *= 2;
  return p;
}

SizeExpr grid_stride_blocks(const EmitContext& ctx, const SizeExpr& work, int64_t per_block, int64_t cap) {
  SizeExpr blocks = ctx.ceil_div(work, per_block);
  if (blocks.value)
    return ctx.constant(std::clamp<int64_t>(*blocks.value, 1, cap));
  std::string c = blocks.c, limit = std::to_string(cap) + "LL";
  return {"(" + c + " < 1LL ? 1LL : (" + c + " > " + limit + " ? " + limit + " : " + c + "))", std::nullopt};
}

} // namespace fusegen::codegen
