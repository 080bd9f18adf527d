// Function::call and Function::prepare: check, find or build the kernels,
// launch.
#include "fusegen/Runtime.h"

#include "CallCheck.h"
#include "RuntimeState.h"

namespace fusegen {

using runtime::driver;

void Function::call(const std::vector<TensorArg>& arguments, const std::vector<TensorOut>& outputs,
                    void* stream) const {
  const Fusion& fusion = *state_->fusion;
  // Everything that needs no driver first, so bad calls fail the same way
  // with or without a GPU.
  runtime::CheckedCall call = runtime::check_call(fusion, arguments, outputs);
  if (call.empty)
    return;
  RuntimeState& rt = *runtime_;
  const runtime::DriverApi& api = driver();
  CUcontext context = rt.call_context();
  runtime::ContextScope scope(api, context);
  if (rt.options.check_pointers)
    runtime::check_device_pointers(api, rt.ordinal, fusion, call);
  std::shared_ptr<runtime::LoadedFusion> loaded = rt.loaded(*state_, call.dims, context);
  runtime::check_output_shapes(fusion, call, loaded->output_shapes());
  loaded->launch(call.arguments, call.outputs, static_cast<CUstream>(stream));
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
