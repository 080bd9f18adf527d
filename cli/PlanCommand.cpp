// `fusegen plan SPEC [--fusion NAME] [--dims N=1024]`: print the fusion plan.
#include "Commands.h"
#include "OptionValues.h"

#include "fusegen/Codegen.h"
#include "fusegen/Planner.h"

#include <iostream>

namespace fusegen::cli {
namespace {

std::string size_text(const SizeExpr& size) { return size.value ? std::to_string(*size.value) : size.c; }

// Grid and block of each kernel, from the code generator's launch metadata.
void print_launches(const Plan& plan, std::optional<StrictProduct> strict_product) {
  CodegenOptions options;
  options.strict_product = strict_product;
  Result<GeneratedCode> code = generate_cuda({plan}, options);
  if (!code) {
    std::cout << "  launches: not available (" << code.error() << ")\n";
    return;
  }
  std::cout << "  launches:\n";
  for (const KernelLaunch& launch : code.value().fusions.at(0).kernels) {
    std::cout << "    " << launch.name << ": grid (" << size_text(launch.grid[0]) << ", " << size_text(launch.grid[1])
              << ", " << size_text(launch.grid[2]) << "), block " << launch.block << ", dynamic shared "
              << launch.shared_bytes << " B";
    if (launch.cluster > 1)
      std::cout << ", clusters of " << launch.cluster;
    for (const BufferFill& fill : launch.fills)
      std::cout << ", fills " << plan.buffer(fill.buffer).name << " with " << fill.value << " first";
    std::cout << " [" << launch.template_file << (launch.variant.empty() ? "" : ": " + launch.variant) << "]\n";
  }
}

} // namespace

int plan_command(const PlanArgs& args) {
  if (args.specs.size() != 1) {
    std::cerr << "fusegen plan: error: expected one spec file (usage: fusegen plan SPEC [--dims N=1024])\n";
    return kExitUsage;
  }
  Result<DimBindings> dims = parse_dims(args.dims);
  Result<std::optional<StrictProduct>> strict_product = parse_strict_product_option(args.strict_product);
  if (!dims || !strict_product) {
    std::cerr << "fusegen plan: error: " << (!dims ? dims.error() : strict_product.error()) << "\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  std::unique_ptr<LoadedSpec> spec = load_spec(args.specs[0], args.dump_after, exit_code);
  if (!spec)
    return exit_code;
  if (!dims_are_known(*spec, dims.value(), "plan"))
    return kExitUsage;
  Result<std::vector<const Fusion*>> selected = select_fusions(spec->module, args.fusion);
  if (!selected) {
    std::cerr << "fusegen plan: error: " << selected.error() << "\n";
    return kExitUsage;
  }
  for (const Fusion* fusion : selected.value()) {
    std::optional<Fusion> concrete = specialize_for(*spec, *fusion, dims.value(), exit_code);
    if (!concrete)
      return exit_code;
    Plan plan = plan_fusion(*concrete);
    std::cout << print_plan(plan);
    print_launches(plan, strict_product.value());
  }
  return kExitOk;
}

} // namespace fusegen::cli
