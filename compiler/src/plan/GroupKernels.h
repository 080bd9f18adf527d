// Planner pass 1: groups the fusion's nodes into kernels, applying the fusion
// rules of docs/fusion.md in program order.
#pragma once

#include "fusegen/Plan.h"

namespace fusegen::plan {

std::vector<KernelStep> group_kernels(const Fusion& fusion, const PlanOptions& options);

} // namespace fusegen::plan
