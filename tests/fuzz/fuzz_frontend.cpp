// libFuzzer target: arbitrary bytes through the whole front end (lexer,
// parser, IR builder, passes, shape inference), then specialization with a
// few dim values and the planner. Any crash, sanitizer report, leak or hang
// is a bug; a diagnostic is the expected answer to bad input.
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"

#include <cstdint>
#include <string>

namespace {

void plan_with_dims(const fusegen::Fusion& fusion, int64_t value) {
  fusegen::DimBindings dims;
  for (const std::string& symbol : fusion.symbols())
    dims[symbol] = value;
  if (!fusegen::check_bindings(fusion, dims))
    return;
  fusegen::Diagnostics diags;
  std::optional<fusegen::Fusion> concrete = fusegen::specialize(fusion, dims, diags);
  if (concrete)
    (void)fusegen::print_plan(fusegen::plan_fusion(*concrete));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fusegen::SourceManager sources;
  uint32_t file = sources.add_buffer("fuzz.fg", std::string(reinterpret_cast<const char*>(data), size));
  fusegen::Diagnostics diags;
  std::optional<fusegen::Module> module = fusegen::compile_spec(sources, file, diags);
  (void)diags.render(sources);
  if (!module)
    return 0;
  for (const fusegen::Fusion& fusion : module->fusions) {
    (void)fusegen::print_plan(fusegen::plan_fusion(fusion));
    plan_with_dims(fusion, 1);
    plan_with_dims(fusion, 7);
  }
  return 0;
}
