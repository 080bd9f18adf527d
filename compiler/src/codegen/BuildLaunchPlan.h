// Builds a fusion's launch plan from the planner's buffers and the
// generator's launch metadata: the one launch sequence that the host
// launcher prints and the JIT runtime evaluates.
#pragma once

#include "fusegen/Codegen.h"
#include "fusegen/LaunchPlan.h"
#include "fusegen/Plan.h"

namespace fusegen::codegen {

SymbolicLaunchPlan build_launch_plan(const Plan& plan, const GeneratedFusion& fusion);

} // namespace fusegen::codegen
