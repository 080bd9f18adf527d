#include "fusegen/LaunchPlan.h"

namespace fusegen {
namespace {

// Evaluates every size of one form into the other, stopping at the first
// that is not a number.
class Evaluator {
public:
  int64_t operator()(const SizeExpr& size, const std::string& what) {
    if (!size.value) {
      if (error_.empty())
        error_ = "internal error: " + what + " is not a constant after specialization (" + size.c + ")";
      return 0;
    }
    return *size.value;
  }
  const std::string& error() const { return error_; }

private:
  std::string error_;
};

} // namespace

Result<LaunchPlan> evaluate_launch_plan(const SymbolicLaunchPlan& plan) {
  Evaluator number;
  LaunchPlan out;
  out.fusion = plan.fusion;
  out.buffers = plan.buffers;
  out.dim_symbols = plan.dim_symbols;
  for (const KernelLaunchOf<SizeExpr>& kernel : plan.kernels) {
    KernelLaunchPlan k;
    k.name = kernel.name;
    k.kind = kernel.kind;
    for (size_t i = 0; i < 3; ++i)
      k.grid[i] = number(kernel.grid[i], "grid of " + kernel.name);
    k.block = kernel.block;
    k.shared_bytes = kernel.shared_bytes;
    for (const FillLaunchOf<SizeExpr>& fill : kernel.fills)
      k.fills.push_back({fill.buffer, fill.value_bits, number(fill.count, "fill size before " + kernel.name)});
    out.kernels.push_back(std::move(k));
  }
  for (const WorkspaceBindingOf<SizeExpr>& slot : plan.workspace)
    out.workspace.push_back(
        {slot.buffer, number(slot.offset, "workspace offset"), number(slot.bytes, "workspace size")});
  out.workspace_bytes = number(plan.workspace_bytes, "workspace size");
  for (const OutputCopyOf<SizeExpr>& copy : plan.copies)
    out.copies.push_back({copy.output, copy.buffer, number(copy.bytes, "size of output " + copy.output)});
  if (!number.error().empty())
    return Error{number.error()};
  return out;
}

} // namespace fusegen
