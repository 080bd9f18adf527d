// `fusegen run SPEC --device [--fusion NAME] --dims N=128 [--seed S] [--compare]
//  [--inputs DIR [--expect DIR]] [--precision strict|tf32] [--cache-dir D]`:
// runs a fusion on the GPU through the JIT runtime with the same random inputs
// as --reference, or with DIR/<argument>.npy (--inputs); --compare checks every
// output and state tensor against the reference interpreter, --expect against
// DIR/<name>.npy (e.g. PyTorch's results, scripts/torch_reference.py).
#ifdef FUSEGEN_HAVE_RUNTIME
#include "Commands.h"
#include "OptionValues.h"

#include "fusegen/Interpreter.h"
#include "fusegen/Npy.h"
#include "fusegen/RandomInputs.h"
#include "fusegen/Runtime.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <utility>

namespace fusegen::cli {
namespace {

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

Tolerance tolerance_for(Precision precision) {
  return precision == Precision::TF32 ? Tolerance{1e-2, 1e-2} : Tolerance{1e-4, 1e-4};
}

std::string number(double value, const char* format = "%.3g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

void print_summary(const std::string& kind, const std::string& name, const std::vector<int64_t>& shape,
                   const std::vector<float>& data) {
  double sum = 0, abs_sum = 0;
  for (float x : data) {
    sum += x;
    abs_sum += std::fabs(x);
  }
  std::cout << kind << " " << name << ": f32" << shape_str(shape) << "  sum=" << number(sum, "%.10g")
            << "  mean_abs=" << number(data.empty() ? 0.0 : abs_sum / static_cast<double>(data.size()), "%.10g")
            << "  first:";
  for (size_t i = 0; i < data.size() && i < 8; ++i)
    std::cout << " " << number(data[i], "%.8g");
  std::cout << "\n";
}

// Prints the errors of `got` against `want`; returns whether every element
// is within atol + rtol * |want| (NaN only where the reference has NaN).
bool compare(const std::string& kind, const std::string& name, const std::vector<float>& got, const HostTensor& want,
             Tolerance tol) {
  double max_abs = 0, max_rel = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], r = want.data[i];
    bool ok = false;
    if (std::isnan(r) || std::isnan(g)) {
      ok = std::isnan(r) && std::isnan(g);
    } else if (std::isinf(r) || std::isinf(g)) {
      ok = g == r;
    } else {
      double diff = std::fabs(g - r);
      max_abs = std::max(max_abs, diff);
      if (r != 0)
        max_rel = std::max(max_rel, diff / std::fabs(r));
      ok = diff <= tol.atol + tol.rtol * std::fabs(r);
    }
    if (!ok && bad++ == 0)
      first_bad = i;
  }
  std::cout << "compare " << kind << " " << name << ": max_abs_err=" << number(max_abs)
            << " max_rel_err=" << number(max_rel) << " mismatches=" << bad << "/" << got.size()
            << " (atol=" << number(tol.atol) << ", rtol=" << number(tol.rtol) << "): " << (bad ? "FAIL" : "ok") << "\n";
  if (bad)
    std::cout << "  first mismatch at element " << first_bad << ": gpu " << number(got[first_bad], "%.9g")
              << ", reference " << number(want.data[first_bad], "%.9g") << "\n";
  return bad == 0;
}

std::vector<float> to_floats(const HostTensor& tensor) {
  std::vector<float> out(tensor.data.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(tensor.data[i]);
  return out;
}

// What the run checks against: nothing, the reference interpreter (--compare)
// or tensors read from files (--expect).
struct Check {
  bool reference = false;
  std::optional<std::map<std::string, HostTensor>> expected;
};

int run_on_device(const std::string& path, const Fusion& fusion, const Fusion& concrete,
                  std::map<std::string, HostTensor> inputs, const std::string& inputs_label, const Check& check,
                  const RuntimeOptions& options) {
  Runtime rt(0, options);
  Function function = rt.load_file(path).function(fusion.name);
  const Precision precision = options.precision.value_or(fusion.precision);
  const std::string device =
      rt.device_name() + " (sm_" + std::to_string(rt.arch()) + ", driver " + std::to_string(rt.driver_version()) + ")";
  std::cout << "fusion " << fusion.name << " on " << device << ", " << inputs_label << ", precision "
            << precision_name(precision) << "\n";

  std::vector<DeviceBuffer> memory;
  std::vector<TensorArg> arguments;
  for (ValueId id : concrete.arguments) {
    const Value& arg = concrete.value(id);
    const HostTensor& tensor = inputs.at(arg.name);
    std::vector<float> host = to_floats(tensor);
    memory.push_back(rt.allocate(host.size() * sizeof(float)));
    rt.copy_to_device(memory.back().data(), host.data(), memory.back().bytes());
    arguments.push_back({arg.name, memory.back().data(), tensor.shape});
  }
  std::vector<TensorOut> outputs;
  for (const FusionOutput& output : concrete.outputs) {
    std::vector<int64_t> shape = concrete_shape(concrete.value(output.value));
    size_t count = static_cast<size_t>(numel_of(shape));
    memory.push_back(rt.allocate(count * sizeof(float)));
    // Poisoned, so an element the kernels never write cannot pass.
    rt.fill(memory.back().data(), std::numeric_limits<float>::quiet_NaN(), count);
    outputs.push_back({output.name, memory.back().data(), shape});
  }
  function.call(arguments, outputs, nullptr);
  rt.synchronize();
  Stats stats = rt.stats();
  std::cout << "kernels: " << stats.compiles << " compiled, " << stats.disk_loads << " from the disk cache"
            << (rt.cache_dir().empty() ? " (disk cache off)" : " (" + rt.cache_dir() + ")") << "\n";

  auto download = [&](const void* data, size_t count) {
    std::vector<float> host(count);
    rt.copy_to_host(host.data(), data, count * sizeof(float));
    return host;
  };
  std::map<std::string, std::vector<float>> got_outputs, got_state;
  for (const TensorOut& out : outputs) {
    got_outputs[out.name] = download(out.data, static_cast<size_t>(numel_of(out.shape)));
    print_summary("output", out.name, out.shape, got_outputs[out.name]);
  }
  for (const TensorArg& arg : arguments)
    if (concrete.find_argument(arg.name)->kind == ValueKind::State) {
      got_state[arg.name] = download(arg.data, static_cast<size_t>(numel_of(arg.shape)));
      print_summary("state", arg.name, arg.shape, got_state[arg.name]);
    }
  bool ok = true;
  const Tolerance tol = tolerance_for(precision);
  if (check.expected) {
    for (const auto& [name, got] : got_outputs)
      ok = compare("output", name, got, check.expected->at(name), tol) && ok;
    for (const auto& [name, got] : got_state)
      ok = compare("state", name, got, check.expected->at(name), tol) && ok;
  } else if (check.reference) {
    Result<InterpreterResult> reference = interpret(fusion, inputs, reference_options("run"));
    if (!reference) {
      std::cerr << "fusegen run: error: reference interpreter: " << reference.error() << "\n";
      return kExitSpecError;
    }
    for (const auto& [name, tensor] : reference.value().outputs)
      ok = compare("output", name, got_outputs.at(name), tensor, tol) && ok;
    for (const auto& [name, tensor] : reference.value().state)
      ok = compare("state", name, got_state.at(name), tensor, tol) && ok;
  } else {
    return kExitOk;
  }
  std::cout << "result: " << (ok ? "pass" : "FAIL") << "\n";
  return ok ? kExitOk : kExitSpecError;
}

} // namespace

int device_run_command(const RunArgs& args) {
  if (args.specs.size() != 1) {
    std::cerr << "fusegen run: error: expected one spec file (usage: fusegen run SPEC --device --fusion NAME "
                 "--dims N=128 [--compare])\n";
    return kExitUsage;
  }
  Result<DimBindings> dims = parse_dims(args.dims);
  Result<std::optional<Precision>> precision = parse_precision(args.precision);
  uint64_t seed = 0;
  const std::string& seed_text = args.seed;
  auto [end, ec] = std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), seed);
  std::string usage_error;
  if (!dims)
    usage_error = dims.error();
  else if (!precision)
    usage_error = precision.error();
  else if (ec != std::errc() || end != seed_text.data() + seed_text.size())
    usage_error = "bad --seed '" + seed_text + "' (expected a non-negative integer)";
  else if (args.expect && !args.inputs)
    usage_error = "--expect needs --inputs (the expected tensors are for given inputs)";
  else if (args.expect && args.compare)
    usage_error = "use --compare or --expect, not both";
  if (!usage_error.empty()) {
    std::cerr << "fusegen run: error: " << usage_error << "\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  const std::string& path = args.specs[0];
  std::unique_ptr<LoadedSpec> spec = load_spec(path, "", exit_code);
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
  // Always specialized, as `run --reference` is: a fusion whose dims are all
  // fixed by the spec needs no --dims (specialize_for would leave it
  // symbolic, which is for generation).
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(*fusion, dims.value(), diags);
  std::cerr << diags.render(spec->sources);
  if (!concrete)
    return kExitSpecError;

  if (args.compare) {
    if (Status fits = check_interpreter_size(*concrete); !fits) {
      std::cerr << "fusegen run: error: " << fits.error() << " (--compare runs the reference interpreter)\n";
      return kExitSpecError;
    }
  }
  // Read every file before the device is touched, so that a missing or
  // mis-shaped one fails fast.
  std::map<std::string, HostTensor> inputs;
  std::string inputs_label = "seed " + std::to_string(seed);
  Check check;
  check.reference = args.compare;
  try {
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
    if (args.expect) {
      std::vector<std::pair<std::string, const Value*>> results;
      for (const FusionOutput& output : concrete->outputs)
        results.emplace_back(output.name, &concrete->value(output.value));
      for (ValueId id : concrete->arguments)
        if (concrete->value(id).kind == ValueKind::State)
          results.emplace_back(concrete->value(id).name, &concrete->value(id));
      Result<std::map<std::string, HostTensor>> loaded = load_tensors(*args.expect, results);
      if (!loaded) {
        std::cerr << "fusegen run: error: --expect: " << loaded.error() << "\n";
        return kExitUsage;
      }
      check.expected = std::move(loaded.value());
    }
  } catch (const std::bad_alloc&) {
    std::cerr << "fusegen run: error: out of host memory for the tensors of " << fusion->name << "\n";
    return kExitSpecError;
  }
  RuntimeOptions options;
  options.precision = precision.value();
  options.cache_dir = args.cache_dir;
  options.remote_cache.url = args.remote_cache;
  options.remote_cache.key_file = args.cache_key_file;
  try {
    return run_on_device(path, *fusion, *concrete, std::move(inputs), inputs_label, check, options);
  } catch (const RuntimeError& error) {
    std::cerr << "fusegen run: error: " << error.what() << "\n";
    return kExitSpecError;
  } catch (const std::bad_alloc&) {
    std::cerr << "fusegen run: error: out of host memory for the tensors of " << fusion->name << "\n";
    return kExitSpecError;
  }
}

} // namespace fusegen::cli
#endif // FUSEGEN_HAVE_RUNTIME
