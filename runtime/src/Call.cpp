// Function::call, Function::prepare and bound calls: check, find or build
// the kernels, launch.
//
// A call in the common form takes the quick path (CallLayout.h): checked
// against the function's precomputed layout without building strings or
// maps, and served from the function's last loaded fusion when the dims and
// context repeat. Everything else (errors, zero-size calls) takes the
// checked path, which words every error. A BoundCall did the quick path's
// name and shape half once, at bind; its launches check the data pointers
// and launch, and hand anything else to call().
#include "fusegen/Runtime.h"

#include "CallCheck.h"
#include "CallLayout.h"
#include "RuntimeState.h"

#include <algorithm>
#include <array>
#include <span>

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

// Whether the outputs of a call that matched (`quick` maps them) have the
// loaded fusion's shapes, which the quick path compares after loading.
bool outputs_fit(const TensorRef* outputs, const runtime::CallLayout::Quick& quick,
                 const std::vector<std::vector<int64_t>>& expected) {
  if (expected.size() != quick.output_given.size())
    return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    const TensorRef& given = outputs[quick.output_given[i]];
    if (given.rank != expected[i].size() || !std::equal(expected[i].begin(), expected[i].end(), given.shape))
      return false;
  }
  return true;
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
  if (!outputs_fit(outputs, quick, loaded->output_shapes())) {
    // Worded by the checked path's own comparison.
    runtime::CheckedCall call =
        runtime::check_call(fusion, tensors_of<TensorArg>(fusion, arguments, argument_count, "arguments"),
                            tensors_of<TensorOut>(fusion, outputs, output_count, "outputs"));
    runtime::check_output_shapes(fusion, call, loaded->output_shapes());
    throw RuntimeError(ErrorKind::Argument, "fusion '" + fusion.name + "': output shapes do not fit");
  }
  loaded->launch(quick.arguments, quick.outputs, static_cast<CUstream>(stream));
  ++rt.calls;
}

struct BoundCall::State {
  Function function;
  // The bind's tensors, for call()'s path: names and shapes in bind order.
  std::vector<TensorArg> arguments;
  std::vector<TensorOut> outputs;
  // Set where the tensors fit the quick path (else every launch takes call()'s).
  std::shared_ptr<runtime::LoadedFusion> loaded;
  CUcontext context = nullptr; // the context `loaded` is in
  std::vector<size_t> argument_given, output_given;
  std::vector<int64_t> argument_bytes, output_bytes; // fusion order
};

BoundCall Function::bind(const TensorRef* arguments, size_t argument_count, const TensorRef* outputs,
                         size_t output_count) const {
  const FunctionState& state = *state_;
  const Fusion& fusion = *state.fusion;
  auto bound = std::make_shared<BoundCall::State>();
  bound->function = *this;
  bound->arguments = tensors_of<TensorArg>(fusion, arguments, argument_count, "arguments");
  bound->outputs = tensors_of<TensorOut>(fusion, outputs, output_count, "outputs");
  runtime::CallLayout::Quick quick;
  if (state.layout.match_shapes(arguments, argument_count, outputs, output_count, quick)) {
    RuntimeState& rt = *runtime_;
    CUcontext current = nullptr;
    CUcontext context = rt.call_context(current);
    runtime::ContextScope scope(driver(), context, current);
    std::shared_ptr<runtime::LoadedFusion> loaded = rt.loaded(state, state.layout.bindings(quick.dims), context);
    if (outputs_fit(outputs, quick, loaded->output_shapes())) { // else call() words the mismatch at each launch
      bound->loaded = std::move(loaded);
      bound->context = context;
      bound->argument_given = std::move(quick.argument_given);
      bound->output_given = std::move(quick.output_given);
      bound->argument_bytes = std::move(quick.argument_bytes);
      bound->output_bytes = std::move(quick.output_bytes);
    }
  }
  BoundCall call;
  call.state_ = std::move(bound);
  return call;
}

size_t BoundCall::argument_count() const { return state_ ? state_->arguments.size() : 0; }
size_t BoundCall::output_count() const { return state_ ? state_->outputs.size() : 0; }

void BoundCall::launch(const void* const* arguments, const void* const* outputs, void* stream) const {
  if (!state_)
    throw RuntimeError(ErrorKind::Argument, "launch of a BoundCall that no Function::bind made");
  const State& bound = *state_;
  const size_t n_args = bound.arguments.size(), n_outs = bound.outputs.size();
  if ((n_args > 0 && !arguments) || (n_outs > 0 && !outputs))
    throw RuntimeError(ErrorKind::Argument, "fusion '" + bound.function.name() + "': a bound call's " +
                                                (n_args > 0 && !arguments ? "arguments" : "outputs") +
                                                " array is null");
  if (bound.loaded) {
    auto address = [](const void* data) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(data)); };
    std::array<CUdeviceptr, 64> args, outs; // match_shapes takes at most 64 tensors
    for (size_t i = 0; i < n_args; ++i)
      args[i] = address(arguments[bound.argument_given[i]]);
    for (size_t i = 0; i < n_outs; ++i)
      outs[i] = address(outputs[bound.output_given[i]]);
    const FunctionState& state = *bound.function.state_;
    RuntimeState& rt = *bound.function.runtime_;
    if (state.layout.pointers_usable(args.data(), bound.argument_bytes.data(), outs.data(),
                                     bound.output_bytes.data())) {
      const runtime::DriverApi& api = driver();
      // The bind's context is on this device: finding it current needs no
      // more questions (call_context would ask for its device).
      CUcontext current = nullptr;
      const bool bound_current = api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == bound.context;
      CUcontext context = bound_current ? current : rt.call_context(current);
      if (context == bound.context) {
        runtime::ContextScope scope(api, context, current);
        std::span<const CUdeviceptr> arg_span(args.data(), n_args), out_span(outs.data(), n_outs);
        if (rt.options.check_pointers)
          runtime::check_device_pointers(api, rt.ordinal, *state.fusion, arg_span, bound.argument_bytes, out_span,
                                         bound.output_bytes);
        bound.loaded->launch(arg_span, out_span, static_cast<CUstream>(stream));
        ++rt.memory_hits;
        ++rt.calls;
        return;
      }
    }
  }
  // call()'s own path, which words whatever is wrong.
  std::vector<TensorRef> args(n_args), outs(n_outs);
  for (size_t i = 0; i < n_args; ++i)
    args[i] = {bound.arguments[i].name, arguments[i], bound.arguments[i].shape.data(), bound.arguments[i].shape.size()};
  for (size_t i = 0; i < n_outs; ++i)
    outs[i] = {bound.outputs[i].name, outputs[i], bound.outputs[i].shape.data(), bound.outputs[i].shape.size()};
  bound.function.call(args.data(), n_args, outs.data(), n_outs, stream);
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
