// The planner as a straight list of passes.
#include "fusegen/Planner.h"

#include "plan/AssignBuffers.h"
#include "plan/GroupKernels.h"

namespace fusegen {

Plan plan_fusion(const Fusion& fusion, const PlanOptions& options) {
  Plan plan;
  plan.fusion = fusion;
  plan.options = options;
  plan.kernels = plan::group_kernels(plan.fusion, options);
  plan::assign_buffers(plan);
  return plan;
}

} // namespace fusegen
