#include "fusegen/Plan.h"

#include <algorithm>
#include <cassert>

namespace fusegen {

const char* kernel_kind_name(KernelKind kind) {
  switch (kind) {
  case KernelKind::Elementwise: return "elementwise";
  case KernelKind::Gemm: return "gemm";
  case KernelKind::RowReduce: return "row-reduce";
  case KernelKind::Window: return "window";
  case KernelKind::ColumnStats: return "column-stats";
  case KernelKind::StatsFinalize: return "stats-finalize";
  case KernelKind::GenericReduce: return "generic-reduce";
  }
  return "?";
}

const char* buffer_role_name(PlanBuffer::Role role) {
  switch (role) {
  case PlanBuffer::Role::Argument: return "argument";
  case PlanBuffer::Role::Output: return "output";
  case PlanBuffer::Role::Intermediate: return "intermediate";
  case PlanBuffer::Role::Statistics: return "statistics";
  case PlanBuffer::Role::Scratch:
    return "scratch";
  }
  return "?";
}

const char* combine_name(PlanBuffer::Combine combine) {
  switch (combine) {
  case PlanBuffer::Combine::None:
    return "";
  case PlanBuffer::Combine::Min:
    return "min";
  case PlanBuffer::Combine::Max:
    return "max";
  }
  return "?";
}

std::vector<NodeId> KernelStep::nodes() const {
  std::vector<NodeId> result = prologue;
  for (const Stage& stage : stages) {
    if (stage.op != kNoId)
      result.push_back(stage.op);
    for (NodeId id : stage.pointwise)
      if (id != stats_in || kind != KernelKind::StatsFinalize)
        result.push_back(id);
  }
  return result;
}

NodeId KernelStep::anchor() const { return stages.empty() ? kNoId : stages.front().op; }

BufferId Plan::buffer_of(ValueId value) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].value == value && buffers[i].role != PlanBuffer::Role::Statistics &&
        buffers[i].role != PlanBuffer::Role::Scratch)
      return static_cast<BufferId>(i);
  return kNoId;
}

bool Plan::is_unwritten_argument(BufferId id) const {
  if (id == kNoId || buffer(id).role != PlanBuffer::Role::Argument)
    return false;
  for (const KernelStep& kernel : kernels)
    if (std::find(kernel.writes.begin(), kernel.writes.end(), id) != kernel.writes.end())
      return false;
  return true;
}

size_t Plan::kernel_of(NodeId node) const {
  for (size_t k = 0; k < kernels.size(); ++k)
    for (NodeId id : kernels[k].nodes())
      if (id == node)
        return k;
  assert(false && "node not planned");
  return 0;
}

} // namespace fusegen
