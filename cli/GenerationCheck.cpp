// Planning and generation as a check (`fusegen check`), and how their
// refusals are shown: at the spec location of the op that was refused.
#include "Commands.h"

#include "fusegen/Codegen.h"
#include "fusegen/Planner.h"

namespace fusegen::cli {

std::string render_refusal(const LoadedSpec& spec, const std::string& command, const std::string& message,
                           SourceLoc loc, Severity severity) {
  if (!loc.valid())
    return "fusegen" + (command.empty() ? "" : " " + command) + ": " +
           (severity == Severity::Error ? "error: " : "warning: ") + message + "\n";
  Diagnostics diags;
  if (severity == Severity::Error)
    diags.error(loc, message);
  else
    diags.warning(loc, message);
  return diags.render(spec.sources);
}

Result<bool> generation_check(const LoadedSpec& spec, const DimBindings& dims) {
  for (const Fusion& fusion : spec.module.fusions) {
    std::optional<Fusion> concrete = fusion;
    if (!dims.empty()) {
      DimBindings own;
      for (const std::string& symbol : fusion.symbols())
        if (auto it = dims.find(symbol); it != dims.end())
          own[symbol] = it->second;
      Diagnostics diags;
      if (!check_bindings(fusion, own) || !(concrete = specialize(fusion, own, diags)))
        continue; // the caller reports these itself
    }
    CodegenOptions options;
    Result<GeneratedCode> code = generate_cuda({plan_fusion(*concrete)}, options);
    if (!code)
      return Error{code.error(), code.error_loc()};
  }
  return true;
}

} // namespace fusegen::cli
