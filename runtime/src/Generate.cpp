#include "Generate.h"

#include "CacheKey.h"

#include "fusegen/Codegen.h"
#include "fusegen/Planner.h"
#include "fusegen/Runtime.h"
#include "fusegen/Sha256.h"

namespace fusegen::runtime {
namespace {

std::string render(const Diagnostics& diags, const SourceManager* sources) {
  if (sources)
    return diags.render(*sources);
  std::string text;
  for (const Diagnostic& d : diags.all())
    text += d.message + "\n";
  return text;
}

} // namespace

Fusion specialize_or_throw(const Fusion& fusion, const DimBindings& dims, const SourceManager* sources) {
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(fusion, dims, diags);
  if (!concrete) {
    std::string text = render(diags, sources);
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    throw RuntimeError(ErrorKind::Spec,
                       "cannot specialize fusion '" + fusion.name + "' at " + dims_text(dims) + ":\n" + text);
  }
  return std::move(*concrete);
}

GeneratedUnit generate_unit(const Fusion& fusion, const DimBindings& dims, Precision precision, int arch,
                            const SourceManager* sources, std::optional<GemmBlock> gemm_block) {
  const std::string where = "fusion '" + fusion.name + "' at " + dims_text(dims);
  Fusion concrete = specialize_or_throw(fusion, dims, sources);
  concrete.precision = precision;
  Plan plan = plan_fusion(concrete);

  CodegenOptions options;
  options.arch = arch;
  options.precision = precision;
  // Not the spec's path: the source (and so the cache key) must not depend on
  // where the spec was loaded from.
  options.source_name = "fusion " + fusion.name;
  options.gemm_block = gemm_block;
  Result<GeneratedCode> code = generate_cuda({plan}, options);
  if (!code) {
    // At the refused op's place in the spec, as the front end's errors are.
    const SourceLoc& loc = code.error_loc();
    const std::string at = loc.valid() && sources ? sources->name(loc.file) + ":" + std::to_string(loc.line) + ":" +
                                                        std::to_string(loc.col) + ": "
                                                  : "";
    throw RuntimeError(ErrorKind::Compile, at + "cannot generate CUDA for " + where + ": " + code.error());
  }
  if (code.value().fusions.size() != 1)
    throw RuntimeError(ErrorKind::Compile, "internal error: generating " + where + " gave " +
                                               std::to_string(code.value().fusions.size()) + " fusions");
  Result<LaunchPlan> launch = make_launch_plan(plan, code.value().fusions[0]);
  if (!launch)
    throw RuntimeError(ErrorKind::Compile, "cannot launch " + where + ": " + launch.error());

  GeneratedUnit unit;
  unit.concrete = std::move(concrete);
  unit.launch = std::move(launch.value());
  unit.source = std::move(code.value().source);
  unit.source_sha256 = sha256_hex(unit.source);
  return unit;
}

} // namespace fusegen::runtime
