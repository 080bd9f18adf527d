#include "codegen/BuildLaunchPlan.h"

#include <bit>
#include <cassert>

namespace fusegen::codegen {
namespace {

BufferBinding::Role binding_role(PlanBuffer::Role role) {
  switch (role) {
  case PlanBuffer::Role::Argument:
    return BufferBinding::Role::Argument;
  case PlanBuffer::Role::Output:
    return BufferBinding::Role::Output;
  case PlanBuffer::Role::Intermediate:
  case PlanBuffer::Role::Statistics:
  case PlanBuffer::Role::Scratch:
    return BufferBinding::Role::Workspace;
  }
  return BufferBinding::Role::Workspace;
}

// Floats of a buffer the caller passes, over the launcher's dim parameters:
// "1 * N * 8LL" (and its value when every dim is constant).
SizeExpr element_count(const PlanBuffer& buffer) {
  SizeExpr count{"1", 1};
  for (size_t d = 0; d < buffer.shape.size(); ++d) {
    const Dim& dim = buffer.shape[d];
    std::string extent = dim.is_constant() ? std::to_string(dim.value()) + "LL" : dim.name();
    int64_t divisor = d < buffer.ceil_div.size() ? buffer.ceil_div[d] : 1;
    if (divisor > 1)
      extent = "((" + extent + " + " + std::to_string(divisor - 1) + ") / " + std::to_string(divisor) + ")";
    count.c += " * " + extent;
    if (count.value && dim.is_constant())
      *count.value *= divisor > 1 ? (dim.value() + divisor - 1) / divisor : dim.value();
    else
      count.value.reset();
  }
  return count;
}

const WorkspaceBindingOf<SizeExpr>* workspace_slot(const SymbolicLaunchPlan& launch, BufferId buffer) {
  for (const WorkspaceBindingOf<SizeExpr>& slot : launch.workspace)
    if (slot.buffer == buffer)
      return &slot;
  return nullptr;
}

// A fill covers a workspace buffer's slot, or a caller's buffer's elements.
SizeExpr fill_count(const Plan& plan, const SymbolicLaunchPlan& launch, BufferId buffer) {
  if (const WorkspaceBindingOf<SizeExpr>* slot = workspace_slot(launch, buffer)) {
    std::optional<int64_t> floats;
    if (slot->bytes.value)
      floats = *slot->bytes.value / 4;
    return {"(" + slot->bytes.c + " / 4)", floats};
  }
  return element_count(plan.buffer(buffer));
}

} // namespace

SymbolicLaunchPlan build_launch_plan(const Plan& plan, const GeneratedFusion& fusion) {
  SymbolicLaunchPlan launch;
  launch.fusion = fusion.name;
  launch.dim_symbols = fusion.dim_symbols;
  for (const PlanBuffer& buffer : plan.buffers)
    launch.buffers.push_back({binding_role(buffer.role), buffer.name});
  for (const WorkspaceSlot& slot : fusion.workspace)
    launch.workspace.push_back({slot.buffer, slot.offset, slot.bytes});
  launch.workspace_bytes = fusion.workspace_bytes;

  for (const KernelLaunch& kernel : fusion.kernels) {
    KernelLaunchOf<SizeExpr> k;
    k.name = kernel.name;
    k.kind = static_cast<uint8_t>(kernel.kind);
    k.grid = kernel.grid;
    k.block = kernel.block;
    k.shared_bytes = kernel.shared_bytes;
    for (const BufferFill& fill : kernel.fills)
      k.fills.push_back({fill.buffer, std::bit_cast<uint32_t>(fill.value), fill_count(plan, launch, fill.buffer)});
    launch.kernels.push_back(std::move(k));
  }

  // Outputs that no kernel writes: a copy of another output, of an argument
  // or of an intermediate (`output y = h` and `output z = h`; `output y = x`).
  for (const FusionOutput& output : plan.fusion.outputs) {
    BufferId held = plan.buffer_of(output.value);
    assert(held != kNoId && "an output without a buffer");
    const PlanBuffer& buffer = plan.buffer(held);
    if (buffer.role == PlanBuffer::Role::Output && buffer.name == output.name)
      continue;
    SizeExpr floats = element_count(buffer);
    std::optional<int64_t> bytes;
    if (floats.value)
      bytes = *floats.value * 4;
    launch.copies.push_back({output.name, held, {"(size_t)(" + floats.c + ") * sizeof(float)", bytes}});
  }
  return launch;
}

} // namespace fusegen::codegen
