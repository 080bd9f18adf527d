// Planner pass 2: decides which values live in memory (arguments, outputs,
// values crossing kernels), adds statistics buffers for split
// normalizations, and records what each kernel reads and writes.
#pragma once

#include "fusegen/Plan.h"

namespace fusegen::plan {

void assign_buffers(Plan& plan);

} // namespace fusegen::plan
