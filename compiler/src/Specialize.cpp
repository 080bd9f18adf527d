#include "fusegen/Specialize.h"

#include "fusegen/OpRegistry.h"

#include <set>

namespace fusegen {
namespace {

Shape substitute(const Shape& shape, const DimBindings& dims) {
  Shape result;
  for (const Dim& d : shape) {
    auto it = d.is_symbol() ? dims.find(d.name()) : dims.end();
    result.push_back(it != dims.end() ? Dim::constant(it->second) : d);
  }
  return result;
}

std::string fixed_dim_problem(const Fusion& fusion, const std::string& symbol, int64_t value) {
  auto it = fusion.fixed_dims.find(symbol);
  if (it == fusion.fixed_dims.end() || it->second.first == value)
    return {};
  return "dim " + symbol + " must be " + std::to_string(it->second.first) + " (fixed by the spec at line " +
         std::to_string(it->second.second.line) + ":" + std::to_string(it->second.second.col) +
         "), got " + std::to_string(value);
}

} // namespace

Result<DimBindings> bind_dims(const Fusion& fusion,
                              const std::map<std::string, std::vector<int64_t>>& shapes) {
  DimBindings dims;
  std::map<std::string, std::string> bound_by; // symbol -> tensor that bound it
  for (const auto& [name, shape] : shapes)
    if (!fusion.find_argument(name))
      return Error{"unknown tensor '" + name + "' for fusion '" + fusion.name + "'"};
  for (ValueId id : fusion.arguments) {
    const Value& arg = fusion.value(id);
    auto it = shapes.find(arg.name);
    if (it == shapes.end())
      return Error{"missing tensor '" + arg.name + "' (" + value_kind_name(arg.kind) + " " +
                   shape_str(arg.type.shape) + ")"};
    const std::vector<int64_t>& shape = it->second;
    if (shape.size() != arg.type.rank())
      return Error{"tensor '" + arg.name + "' has rank " + std::to_string(shape.size()) + " " +
                   shape_str(shape) + " but the spec declares " + shape_str(arg.type.shape)};
    for (size_t i = 0; i < shape.size(); ++i) {
      const Dim& declared = arg.type.shape[i];
      if (shape[i] < 0)
        return Error{"tensor '" + arg.name + "' has a negative dim"};
      if (declared.is_constant()) {
        if (declared.value() != shape[i])
          return Error{"tensor '" + arg.name + "' has shape " + shape_str(shape) +
                       " but the spec declares " + shape_str(arg.type.shape)};
        continue;
      }
      auto [bound, inserted] = dims.emplace(declared.name(), shape[i]);
      if (!inserted && bound->second != shape[i])
        return Error{"dim " + declared.name() + " is bound two ways: " + bound_by[declared.name()] +
                     " gives " + std::to_string(bound->second) + " but '" + arg.name + "' gives " +
                     std::to_string(shape[i])};
      bound_by.emplace(declared.name(), "'" + arg.name + "'");
      if (std::string problem = fixed_dim_problem(fusion, declared.name(), shape[i]); !problem.empty())
        return Error{"tensor '" + arg.name + "': " + problem};
    }
  }
  return dims;
}

Status check_bindings(const Fusion& fusion, const DimBindings& dims) {
  std::vector<std::string> symbols = fusion.symbols();
  std::set<std::string> known(symbols.begin(), symbols.end());
  for (const auto& [symbol, value] : dims) {
    if (!known.count(symbol))
      return Error{"fusion '" + fusion.name + "' has no dim named " + symbol};
    if (value < 0)
      return Error{"dim " + symbol + " must not be negative"};
    if (std::string problem = fixed_dim_problem(fusion, symbol, value); !problem.empty())
      return Error{problem};
  }
  for (const std::string& symbol : symbols)
    if (!dims.count(symbol) && !fusion.fixed_dims.count(symbol))
      return Error{"fusion '" + fusion.name + "' needs a value for dim " + symbol +
                   " (e.g. --dims " + symbol + "=128)"};
  return Status::success();
}

std::optional<Fusion> specialize(const Fusion& fusion, const DimBindings& dims, Diagnostics& diags) {
  Fusion result = fusion;
  DimBindings all = dims;
  for (const auto& [symbol, fixed] : fusion.fixed_dims)
    all.emplace(symbol, fixed.first);
  for (ValueId id : result.arguments)
    result.value(id).type.shape = substitute(result.value(id).type.shape, all);
  DimUnifier unifier;
  bool ok = true;
  for (Node& node : result.nodes) {
    const OpDef* op = OpRegistry::builtin().find(node.op);
    if (!op) {
      diags.error(node.loc, "internal error: unknown op '" + node.op + "'");
      return std::nullopt;
    }
    std::vector<const TensorType*> types;
    for (ValueId id : node.operands)
      types.push_back(id == kNoId ? nullptr : &result.value(id).type);
    size_t errors_before = diags.error_count();
    ShapeContext ctx(*op, types, node.attrs, std::vector<SourceLoc>(op->params.size()), node.loc,
                     unifier, diags);
    std::optional<TensorType> type = op->infer(ctx);
    if (!type) {
      if (diags.error_count() == errors_before)
        diags.error(node.loc, op->name + ": invalid arguments for the given dims");
      ok = false;
      break; // later nodes depend on this one
    }
    result.value(node.result).type = std::move(*type);
  }
  if (!ok)
    return std::nullopt;
  result.fixed_dims.clear();
  for (const Value& value : result.values) {
    if (!shape_is_constant(value.type.shape)) {
      diags.error(value.loc, "internal error: dim left symbolic after specialization");
      return std::nullopt;
    }
    std::optional<int64_t> elements = shape_numel(value.type.shape);
    if (!elements || *elements > kMaxTensorElements) {
      diags.error(value.loc, "'" + value.name + "' would have shape " + shape_str(value.type.shape) +
                                 ": too many elements (limit 2^48)");
      return std::nullopt;
    }
  }
  return result;
}

} // namespace fusegen
