#include "Generate.h"

#include "CacheKey.h"

#include "fusegen/Lower.h"
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

[[noreturn]] void throw_unspecialized(const Fusion& fusion, const DimBindings& dims, const Diagnostics& diags,
                                      const SourceManager* sources) {
  std::string text = render(diags, sources);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  throw RuntimeError(ErrorKind::Spec,
                     "cannot specialize fusion '" + fusion.name + "' at " + dims_text(dims) + ":\n" + text);
}

} // namespace

Fusion specialize_or_throw(const Fusion& fusion, const DimBindings& dims, const SourceManager* sources) {
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(fusion, dims, diags);
  if (!concrete)
    throw_unspecialized(fusion, dims, diags, sources);
  return std::move(*concrete);
}

GeneratedUnit generate_unit(const Fusion& fusion, const DimBindings& dims, Precision precision, int arch,
                            const SourceManager* sources, std::optional<GemmBlock> gemm_block,
                            std::optional<StrictProduct> strict_product) {
  Diagnostics diags;
  Result<Lowered> lowered = lower(fusion, dims, LowerTarget{arch, precision, gemm_block, strict_product}, diags);
  if (!lowered) {
    if (diags.has_errors())
      throw_unspecialized(fusion, dims, diags, sources);
    // At the refused op's place in the spec, as the front end's errors are.
    const SourceLoc& loc = lowered.error_loc();
    const std::string at = loc.valid() && sources ? sources->name(loc.file) + ":" + std::to_string(loc.line) + ":" +
                                                        std::to_string(loc.col) + ": "
                                                  : "";
    throw RuntimeError(ErrorKind::Compile, at + "cannot generate CUDA for fusion '" + fusion.name + "' at " +
                                               dims_text(dims) + ": " + lowered.error());
  }
  GeneratedUnit unit;
  unit.concrete = std::move(lowered.value().concrete);
  unit.launch = std::move(lowered.value().launch);
  unit.source = std::move(lowered.value().source);
  unit.source_sha256 = sha256_hex(unit.source);
  unit.variants = std::move(lowered.value().variants);
  return unit;
}

} // namespace fusegen::runtime
