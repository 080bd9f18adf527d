// libFuzzer target: arbitrary bytes through the whole front end (lexer,
// parser, IR builder, passes, shape inference), then the planner and code
// generation (kernels and host launchers), symbolic and specialized with a
// few dim values. Any crash, sanitizer report, leak or hang is a bug; a
// diagnostic or a generation error is the expected answer to bad input.
#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"

#include <cstdint>
#include <string>

namespace {

// Generation for both targets the templates ship for; errors are answers.
void generate(const fusegen::Plan& plan) {
  for (int arch : {80, 90}) {
    fusegen::CodegenOptions options;
    options.arch = arch;
    options.source_name = "fuzz.fg";
    (void)fusegen::generate_cuda({plan}, options);
  }
}

void plan_with_dims(const fusegen::Fusion& fusion, int64_t value) {
  fusegen::DimBindings dims;
  for (const std::string& symbol : fusion.symbols())
    dims[symbol] = value;
  if (!fusegen::check_bindings(fusion, dims))
    return;
  fusegen::Diagnostics diags;
  std::optional<fusegen::Fusion> concrete = fusegen::specialize(fusion, dims, diags);
  if (!concrete)
    return;
  fusegen::Plan plan = fusegen::plan_fusion(*concrete);
  (void)fusegen::print_plan(plan);
  generate(plan);
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
    fusegen::Plan plan = fusegen::plan_fusion(fusion);
    (void)fusegen::print_plan(plan);
    generate(plan);
    plan_with_dims(fusion, 1);
    plan_with_dims(fusion, 7);
  }
  return 0;
}
