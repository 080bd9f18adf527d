// `fusegen run SPEC --fusion NAME --dims N=128 [--seed S | --inputs DIR] --reference [--save DIR]`:
// random inputs (or DIR/<name>.npy), the reference interpreter, and a summary
// of each output.
#include "Commands.h"

#include "fusegen/Interpreter.h"
#include "fusegen/Npy.h"
#include "fusegen/RandomInputs.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace fusegen::cli {
namespace {

void print_summary(const std::string& kind, const std::string& name, const HostTensor& tensor) {
  double sum = 0, abs_sum = 0;
  for (double x : tensor.data) {
    sum += x;
    abs_sum += std::fabs(x);
  }
  char line[256];
  std::snprintf(line, sizeof line, "%s %s: f32%s  sum=%.10g  mean_abs=%.10g  first:", kind.c_str(), name.c_str(),
                shape_str(tensor.shape).c_str(), sum,
                tensor.data.empty() ? 0.0 : abs_sum / static_cast<double>(tensor.data.size()));
  std::cout << line;
  for (size_t i = 0; i < tensor.data.size() && i < 8; ++i) {
    std::snprintf(line, sizeof line, " %.8g", tensor.data[i]);
    std::cout << line;
  }
  std::cout << "\n";
}

Status save_all(const std::string& dir, const std::map<std::string, HostTensor>& inputs,
                const InterpreterResult& result) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dir) / "inputs", ec);
  std::filesystem::create_directories(std::filesystem::path(dir) / "outputs", ec);
  if (ec)
    return Error{"cannot create " + dir + ": " + ec.message()};
  // Inputs are float32 values (what a device sees); results keep float64.
  for (const auto& [name, tensor] : inputs)
    if (Status s = write_npy(dir + "/inputs/" + name + ".npy", tensor, NpyType::F32); !s)
      return s;
  for (const auto& [name, tensor] : result.outputs)
    if (Status s = write_npy(dir + "/outputs/" + name + ".npy", tensor, NpyType::F64); !s)
      return s;
  for (const auto& [name, tensor] : result.state)
    if (Status s = write_npy(dir + "/outputs/" + name + ".npy", tensor, NpyType::F64); !s)
      return s;
  return Status::success();
}

} // namespace

int run_command(const RunArgs& args) {
  if (args.device)
    return device_run_command(args);
  if (args.specs.size() != 1) {
    std::cerr << "fusegen run: error: expected one spec file (usage: fusegen run SPEC --fusion NAME --dims N=128 "
                 "--reference)\n";
    return kExitUsage;
  }
  const std::string& path = args.specs[0];
  Result<DimBindings> dims = parse_dims(args.dims);
  if (!dims) {
    std::cerr << "fusegen run: error: " << dims.error() << "\n";
    return kExitUsage;
  }
  uint64_t seed = 0;
  const std::string& seed_text = args.seed;
  auto [end, ec] = std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), seed);
  if (ec != std::errc() || end != seed_text.data() + seed_text.size()) {
    std::cerr << "fusegen run: error: bad --seed '" << seed_text << "' (expected a non-negative integer)\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  std::unique_ptr<LoadedSpec> spec = load_spec(path, args.dump_after, exit_code);
  if (!spec)
    return exit_code;

  const Fusion* fusion = nullptr;
  if (args.fusion) {
    fusion = spec->module.find(*args.fusion);
    if (!fusion) {
      std::cerr << "fusegen run: error: no fusion named '" << *args.fusion << "' in " << path << "\n";
      return kExitUsage;
    }
  } else if (spec->module.fusions.size() == 1) {
    fusion = &spec->module.fusions[0];
  } else {
    std::cerr << "fusegen run: error: the spec has several fusions; choose one with --fusion NAME\n";
    return kExitUsage;
  }
  if (Status bound = check_bindings(*fusion, dims.value()); !bound) {
    std::cerr << "fusegen run: error: " << bound.error() << "\n";
    return kExitUsage;
  }
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(*fusion, dims.value(), diags);
  std::cerr << diags.render(spec->sources);
  if (!concrete)
    return kExitSpecError;

  if (Status size = check_interpreter_size(*concrete); !size) {
    std::cerr << "fusegen run: error: " << size.error() << "\n";
    return kExitSpecError;
  }
  std::map<std::string, HostTensor> inputs;
  std::string inputs_label = "seed " + std::to_string(seed);
  if (args.inputs) {
    Result<std::map<std::string, HostTensor>> loaded = load_arguments(*args.inputs, *concrete);
    if (!loaded) {
      std::cerr << "fusegen run: error: --inputs: " << loaded.error() << "\n";
      return kExitUsage;
    }
    inputs = std::move(loaded.value());
    inputs_label = "inputs " + *args.inputs;
  } else {
    inputs = make_random_arguments(*concrete, seed);
  }
  Result<InterpreterResult> result = interpret(*fusion, inputs, reference_options("run"));
  if (!result) {
    std::cerr << "fusegen run: error: " << result.error() << "\n";
    return kExitSpecError;
  }
  std::cout << "fusion " << fusion->name << " on the reference interpreter (float64), " << inputs_label << "\n";
  for (ValueId id : concrete->arguments) {
    const Value& arg = concrete->value(id);
    std::cout << "  " << value_kind_name(arg.kind) << " " << arg.name << ": f32" << shape_str(arg.type.shape) << " "
              << init_rule_name(*concrete, id) << "\n";
  }
  for (const auto& [name, tensor] : result.value().outputs)
    print_summary("output", name, tensor);
  for (const auto& [name, tensor] : result.value().state)
    print_summary("state", name, tensor);
  if (args.save) {
    if (Status saved = save_all(*args.save, inputs, result.value()); !saved) {
      std::cerr << "fusegen run: error: " << saved.error() << "\n";
      return kExitSpecError;
    }
    std::cout << "saved inputs and outputs under " << *args.save << "\n";
  }
  return kExitOk;
}

InterpreterOptions reference_options(const std::string& command) {
  InterpreterOptions options;
  const auto start = std::chrono::steady_clock::now();
  options.on_node = [command, start](size_t index, size_t count, const Node& node) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds >= 1.0)
      std::cerr << "fusegen " << command << ": reference interpreter: op " << index + 1 << " of " << count << " ("
                << node.op << ") after " << static_cast<int64_t>(seconds) << " s\n";
  };
  return options;
}

} // namespace fusegen::cli
