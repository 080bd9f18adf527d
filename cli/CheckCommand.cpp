// `fusegen check SPEC [--dims N=128] [--dump-after=PASS]`: parse and verify;
// print each fusion's signature and inferred output shapes.
#include "Commands.h"

#include "fusegen/IRPrinter.h"

#include <iomanip>
#include <iostream>

namespace fusegen::cli {
namespace {

void print_signature(const Fusion& fusion, const Fusion& shapes) {
  size_t width = 0;
  for (ValueId id : fusion.arguments)
    width = std::max(width, fusion.value(id).name.size());
  for (const FusionOutput& output : fusion.outputs)
    width = std::max(width, output.name.size());
  std::cout << "fusion " << fusion.name << " (precision=" << precision_name(fusion.precision) << ")\n";
  for (ValueId id : fusion.arguments) {
    const Value& v = fusion.value(id);
    std::cout << "  " << std::left << std::setw(6) << value_kind_name(v.kind) << " "
              << std::setw(static_cast<int>(width)) << v.name << " : " << dtype_name(v.type.dtype)
              << shape_str(v.type.shape) << "\n";
  }
  for (const FusionOutput& output : shapes.outputs) {
    const Value& v = shapes.value(output.value);
    std::cout << "  " << std::left << std::setw(6) << "output"
              << " " << std::setw(static_cast<int>(width)) << output.name << " : " << dtype_name(v.type.dtype)
              << shape_str(v.type.shape) << "\n";
  }
  std::vector<std::string> symbols = fusion.symbols();
  if (!symbols.empty()) {
    std::cout << "  dims:";
    for (const std::string& s : symbols) {
      std::cout << " " << s;
      if (auto it = fusion.fixed_dims.find(s); it != fusion.fixed_dims.end())
        std::cout << "=" << it->second.first;
    }
    std::cout << "\n";
  }
  std::cout << "  fingerprint: " << fingerprint(fusion) << "\n";
}

} // namespace

int check_command(const CheckArgs& args) {
  if (args.specs.size() != 1) {
    std::cerr << "fusegen check: error: expected one spec file (usage: fusegen check SPEC)\n";
    return kExitUsage;
  }
  Result<DimBindings> dims = parse_dims(args.dims);
  if (!dims) {
    std::cerr << "fusegen check: error: " << dims.error() << "\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  std::unique_ptr<LoadedSpec> spec = load_spec(args.specs[0], args.dump_after, exit_code);
  if (!spec)
    return exit_code;
  if (!dims_are_known(*spec, dims.value(), "check"))
    return kExitUsage;
  for (const Fusion& fusion : spec->module.fusions) {
    if (dims.value().empty()) {
      print_signature(fusion, fusion);
      continue;
    }
    // With --dims: the output shapes for those sizes (another fusion's dims are left out).
    DimBindings own;
    for (const std::string& s : fusion.symbols())
      if (dims.value().count(s))
        own[s] = dims.value().at(s);
    Status bound = check_bindings(fusion, own);
    if (!bound) { // a missing dim: a usage error, as in run and generation
      std::cerr << "fusegen check: error: " << bound.error() << "\n";
      return kExitUsage;
    }
    Diagnostics diags;
    std::optional<Fusion> concrete = specialize(fusion, own, diags);
    std::cerr << diags.render(spec->sources);
    if (!concrete)
      return kExitSpecError;
    print_signature(fusion, *concrete);
  }
  // Planning and generation refuse some specs the front end accepts (limits,
  // unsupported combinations): with --dims that is an error, as generation
  // with those dims fails; without, a warning, since the JIT and generation
  // with --dims specialize first and may not refuse it.
  if (Result<bool> generates = generation_check(*spec, dims.value()); !generates) {
    const bool specialized = !dims.value().empty();
    std::string message = specialized ? generates.error()
                                      : generates.error() + " (offline generation without --dims refuses this; "
                                                            "the JIT runtime and --dims specialize first)";
    std::cerr << render_refusal(*spec, "check", message, generates.error_loc(),
                                specialized ? Severity::Error : Severity::Warning);
    if (specialized)
      return kExitSpecError;
  }
  return kExitOk;
}

} // namespace fusegen::cli
