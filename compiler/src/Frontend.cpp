#include "fusegen/Frontend.h"

#include "fusegen/BuildIR.h"
#include "fusegen/IRPrinter.h"
#include "fusegen/Parser.h"
#include "fusegen/Passes.h"

#include <iostream>

namespace fusegen {
namespace {

void dump(const FrontendOptions& options, const std::string& point, const Fusion& fusion) {
  if (options.dump_after != "all" && options.dump_after != point)
    return;
  std::string text = "// ----- IR after " + point + " -----\n" + print_fusion(fusion);
  if (options.dump_sink)
    *options.dump_sink += text;
  else
    std::cerr << text;
}

} // namespace

std::optional<Module> compile_spec(const SourceManager& sources, uint32_t file, Diagnostics& diags,
                                   const FrontendOptions& options) {
  ast::SpecFile spec = parse_spec(sources, file, diags);
  if (diags.has_errors())
    return std::nullopt;
  Module module = build_ir(spec, diags);
  if (diags.has_errors())
    return std::nullopt;
  for (Fusion& fusion : module.fusions) {
    dump(options, "build-ir", fusion);
    for (const Pass& pass : frontend_passes()) {
      if (!pass.run(fusion, diags))
        return std::nullopt;
      dump(options, pass.name, fusion);
    }
  }
  return module;
}

} // namespace fusegen
