// Which planned ops the GPU kernels cannot run yet. The reference interpreter
// runs every registered op, but the GEMM kernels map only 2-D, non-transposed
// convolutions and the window kernel only 2-D max/avg pools (floor mode,
// dilation 1, padding counted) and adaptive avg pools. Generation asks here
// first, so those ops are refused at their spec location with a clear message
// instead of reaching an emitter that would mis-handle them.
#pragma once

#include "fusegen/IR.h"
#include "fusegen/Result.h"

#include <optional>

namespace fusegen::plan {

// The first node of `fusion` no GPU kernel implements, as an error at its
// location naming the op and the way to run it (fusegen run --reference).
std::optional<Error> gpu_kernel_gap(const Fusion& fusion);

} // namespace fusegen::plan
