#include "fusegen/Interpreter.h"

#include "fusegen/OpRegistry.h"
#include "fusegen/Specialize.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace fusegen {
namespace {

std::vector<int64_t> concrete_shape(const Shape& shape) {
  std::vector<int64_t> result;
  for (const Dim& d : shape)
    result.push_back(d.value());
  return result;
}

// Messages without a SourceManager: "line:col: message" per diagnostic.
std::string diagnostics_text(const Diagnostics& diags) {
  std::string text;
  for (const Diagnostic& diag : diags.all()) {
    if (diag.severity != Severity::Error)
      continue;
    if (!text.empty())
      text += "; ";
    if (diag.loc.valid())
      text += "line " + std::to_string(diag.loc.line) + ":" + std::to_string(diag.loc.col) + ": ";
    text += diag.message;
  }
  return text;
}

} // namespace

Status check_interpreter_size(const Fusion& concrete) {
  int64_t total = 0;
  for (const Value& value : concrete.values) {
    std::optional<int64_t> elements = shape_numel(value.type.shape);
    if (!elements || __builtin_add_overflow(total, *elements, &total) || total > kMaxInterpreterElements)
      return Error{"fusion '" + concrete.name + "' is too large for the reference interpreter (its values need " +
                   "more than 2^31 float64 elements); use smaller dims"};
  }
  return Status::success();
}

Result<InterpreterResult> interpret(const Fusion& fusion, const std::map<std::string, HostTensor>& arguments,
                                    const InterpreterOptions& options) {
  const int threads =
      options.threads > 0 ? options.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, tensor] : arguments) {
    if (static_cast<int64_t>(tensor.data.size()) != numel_of(tensor.shape))
      return Error{"tensor '" + name + "' holds " + std::to_string(tensor.data.size()) +
                   " values but its shape " + shape_str(tensor.shape) + " needs " +
                   std::to_string(numel_of(tensor.shape))};
    shapes[name] = tensor.shape;
  }
  Result<DimBindings> dims = bind_dims(fusion, shapes);
  if (!dims)
    return Error{dims.error()};
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(fusion, dims.value(), diags);
  if (!concrete)
    return Error{"fusion '" + fusion.name + "': " + diagnostics_text(diags)};
  if (Status size = check_interpreter_size(*concrete); !size)
    return Error{size.error()};

  std::vector<HostTensor> values(concrete->values.size());
  InterpreterResult result;
  for (ValueId id : concrete->arguments) {
    const Value& arg = concrete->value(id);
    values[id] = arguments.at(arg.name);
  }
  for (const Node& node : concrete->nodes) {
    if (options.on_node)
      options.on_node(static_cast<size_t>(&node - concrete->nodes.data()), concrete->nodes.size(), node);
    const OpDef* op = OpRegistry::builtin().find(node.op);
    std::vector<const HostTensor*> operands;
    std::vector<HostTensor*> mutable_operands(node.operands.size(), nullptr);
    for (ValueId id : node.operands)
      operands.push_back(id == kNoId ? nullptr : &values[id]);
    if (op->mutates) {
      for (const std::string& param : op->mutates(node.attrs)) {
        size_t slot = static_cast<size_t>(op->tensor_slot(param));
        ValueId id = node.operands[slot];
        if (id != kNoId)
          mutable_operands[slot] = &values[id];
      }
    }
    HostTensor out(concrete_shape(concrete->value(node.result).type.shape));
    ReferenceContext ctx{*op, operands, mutable_operands, node.attrs, out, threads};
    op->reference(ctx);
    values[node.result] = std::move(out);
  }
  for (const FusionOutput& output : concrete->outputs)
    result.outputs[output.name] = values[output.value];
  for (ValueId id : concrete->arguments)
    if (concrete->value(id).kind == ValueKind::State)
      result.state[concrete->value(id).name] = values[id];
  return result;
}

} // namespace fusegen
