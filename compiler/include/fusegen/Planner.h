// The fusion planner: splits a verified fusion into as few kernels as the
// chain allows (rules in docs/fusion.md) and assigns the buffers between them.
#pragma once

#include "fusegen/Plan.h"

#include <string>

namespace fusegen {

Plan plan_fusion(const Fusion& fusion, const PlanOptions& options = {});

// Human-readable plan: kernels, the ops each holds, buffers and their sizes
// (numbers when the plan's fusion is specialized, expressions otherwise).
std::string print_plan(const Plan& plan);
// The part of print_plan about kernel `k` (also the comment above each
// generated kernel).
std::string print_kernel_plan(const Plan& plan, size_t k);

} // namespace fusegen
