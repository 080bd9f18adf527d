// Lowering of one fusion for the JIT: specialized at concrete dims, planned
// and generated as CUDA for one target, with the launch plan that runs it.
// The offline generator (`fusegen SPEC -o kernels.cu`) runs the same passes
// over every fusion of a spec; the host launcher it prints and the launch
// plan here come from one description (LaunchPlan.h).
#pragma once

#include "fusegen/Codegen.h"
#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"
#include "fusegen/LaunchPlan.h"
#include "fusegen/Result.h"
#include "fusegen/Specialize.h"

#include <optional>
#include <string>

namespace fusegen {

struct LowerTarget {
  int arch = 90; // sm_XY as XY
  Precision precision = Precision::Strict;
  // Every GEMM kernel's block (autotuning); a block a kernel cannot take is
  // an error naming it.
  std::optional<GemmBlock> gemm_block;
  std::optional<StrictProduct> strict_product; // the target's choice unless set
};

struct Lowered {
  Fusion concrete;    // every dim constant
  std::string source; // the .cu (kernels and host launcher)
  LaunchPlan launch;  // every size a number
  // What the emitters chose, kernel by kernel in launch order, as `fusegen
  // plan` prints it: "gemm.cu: 128x128 blocks, 3xtf32 products; reduce.cu"
  // (the template, then KernelLaunch::variant where there was a choice).
  std::string variants;
};

// The `variants` text of a generated fusion's kernels.
std::string describe_variants(const GeneratedFusion& fusion);

// Errors: when the fusion does not specialize at `dims` the Error says so
// and `diags` holds why (at the nodes' locations); otherwise `diags` has no
// error and the Error is what generation refused (at the op's location).
// Deterministic: the source depends only on the fusion, dims and target (not
// on file names).
Result<Lowered> lower(const Fusion& fusion, const DimBindings& dims, const LowerTarget& target, Diagnostics& diags);

} // namespace fusegen
