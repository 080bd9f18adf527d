// One fusion lowered for the JIT (fusegen/Lower.h: specialized at concrete
// dims, planned and generated as CUDA for one target), with lowering's
// refusals as RuntimeErrors: the source NVRTC compiles and the launch plan
// that runs it.
#pragma once

#include "fusegen/Codegen.h"
#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"
#include "fusegen/LaunchPlan.h"
#include "fusegen/Specialize.h"

#include <optional>
#include <string>

namespace fusegen::runtime {

struct GeneratedUnit {
  Fusion concrete; // every dim constant
  LaunchPlan launch;
  std::string source;
  std::string source_sha256;
  std::string variants; // Lowered::variants: "gemm.cu: 128x128 blocks, 3xtf32 products; ..."
};

// The fusion with every dim constant. Throws RuntimeError (ErrorKind::Spec)
// with the diagnostics (rendered with `sources` when given) when it does not
// specialize at `dims`.
Fusion specialize_or_throw(const Fusion& fusion, const DimBindings& dims, const SourceManager* sources);

// Throws RuntimeError: ErrorKind::Spec when the fusion does not specialize
// at `dims` (diagnostics rendered with `sources` when given), ErrorKind::Compile
// when no kernel template supports it. Deterministic: the source depends only
// on the fusion, dims, precision and arch (not on file names), so warm-up and
// the JIT produce identical bytes. `gemm_block` forces every GEMM kernel's
// block (autotuning); a block a kernel cannot take is ErrorKind::Compile.
// `strict_product` overrides the generator's choice for strict GEMMs.
GeneratedUnit generate_unit(const Fusion& fusion, const DimBindings& dims, Precision precision, int arch,
                            const SourceManager* sources, std::optional<GemmBlock> gemm_block = std::nullopt,
                            std::optional<StrictProduct> strict_product = std::nullopt);

} // namespace fusegen::runtime
