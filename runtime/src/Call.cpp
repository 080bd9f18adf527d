// Function::call and Function::prepare: check, find or build the kernels,
// launch.
//
// A call in the common form takes the quick path (CallLayout.h): checked
// against the function's precomputed layout without building strings or
// maps, and served from the function's last loaded fusion when the dims and
// context repeat. Everything else (errors, zero-size calls) takes the
// checked path, which words every error.
#include "fusegen/Runtime.h"

#include "CallCheck.h"
#include "CallLayout.h"
#include "RuntimeState.h"

#include <algorithm>
#include <array>

namespace fusegen {

using runtime::driver;

namespace {

// The references as the checked path's vectors; throws for arrays or shapes
// that are missing.
template <class Tensor>
std::vector<Tensor> tensors_of(const Fusion& fusion, const TensorRef* refs, size_t count, const char* list) {
  if (count > 0 && !refs)
    throw RuntimeError(ErrorKind::Argument, "fusion '" + fusion.name + "': " + std::to_string(count) + " " + list +
                                                " given, but their array is null");
  std::vector<Tensor> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const TensorRef& ref = refs[i];
    if (ref.rank > 0 && !ref.shape)
      throw RuntimeError(ErrorKind::Argument, "fusion '" + fusion.name + "': tensor '" + std::string(ref.name) +
                                                  "' has rank " + std::to_string(ref.rank) + " but no shape");
    using Data = decltype(Tensor::data);
    out.push_back(
        {std::string(ref.name), const_cast<Data>(ref.data), std::vector<int64_t>(ref.shape, ref.shape + ref.rank)});
  }
  return out;
}

// The checked path: every check with its message, zero-size calls.
void checked_call(const std::shared_ptr<RuntimeState>& runtime, const FunctionState& state,
                  const std::vector<TensorArg>& arguments, const std::vector<TensorOut>& outputs, void* stream) {
  const Fusion& fusion = *state.fusion;
  // Everything that needs no driver first, so bad calls fail the same way
  // with or without a GPU.
  runtime::CheckedCall call = runtime::check_call(fusion, arguments, outputs);
  if (call.empty)
    return;
  RuntimeState& rt = *runtime;
  const runtime::DriverApi& api = driver();
  CUcontext current = nullptr;
  CUcontext context = rt.call_context(current);
  runtime::ContextScope scope(api, context, current);
  if (rt.options.check_pointers)
    runtime::check_device_pointers(api, rt.ordinal, fusion, call);
  std::shared_ptr<runtime::LoadedFusion> loaded = rt.loaded(state, call.dims, context);
  runtime::check_output_shapes(fusion, call, loaded->output_shapes());
  loaded->launch(call.arguments, call.outputs, static_cast<CUstream>(stream));
  ++rt.calls;
}

bool same_shape(const TensorRef& given, const std::vector<int64_t>& expected) {
  return given.rank == expected.size() && std::equal(expected.begin(), expected.end(), given.shape);
}

// A thread's scratch space for the quick path, reused by its calls so that
// a repeated call allocates nothing.
runtime::CallLayout::Quick& quick_scratch() {
  thread_local runtime::CallLayout::Quick quick;
  return quick;
}

} // namespace

void Function::call(const std::vector<TensorArg>& arguments, const std::vector<TensorOut>& outputs,
                    void* stream) const {
  constexpr size_t kOnStack = 16;
  if (arguments.size() > kOnStack || outputs.size() > kOnStack) {
    checked_call(runtime_, *state_, arguments, outputs, stream);
    return;
  }
  std::array<TensorRef, kOnStack> args, outs;
  for (size_t i = 0; i < arguments.size(); ++i)
    args[i] = {arguments[i].name, arguments[i].data, arguments[i].shape.data(), arguments[i].shape.size()};
  for (size_t i = 0; i < outputs.size(); ++i)
    outs[i] = {outputs[i].name, outputs[i].data, outputs[i].shape.data(), outputs[i].shape.size()};
  call(args.data(), arguments.size(), outs.data(), outputs.size(), stream);
}

void Function::call(const TensorRef* arguments, size_t argument_count, const TensorRef* outputs, size_t output_count,
                    void* stream) const {
  const FunctionState& state = *state_;
  runtime::CallLayout::Quick& quick = quick_scratch();
  const Fusion& fusion = *state.fusion;
  if ((argument_count > 0 && !arguments) || (output_count > 0 && !outputs) ||
      !state.layout.quick_check(arguments, argument_count, outputs, output_count, quick)) {
    checked_call(runtime_, state, tensors_of<TensorArg>(fusion, arguments, argument_count, "arguments"),
                 tensors_of<TensorOut>(fusion, outputs, output_count, "outputs"), stream);
    return;
  }
  RuntimeState& rt = *runtime_;
  const runtime::DriverApi& api = driver();
  CUcontext current = nullptr;
  CUcontext context = rt.call_context(current);
  runtime::ContextScope scope(api, context, current);
  if (rt.options.check_pointers)
    runtime::check_device_pointers(api, rt.ordinal, fusion, quick.arguments, quick.argument_bytes, quick.outputs,
                                   quick.output_bytes);
  std::shared_ptr<runtime::LoadedFusion> loaded = state.last_loaded(context, quick.dims);
  if (loaded) {
    ++rt.memory_hits;
  } else {
    loaded = rt.loaded(state, state.layout.bindings(quick.dims), context);
    state.remember(context, quick.dims, loaded);
  }
  const std::vector<std::vector<int64_t>>& expected = loaded->output_shapes();
  for (size_t i = 0; i < output_count; ++i)
    if (i >= expected.size() || !same_shape(outputs[quick.output_given[i]], expected[i])) {
      // Worded by the checked path's own comparison.
      runtime::CheckedCall call =
          runtime::check_call(fusion, tensors_of<TensorArg>(fusion, arguments, argument_count, "arguments"),
                              tensors_of<TensorOut>(fusion, outputs, output_count, "outputs"));
      runtime::check_output_shapes(fusion, call, expected);
      throw RuntimeError(ErrorKind::Argument, "fusion '" + fusion.name + "': output shapes do not fit");
    }
  loaded->launch(quick.arguments, quick.outputs, static_cast<CUstream>(stream));
  ++rt.calls;
}

void Function::prepare(const std::map<std::string, int64_t>& dims) const {
  const Fusion& fusion = *state_->fusion;
  if (Status bound = check_bindings(fusion, dims); !bound)
    throw RuntimeError(ErrorKind::Argument, "fusion '" + fusion.name + "': " + bound.error());
  for (const auto& [symbol, value] : dims)
    if (value == 0)
      return; // zero-size calls launch nothing
  RuntimeState& rt = *runtime_;
  CUcontext context = rt.call_context();
  runtime::ContextScope scope(driver(), context);
  rt.loaded(*state_, dims, context);
}

} // namespace fusegen
