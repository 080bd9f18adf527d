#include "Commands.h"

#include "fusegen/Frontend.h"
#include "fusegen/Npy.h"
#include "fusegen/Passes.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

namespace fusegen::cli {

namespace {
constexpr uintmax_t kMaxSpecBytes = uintmax_t{256} << 20;

Result<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Error{path + ": " + (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file")};
  if (std::filesystem::file_size(path, ec) > kMaxSpecBytes)
    return Error{path + ": file is larger than 256 MiB"};
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error{path + ": cannot open file"};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
} // namespace

std::unique_ptr<LoadedSpec> load_spec(const std::string& path, const std::string& dump_after,
                                      int& exit_code) {
  if (!dump_after.empty()) {
    std::vector<std::string> points = dump_points();
    if (std::find(points.begin(), points.end(), dump_after) == points.end()) {
      std::string known;
      for (const std::string& p : points)
        known += (known.empty() ? "" : ", ") + p;
      std::cerr << "fusegen: error: unknown pass '" << dump_after << "' for --dump-after (known: " << known
                << ")\n";
      exit_code = kExitUsage;
      return nullptr;
    }
  }
  Result<std::string> text = read_file(path);
  if (!text) {
    std::cerr << "fusegen: error: " << text.error() << "\n";
    exit_code = kExitUsage;
    return nullptr;
  }
  auto loaded = std::make_unique<LoadedSpec>();
  uint32_t file = loaded->sources.add_buffer(path, std::move(text.value()));
  Diagnostics diags;
  FrontendOptions options;
  options.dump_after = dump_after;
  std::optional<Module> module = compile_spec(loaded->sources, file, diags, options);
  std::cerr << diags.render(loaded->sources);
  if (!module) {
    std::cerr << diags.error_count() << (diags.error_count() == 1 ? " error" : " errors") << " generated.\n";
    exit_code = kExitSpecError;
    return nullptr;
  }
  loaded->module = std::move(*module);
  exit_code = kExitOk;
  return loaded;
}

Result<std::vector<const Fusion*>> select_fusions(const Module& module, const std::string& name) {
  std::vector<const Fusion*> result;
  for (const Fusion& fusion : module.fusions)
    if (name.empty() || fusion.name == name)
      result.push_back(&fusion);
  if (result.empty())
    return Error{"no fusion named '" + name + "'"};
  return result;
}

std::optional<Fusion> specialize_for(const LoadedSpec& spec, const Fusion& fusion, const DimBindings& dims,
                                     int& exit_code) {
  if (dims.empty())
    return fusion;
  DimBindings own;
  for (const std::string& symbol : fusion.symbols())
    if (dims.count(symbol))
      own[symbol] = dims.at(symbol);
  if (Status bound = check_bindings(fusion, own); !bound) {
    std::cerr << "fusegen: error: " << bound.error() << "\n";
    exit_code = kExitUsage;
    return std::nullopt;
  }
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(fusion, own, diags);
  std::cerr << diags.render(spec.sources);
  if (!concrete)
    exit_code = kExitSpecError;
  return concrete;
}

std::vector<int64_t> concrete_shape(const Value& value) {
  std::vector<int64_t> shape;
  for (const Dim& d : value.type.shape)
    shape.push_back(d.value());
  return shape;
}

// Reads DIR/<name>.npy for each of `values` (name and concrete shape); the
// error names the file, or the expected and actual shapes.
Result<std::map<std::string, HostTensor>>
load_tensors(const std::string& dir, const std::vector<std::pair<std::string, const Value*>>& values) {
  std::map<std::string, HostTensor> tensors;
  for (const auto& [name, value] : values) {
    const std::string file = dir + "/" + name + ".npy";
    const std::vector<int64_t> shape = concrete_shape(*value);
    Result<HostTensor> tensor = read_npy(file, npy_max_bytes(shape));
    if (!tensor)
      return Error{tensor.error()};
    if (tensor.value().shape != shape)
      return Error{file + ": shape " + shape_str(tensor.value().shape) + ", but " + name + " is f32" +
                   shape_str(shape)};
    tensors[name] = std::move(tensor.value());
  }
  return tensors;
}

Result<std::map<std::string, HostTensor>> load_arguments(const std::string& dir, const Fusion& concrete) {
  std::vector<std::pair<std::string, const Value*>> arguments;
  for (ValueId id : concrete.arguments)
    arguments.emplace_back(concrete.value(id).name, &concrete.value(id));
  return load_tensors(dir, arguments);
}

bool dims_are_known(const LoadedSpec& spec, const std::vector<std::string>& names, const std::string& command) {
  std::set<std::string> known;
  for (const Fusion& fusion : spec.module.fusions)
    for (const std::string& symbol : fusion.symbols())
      known.insert(symbol);
  for (const std::string& name : names) {
    if (known.count(name))
      continue;
    std::string dims;
    for (const std::string& symbol : known)
      dims += (dims.empty() ? "" : ", ") + symbol;
    std::cerr << "fusegen" << (command.empty() ? "" : " " + command) << ": error: --dims " << name
              << ": the spec has no dim named " << name
              << (dims.empty() ? " (it has no symbolic dims)" : " (its dims: " + dims + ")") << "\n";
    return false;
  }
  return true;
}

bool dims_are_known(const LoadedSpec& spec, const DimBindings& dims, const std::string& command) {
  std::vector<std::string> names;
  for (const auto& [name, value] : dims)
    names.push_back(name);
  return dims_are_known(spec, names, command);
}

Result<DimBindings> parse_dims(const std::vector<std::string>& specs) {
  DimBindings dims;
  for (const std::string& spec : specs) {
    std::stringstream items(spec);
    std::string item;
    while (std::getline(items, item, ',')) {
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        return Error{"bad --dims entry '" + item + "' (expected NAME=VALUE, e.g. N=128)"};
      std::string name = item.substr(0, eq), number = item.substr(eq + 1);
      int64_t value = 0;
      auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
      if (ec != std::errc() || end != number.data() + number.size() || value < 0)
        return Error{"bad value '" + number + "' for dim " + name + " (expected a non-negative integer)"};
      if (!dims.emplace(name, value).second)
        return Error{"dim " + name + " given twice in --dims"};
    }
  }
  return dims;
}

} // namespace fusegen::cli
