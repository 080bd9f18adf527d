// Lowering as a straight list of passes: specialize, plan (group kernels,
// assign buffers), generate (kernels, launch plan, host launcher), evaluate
// the launch plan's sizes.
#include "fusegen/Lower.h"

#include "fusegen/Planner.h"

#include <cassert>

namespace fusegen {

Result<Lowered> lower(const Fusion& fusion, const DimBindings& dims, const LowerTarget& target, Diagnostics& diags) {
  std::optional<Fusion> concrete = specialize(fusion, dims, diags);
  if (!concrete)
    return Error{"fusion '" + fusion.name + "' does not specialize", fusion.loc};
  concrete->precision = target.precision;

  Plan plan = plan_fusion(*concrete);

  CodegenOptions options;
  options.arch = target.arch;
  options.precision = target.precision;
  // Not the spec's path: the source (and so the JIT's cache key) must not
  // depend on where the spec was loaded from.
  options.source_name = "fusion " + fusion.name;
  options.gemm_block = target.gemm_block;
  options.strict_product = target.strict_product;
  Result<GeneratedCode> code = generate_cuda({plan}, options);
  if (!code)
    return Error{code.error(), code.error_loc()};
  assert(code.value().fusions.size() == 1 && "one plan generates one fusion");

  Result<LaunchPlan> launch = evaluate_launch_plan(code.value().fusions[0].launch);
  if (!launch)
    return Error{launch.error()};
  std::string variants = describe_variants(code.value().fusions[0]);
  return Lowered{std::move(*concrete), std::move(code.value().source), std::move(launch.value()), std::move(variants)};
}

std::string describe_variants(const GeneratedFusion& fusion) {
  std::string out;
  for (const KernelLaunch& kernel : fusion.kernels) {
    out += out.empty() ? "" : "; ";
    out += kernel.template_file + (kernel.variant.empty() ? "" : ": " + kernel.variant);
  }
  return out;
}

} // namespace fusegen
