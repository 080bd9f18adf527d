// `fusegen plan SPEC [--fusion NAME] [--dims N=1024]`: print the fusion plan.
#include "CommandLine.h"
#include "Commands.h"

#include "fusegen/Planner.h"

#include <iostream>

namespace fusegen::cli {

int plan_command(const std::vector<std::string>& args) {
  Result<CommandLine> parsed =
      parse_command_line(args, {{"fusion", true, false}, {"dims", true, true}, {"dump-after", true, false}});
  if (!parsed) {
    std::cerr << "fusegen plan: error: " << parsed.error() << "\n";
    return kExitUsage;
  }
  const CommandLine& line = parsed.value();
  if (line.positional.size() != 1) {
    std::cerr << "fusegen plan: error: expected one spec file (usage: fusegen plan SPEC [--dims N=1024])\n";
    return kExitUsage;
  }
  Result<DimBindings> dims = parse_dims(line.values.count("dims") ? line.values.at("dims") : std::vector<std::string>{});
  if (!dims) {
    std::cerr << "fusegen plan: error: " << dims.error() << "\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  std::unique_ptr<LoadedSpec> spec = load_spec(line.positional[0], line.value("dump-after"), exit_code);
  if (!spec)
    return exit_code;
  Result<std::vector<const Fusion*>> selected = select_fusions(spec->module, line.value("fusion"));
  if (!selected) {
    std::cerr << "fusegen plan: error: " << selected.error() << "\n";
    return kExitUsage;
  }
  for (const Fusion* fusion : selected.value()) {
    std::optional<Fusion> concrete = specialize_for(*spec, *fusion, dims.value(), exit_code);
    if (!concrete)
      return exit_code;
    std::cout << print_plan(plan_fusion(*concrete));
  }
  return kExitOk;
}

} // namespace fusegen::cli
