#include "fusegen/Planner.h"

#include "fusegen/IRPrinter.h"

namespace fusegen {
namespace {

// Size of a buffer in floats as a number, or an expression of symbols.
std::string element_count(const PlanBuffer& buffer) {
  int64_t constant = 1;
  std::string symbolic;
  for (size_t i = 0; i < buffer.shape.size(); ++i) {
    int64_t divisor = i < buffer.ceil_div.size() ? buffer.ceil_div[i] : 1;
    const Dim& d = buffer.shape[i];
    if (d.is_constant()) {
      constant *= divisor > 1 ? (d.value() + divisor - 1) / divisor : d.value();
    } else {
      symbolic += (symbolic.empty() ? "" : "*") +
                  (divisor > 1 ? "ceil(" + d.name() + "/" + std::to_string(divisor) + ")" : d.name());
    }
  }
  if (symbolic.empty())
    return std::to_string(constant);
  return constant == 1 ? symbolic : std::to_string(constant) + "*" + symbolic;
}

std::string bytes_text(const PlanBuffer& buffer) {
  std::string count = element_count(buffer);
  if (count.find_first_not_of("0123456789") != std::string::npos)
    return "4*" + count + " bytes";
  double bytes = 4.0 * std::stod(count);
  char text[64];
  if (bytes >= 1 << 20)
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1 << 20));
  else if (bytes >= 1 << 10)
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / (1 << 10));
  else
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  return text;
}

// "[ceil(N/64), 4096, 3]": the buffer's extents as allocated.
std::string tiled_shape(const PlanBuffer& buffer) {
  std::string out = "[";
  for (size_t i = 0; i < buffer.shape.size(); ++i) {
    int64_t divisor = i < buffer.ceil_div.size() ? buffer.ceil_div[i] : 1;
    const Dim& d = buffer.shape[i];
    std::string text = d.str();
    if (divisor > 1)
      text = d.is_constant() ? std::to_string((d.value() + divisor - 1) / divisor)
                             : "ceil(" + d.name() + "/" + std::to_string(divisor) + ")";
    out += (i ? ", " : "") + text;
  }
  return out + "]";
}

std::string node_text(const Fusion& fusion, NodeId id) {
  const Node& node = fusion.node(id);
  return node.op + "@" + std::to_string(node.loc.line) + ":" + std::to_string(node.loc.col) + " -> " +
         shape_str(fusion.value(node.result).type.shape);
}

} // namespace

std::string print_kernel_plan(const Plan& plan, size_t k) {
  const Fusion& fusion = plan.fusion;
  const KernelStep& step = plan.kernels[k];
  std::string out = "  kernel " + std::to_string(k) + ": fusegen_" + step.name + " [" + kernel_kind_name(step.kind) + "]\n";
  for (NodeId id : step.prologue)
    out += "    prologue  " + node_text(fusion, id) + "\n";
  for (const Stage& stage : step.stages) {
    if (stage.op != kNoId)
      out += "    op        " + node_text(fusion, stage.op) + "\n";
    for (NodeId id : stage.pointwise)
      out += std::string("    ") + (id == step.stats_in ? "apply     " : "epilogue  ") + node_text(fusion, id) + "\n";
  }
  if (step.kind == KernelKind::StatsFinalize)
    out += "    finalize  " + node_text(fusion, step.stats_in) + "\n";
  auto list = [&](const char* label, const std::vector<BufferId>& ids) {
    std::string line = std::string("    ") + label;
    for (size_t i = 0; i < ids.size(); ++i)
      line += (i ? ", " : " ") + plan.buffer(ids[i]).name;
    return line + "\n";
  };
  out += list("reads:", step.reads);
  out += list("writes:", step.writes);
  for (const std::string& note : step.notes)
    out += "    why: " + note + "\n";
  return out;
}


std::string print_plan(const Plan& plan) {
  const Fusion& fusion = plan.fusion;
  std::string out = "plan for fusion " + fusion.name + " (precision=" + precision_name(fusion.precision) +
                    "): " + std::to_string(plan.kernels.size()) +
                    (plan.kernels.size() == 1 ? " kernel\n" : " kernels\n");
  for (size_t k = 0; k < plan.kernels.size(); ++k)
    out += print_kernel_plan(plan, k);
  bool any = false;
  for (const PlanBuffer& buffer : plan.buffers) {
    if (buffer.role == PlanBuffer::Role::Argument || buffer.role == PlanBuffer::Role::Output)
      continue;
    if (!any)
      out += "  workspace:\n";
    any = true;
    out += "    " + buffer.name + " : f32" + tiled_shape(buffer) + " " + buffer_role_name(buffer.role) + ", " +
           (buffer.channels_last ? "channels-last, " : "") + bytes_text(buffer) +
           (buffer.what.empty() ? "" : " (" + buffer.what + ")") + "\n";
  }
  if (!any)
    out += "  workspace: none\n";
  return out;
}

} // namespace fusegen
