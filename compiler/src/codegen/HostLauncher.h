// The host launcher of one fusion in the generated .cu, printed from its
// launch plan: fusegen_<fusion>_workspace_size and fusegen_<fusion>_launch
// (the plan's fills, kernels and output copies on a stream), and their
// declarations for the header.
#pragma once

#include "fusegen/LaunchPlan.h"
#include "fusegen/Plan.h"

#include <string>

namespace fusegen::codegen {

struct HostLauncher {
  std::string definitions;  // C++ for the .cu (needs cuda_runtime.h)
  std::string declarations; // for the header
};

// `plan` is the one the launch plan was built from (for which arguments the
// launcher writes: state).
HostLauncher print_host_launcher(const Plan& plan, const SymbolicLaunchPlan& launch);

} // namespace fusegen::codegen
