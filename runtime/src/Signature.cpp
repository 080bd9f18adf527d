// What a Function's tensors are, and the output shapes a call will produce:
// what bindings to other languages need to check and allocate.
#include "fusegen/Runtime.h"

#include "Generate.h"
#include "RuntimeState.h"

#include "fusegen/Specialize.h"

namespace fusegen {
namespace {

std::vector<std::string> dim_texts(const Shape& shape) {
  std::vector<std::string> dims;
  for (const Dim& d : shape)
    dims.push_back(d.is_constant() ? std::to_string(d.value()) : d.name());
  return dims;
}

TensorKind tensor_kind(ValueKind kind) {
  switch (kind) {
  case ValueKind::Input:
    return TensorKind::Input;
  case ValueKind::Param:
    return TensorKind::Param;
  case ValueKind::State:
    return TensorKind::State;
  case ValueKind::Result:
    break;
  }
  return TensorKind::Output; // fusion arguments are never results
}

} // namespace

std::vector<TensorInfo> Function::tensors() const {
  const Fusion& fusion = *state_->fusion;
  std::vector<TensorInfo> infos;
  for (ValueId id : fusion.arguments) {
    const Value& value = fusion.value(id);
    infos.push_back({value.name, tensor_kind(value.kind), dim_texts(value.type.shape)});
  }
  for (const FusionOutput& output : fusion.outputs)
    infos.push_back({output.name, TensorKind::Output, dim_texts(fusion.value(output.value).type.shape)});
  return infos;
}

std::vector<std::vector<int64_t>> Function::output_shapes(const std::vector<TensorArg>& arguments) const {
  const Fusion& fusion = *state_->fusion;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const TensorArg& arg : arguments)
    if (!shapes.emplace(arg.name, arg.shape).second)
      throw RuntimeError(ErrorKind::Argument, "fusion '" + fusion.name + "': tensor '" + arg.name + "' is given twice");
  Result<DimBindings> dims = bind_dims(fusion, shapes);
  if (!dims)
    throw RuntimeError(ErrorKind::Argument, "fusion '" + fusion.name + "': " + dims.error());
  const Fusion concrete = runtime::specialize_or_throw(fusion, dims.value(), &state_->program->sources);
  std::vector<std::vector<int64_t>> result;
  for (const FusionOutput& output : concrete.outputs) {
    std::vector<int64_t> shape;
    for (const Dim& d : concrete.value(output.value).type.shape)
      shape.push_back(d.value());
    result.push_back(std::move(shape));
  }
  return result;
}

} // namespace fusegen
