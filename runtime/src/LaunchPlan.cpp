#include "LaunchPlan.h"

#include <bit>

namespace fusegen::runtime {
namespace {

Result<int64_t> number(const SizeExpr& size, const std::string& what) {
  if (!size.value)
    return Error{"internal error: " + what + " is not a constant after specialization (" + size.c + ")"};
  return *size.value;
}

Result<int64_t> buffer_elements(const PlanBuffer& buffer) {
  int64_t count = 1;
  for (size_t d = 0; d < buffer.shape.size(); ++d) {
    if (!buffer.shape[d].is_constant())
      return Error{"internal error: buffer " + buffer.name + " has a symbolic dim after specialization"};
    int64_t extent = buffer.shape[d].value();
    int64_t divisor = d < buffer.ceil_div.size() ? buffer.ceil_div[d] : 1;
    count *= divisor > 1 ? (extent + divisor - 1) / divisor : extent;
  }
  return count;
}

} // namespace

Result<LaunchPlan> make_launch_plan(const Plan& plan, const GeneratedFusion& generated) {
  LaunchPlan out;
  out.fusion = generated.name;
  out.dim_symbols = generated.dim_symbols;
  if (plan.buffers.size() > static_cast<size_t>(kMaxKernelBuffers))
    return Error{"fusion '" + generated.name + "' needs more than " + std::to_string(kMaxKernelBuffers) + " buffers"};
  for (const PlanBuffer& buffer : plan.buffers) {
    BufferBinding binding;
    binding.name = buffer.name;
    binding.role = buffer.role == PlanBuffer::Role::Argument ? BufferBinding::Role::Argument
                   : buffer.role == PlanBuffer::Role::Output ? BufferBinding::Role::Output
                                                             : BufferBinding::Role::Workspace;
    out.buffers.push_back(std::move(binding));
  }
  for (const WorkspaceSlot& slot : generated.workspace) {
    Result<int64_t> offset = number(slot.offset, "workspace offset");
    Result<int64_t> bytes = number(slot.bytes, "workspace size");
    if (!offset || !bytes)
      return Error{!offset ? offset.error() : bytes.error()};
    out.workspace.push_back({slot.buffer, offset.value(), bytes.value()});
  }
  Result<int64_t> total = number(generated.workspace_bytes, "workspace size");
  if (!total)
    return Error{total.error()};
  out.workspace_bytes = total.value();

  for (const KernelLaunch& kernel : generated.kernels) {
    KernelLaunchPlan k;
    k.name = kernel.name;
    k.kind = static_cast<uint8_t>(kernel.kind);
    for (size_t i = 0; i < 3; ++i) {
      Result<int64_t> extent = number(kernel.grid[i], "grid of " + kernel.name);
      if (!extent)
        return Error{extent.error()};
      k.grid[i] = extent.value();
    }
    k.block = kernel.block;
    k.shared_bytes = kernel.shared_bytes;
    for (const BufferFill& fill : kernel.fills) {
      // As the generated launcher does: workspace buffers by their slot,
      // others by their shape.
      FillLaunch f{fill.buffer, std::bit_cast<uint32_t>(fill.value), 0};
      bool in_workspace = false;
      for (const WorkspaceBinding& slot : out.workspace)
        if (slot.buffer == fill.buffer) {
          f.count = slot.bytes / 4;
          in_workspace = true;
        }
      if (!in_workspace) {
        Result<int64_t> count = buffer_elements(plan.buffer(fill.buffer));
        if (!count)
          return Error{count.error()};
        f.count = count.value();
      }
      k.fills.push_back(f);
    }
    out.kernels.push_back(std::move(k));
  }

  for (const FusionOutput& output : plan.fusion.outputs) {
    BufferId buffer = plan.buffer_of(output.value);
    if (buffer == kNoId)
      return Error{"internal error: output " + output.name + " of fusion '" + generated.name + "' has no buffer"};
    const PlanBuffer& held = plan.buffer(buffer);
    if (held.role == PlanBuffer::Role::Output && held.name == output.name)
      continue;
    Result<int64_t> count = buffer_elements(held);
    if (!count)
      return Error{count.error()};
    out.copies.push_back({output.name, buffer, count.value() * 4});
  }
  return out;
}

} // namespace fusegen::runtime
