// The C API (fusegen.h) over the C++ runtime. Every entry point catches
// everything: a C caller gets a status and fusegen_last_error(), never an
// exception or an abort.
#include "fusegen.h"

#include "DriverApi.h" // stream ordering for fusegen_runtime_stream_wait

#include "fusegen/Runtime.h"

#include <array>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <vector>

struct fusegen_runtime {
  std::unique_ptr<fusegen::Runtime> runtime;
  std::string cache_dir;
  std::mutex device_mutex;  // guards device_name
  std::string device_name; // filled by fusegen_runtime_device
  fusegen::runtime::StreamWaits* stream_waits = nullptr; // owned; its event for fusegen_runtime_stream_wait
  mutable std::mutex tunings_mutex;                      // guards tunings
  // Runtime::tunings() as far as read: a deque, so the strings handed out stay where they are.
  mutable std::deque<fusegen::Tuning> tunings;

  fusegen_runtime() = default;
  fusegen_runtime(const fusegen_runtime&) = delete;
  fusegen_runtime& operator=(const fusegen_runtime&) = delete;
  ~fusegen_runtime() { fusegen::runtime::stream_waits_destroy(stream_waits); }
};

struct fusegen_program {
  fusegen::Program program;
  std::vector<std::string> function_names;
};

struct fusegen_bound_call {
  fusegen::BoundCall call;
};

struct fusegen_function {
  fusegen::Function function;
  std::string signature;
  std::vector<fusegen::TensorInfo> tensors;
  std::vector<std::vector<const char*>> dim_pointers; // into tensors[i].dims
  size_t argument_count = 0;
};

namespace {

using fusegen::ErrorKind;

// What the caller reads after a failure. Per thread, so concurrent callers
// each see their own.
std::string& last_error() {
  thread_local std::string message;
  return message;
}

fusegen_status status_of(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Spec:
    return FUSEGEN_ERROR_SPEC;
  case ErrorKind::Argument:
    return FUSEGEN_ERROR_ARGUMENT;
  case ErrorKind::Compile:
    return FUSEGEN_ERROR_COMPILE;
  case ErrorKind::NoDriver:
    return FUSEGEN_ERROR_NO_DRIVER;
  case ErrorKind::Driver:
    return FUSEGEN_ERROR_DRIVER;
  case ErrorKind::Io:
    return FUSEGEN_ERROR_IO;
  }
  return FUSEGEN_ERROR_INTERNAL;
}

fusegen_status fail(fusegen_status status, const std::string& message) {
  try {
    last_error() = message;
  } catch (...) {
    // Out of memory for the message itself: the status still says what happened.
  }
  return status;
}

// Misuse of the API (null handles, bad counts), reported like any error.
struct Invalid {
  std::string message;
};

template <class Body> fusegen_status guarded(Body&& body) {
  try {
    body();
    last_error().clear();
    return FUSEGEN_OK;
  } catch (const Invalid& e) {
    return fail(FUSEGEN_ERROR_INVALID, e.message);
  } catch (const fusegen::RuntimeError& e) {
    return fail(status_of(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(FUSEGEN_ERROR_INTERNAL, "out of host memory");
  } catch (const std::exception& e) {
    return fail(FUSEGEN_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(FUSEGEN_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

template <class T> void require(const T* pointer, const char* what) {
  if (!pointer)
    throw Invalid{std::string(what) + " is NULL"};
}

std::vector<int64_t> shape_of(const fusegen_tensor& tensor, const char* list, int32_t index) {
  const std::string where = std::string(list) + "[" + std::to_string(index) + "]";
  if (!tensor.name)
    throw Invalid{where + ".name is NULL"};
  if (tensor.rank < 0 || tensor.rank > 64)
    throw Invalid{where + " ('" + tensor.name + "') has rank " + std::to_string(tensor.rank)};
  if (tensor.rank > 0 && !tensor.shape)
    throw Invalid{where + " ('" + tensor.name + "') has rank " + std::to_string(tensor.rank) + " but no shape"};
  if (tensor.dtype != FUSEGEN_FLOAT32)
    throw fusegen::RuntimeError(ErrorKind::Argument, "tensor '" + std::string(tensor.name) + "' has dtype " +
                                                         std::to_string(tensor.dtype) +
                                                         "; fusegen takes float32 (FUSEGEN_FLOAT32) tensors only");
  return std::vector<int64_t>(tensor.shape, tensor.shape + tensor.rank);
}

// The C tensors of a call as the C++ API's TensorArg or TensorOut (`list`
// names the array in messages: "arguments" or "outputs").
template <class Tensor>
std::vector<Tensor> tensors_of(const fusegen_tensor* tensors, int32_t count, const char* list) {
  if (count < 0 || (count > 0 && !tensors))
    throw Invalid{std::string(list) + ": " + std::to_string(count) + " tensors at " + (tensors ? "an array" : "NULL")};
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i)
    out.push_back({tensors[i].name ? tensors[i].name : "", tensors[i].data, shape_of(tensors[i], list, i)});
  return out;
}

// The C tensors of a call as references (nothing copied), checked as
// tensors_of checks them; `refs` has room for `count`.
void refs_of(const fusegen_tensor* tensors, int32_t count, const char* list, fusegen::TensorRef* refs) {
  if (count < 0 || (count > 0 && !tensors))
    throw Invalid{std::string(list) + ": " + std::to_string(count) + " tensors at " + (tensors ? "an array" : "NULL")};
  for (int32_t i = 0; i < count; ++i) {
    const fusegen_tensor& tensor = tensors[i];
    if (!tensor.name || tensor.rank < 0 || tensor.rank > 64 || (tensor.rank > 0 && !tensor.shape) ||
        tensor.dtype != FUSEGEN_FLOAT32)
      shape_of(tensor, list, i); // throws the error
    refs[i] = {tensor.name, tensor.data, tensor.shape, static_cast<size_t>(tensor.rank)};
  }
}

std::vector<fusegen::TensorArg> arguments_of(const fusegen_tensor* tensors, int32_t count) {
  return tensors_of<fusegen::TensorArg>(tensors, count, "arguments");
}

fusegen_tensor_kind kind_code(fusegen::TensorKind kind) {
  switch (kind) {
  case fusegen::TensorKind::Input:
    return FUSEGEN_TENSOR_INPUT;
  case fusegen::TensorKind::Param:
    return FUSEGEN_TENSOR_PARAM;
  case fusegen::TensorKind::State:
    return FUSEGEN_TENSOR_STATE;
  case fusegen::TensorKind::Output:
    break;
  }
  return FUSEGEN_TENSOR_OUTPUT;
}

} // namespace

extern "C" {

const char* fusegen_version(void) { return FUSEGEN_VERSION; }

int32_t fusegen_c_api_version(void) { return FUSEGEN_C_API_VERSION; }

const char* fusegen_status_name(int32_t status) {
  switch (status) {
  case FUSEGEN_OK:
    return "ok";
  case FUSEGEN_ERROR_SPEC:
    return "spec";
  case FUSEGEN_ERROR_ARGUMENT:
    return "argument";
  case FUSEGEN_ERROR_COMPILE:
    return "compile";
  case FUSEGEN_ERROR_NO_DRIVER:
    return "no-driver";
  case FUSEGEN_ERROR_DRIVER:
    return "driver";
  case FUSEGEN_ERROR_IO:
    return "io";
  case FUSEGEN_ERROR_INVALID:
    return "invalid";
  case FUSEGEN_ERROR_INTERNAL:
    return "internal";
  default:
    return "unknown";
  }
}

const char* fusegen_last_error(void) { return last_error().c_str(); }

void fusegen_runtime_options_init(fusegen_runtime_options* options) {
  if (!options)
    return;
  options->precision = FUSEGEN_PRECISION_DEFAULT;
  options->disk_cache = 1;
  options->cache_dir = nullptr;
  options->check_pointers = 1;
  options->autotune = -1;
  options->remote_cache = nullptr;
  options->cache_key_file = nullptr;
}

fusegen_status fusegen_runtime_create(int32_t device, const fusegen_runtime_options* options, fusegen_runtime** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    if (device < 0)
      throw Invalid{"device ordinal " + std::to_string(device) + " is negative"};
    fusegen_runtime_options given;
    fusegen_runtime_options_init(&given);
    if (options)
      given = *options;
    fusegen::RuntimeOptions cpp;
    switch (given.precision) {
    case FUSEGEN_PRECISION_DEFAULT:
      break;
    case FUSEGEN_PRECISION_STRICT:
      cpp.precision = fusegen::Precision::Strict;
      break;
    case FUSEGEN_PRECISION_TF32:
      cpp.precision = fusegen::Precision::TF32;
      break;
    default:
      throw Invalid{"precision " + std::to_string(given.precision) + " is not a fusegen_precision"};
    }
    cpp.disk_cache = given.disk_cache != 0;
    cpp.cache_dir = given.cache_dir ? given.cache_dir : "";
    cpp.check_pointers = given.check_pointers != 0;
    cpp.remote_cache.url = given.remote_cache ? given.remote_cache : "";
    cpp.remote_cache.key_file = given.cache_key_file ? given.cache_key_file : "";
    if (given.autotune != -1 && given.autotune != 0 && given.autotune != 1)
      throw Invalid{"autotune " + std::to_string(given.autotune) + " is not -1, 0 or 1"};
    if (given.autotune != -1)
      cpp.autotune = given.autotune == 1;
    auto handle = std::make_unique<fusegen_runtime>();
    handle->runtime = std::make_unique<fusegen::Runtime>(device, std::move(cpp));
    handle->cache_dir = handle->runtime->cache_dir();
    handle->stream_waits = fusegen::runtime::stream_waits_create(device);
    *out = handle.release();
  });
}

void fusegen_runtime_destroy(fusegen_runtime* runtime) { delete runtime; }

fusegen_status fusegen_runtime_stats(const fusegen_runtime* runtime, fusegen_stats* out) {
  return guarded([&] {
    require(runtime, "runtime");
    require(out, "out");
    fusegen::Stats s = runtime->runtime->stats();
    *out = {s.calls,        s.memory_hits, s.generations,  s.compiles,      s.disk_loads,     s.disk_writes,
            s.disk_rejects, s.tunings,     s.remote_loads, s.remote_writes, s.remote_rejects, s.remote_waits};
  });
}

int32_t fusegen_runtime_tuning_count(const fusegen_runtime* runtime) {
  return runtime ? static_cast<int32_t>(runtime->runtime->tunings().size()) : -1;
}

fusegen_status fusegen_runtime_tuning(const fusegen_runtime* runtime, int32_t index, fusegen_tuning* out) {
  return guarded([&] {
    require(runtime, "runtime");
    require(out, "out");
    std::lock_guard lock(runtime->tunings_mutex);
    if (index >= 0 && static_cast<size_t>(index) >= runtime->tunings.size()) {
      std::vector<fusegen::Tuning> all = runtime->runtime->tunings(); // only ever grows
      for (size_t i = runtime->tunings.size(); i < all.size(); ++i)
        runtime->tunings.push_back(std::move(all[i]));
    }
    if (index < 0 || static_cast<size_t>(index) >= runtime->tunings.size())
      throw Invalid{"tuning index " + std::to_string(index) + " is out of range (the runtime has done " +
                    std::to_string(runtime->tunings.size()) + " tunings)"};
    const fusegen::Tuning& t = runtime->tunings[static_cast<size_t>(index)];
    *out = {t.fusion.c_str(), t.dims.c_str(), t.chosen.c_str(),          t.heuristic.c_str(),
            t.chosen_ms,      t.heuristic_ms, t.chosen_variants.c_str(), t.heuristic_variants.c_str(),
            t.report.c_str(), t.timed ? 1 : 0};
  });
}

const char* fusegen_runtime_cache_dir(const fusegen_runtime* runtime) {
  return runtime ? runtime->cache_dir.c_str() : "";
}

fusegen_status fusegen_runtime_device(fusegen_runtime* runtime, const char** name, int32_t* arch) {
  return guarded([&] {
    require(runtime, "runtime");
    int32_t cc = runtime->runtime->arch();
    std::lock_guard lock(runtime->device_mutex);
    if (runtime->device_name.empty())
      runtime->device_name = runtime->runtime->device_name();
    if (name)
      *name = runtime->device_name.c_str();
    if (arch)
      *arch = cc;
  });
}

fusegen_status fusegen_runtime_synchronize(fusegen_runtime* runtime, void* stream) {
  return guarded([&] {
    require(runtime, "runtime");
    runtime->runtime->synchronize(stream);
  });
}

fusegen_status fusegen_runtime_stream_wait(fusegen_runtime* runtime, void* stream, void* producer) {
  return guarded([&] {
    require(runtime, "runtime");
    fusegen::runtime::stream_wait(*runtime->stream_waits, stream, producer);
  });
}

static fusegen_program* wrap_program(fusegen::Program program) {
  auto handle = std::make_unique<fusegen_program>();
  handle->function_names = program.function_names();
  handle->program = std::move(program);
  return handle.release();
}

fusegen_status fusegen_program_load_file(fusegen_runtime* runtime, const char* path, fusegen_program** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(runtime, "runtime");
    require(path, "path");
    *out = wrap_program(runtime->runtime->load_file(path));
  });
}

fusegen_status fusegen_program_load_string(fusegen_runtime* runtime, const char* text, const char* name,
                                           fusegen_program** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(runtime, "runtime");
    require(text, "text");
    *out = wrap_program(runtime->runtime->load_string(text, name ? name : "<string>"));
  });
}

void fusegen_program_destroy(fusegen_program* program) { delete program; }

int32_t fusegen_program_function_count(const fusegen_program* program) {
  return program ? static_cast<int32_t>(program->function_names.size()) : -1;
}

const char* fusegen_program_function_name(const fusegen_program* program, int32_t index) {
  if (!program || index < 0 || static_cast<size_t>(index) >= program->function_names.size())
    return nullptr;
  return program->function_names[static_cast<size_t>(index)].c_str();
}

fusegen_status fusegen_program_function(const fusegen_program* program, const char* name, fusegen_function** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(program, "program");
    require(name, "name");
    auto handle = std::make_unique<fusegen_function>();
    handle->function = program->program.function(name);
    handle->signature = handle->function.signature();
    handle->tensors = handle->function.tensors();
    handle->argument_count = handle->function.argument_names().size();
    for (const fusegen::TensorInfo& info : handle->tensors) {
      std::vector<const char*> dims;
      for (const std::string& d : info.dims)
        dims.push_back(d.c_str());
      handle->dim_pointers.push_back(std::move(dims));
    }
    *out = handle.release();
  });
}

void fusegen_function_destroy(fusegen_function* function) { delete function; }

const char* fusegen_function_name(const fusegen_function* function) {
  return function ? function->function.name().c_str() : nullptr;
}

const char* fusegen_function_signature(const fusegen_function* function) {
  return function ? function->signature.c_str() : nullptr;
}

int32_t fusegen_function_tensor_count(const fusegen_function* function) {
  return function ? static_cast<int32_t>(function->tensors.size()) : -1;
}

fusegen_status fusegen_function_tensor_info(const fusegen_function* function, int32_t index,
                                            fusegen_tensor_info* out) {
  return guarded([&] {
    require(function, "function");
    require(out, "out");
    if (index < 0 || static_cast<size_t>(index) >= function->tensors.size())
      throw Invalid{"tensor index " + std::to_string(index) + " is out of range (the function has " +
                    std::to_string(function->tensors.size()) + " tensors)"};
    const fusegen::TensorInfo& info = function->tensors[static_cast<size_t>(index)];
    const std::vector<const char*>& dims = function->dim_pointers[static_cast<size_t>(index)];
    out->name = info.name.c_str();
    out->kind = kind_code(info.kind);
    out->rank = static_cast<int32_t>(dims.size());
    out->dims = dims.data();
  });
}

fusegen_status fusegen_function_output_shapes(const fusegen_function* function, const fusegen_tensor* arguments,
                                              int32_t argument_count, int64_t* shapes, int32_t capacity) {
  return guarded([&] {
    require(function, "function");
    std::vector<std::vector<int64_t>> result = function->function.output_shapes(arguments_of(arguments, argument_count));
    size_t needed = 0;
    for (const std::vector<int64_t>& shape : result)
      needed += shape.size();
    if (capacity < 0 || static_cast<size_t>(capacity) < needed || (needed > 0 && !shapes))
      throw Invalid{"shapes: room for " + std::to_string(capacity) + " dims, but the outputs have " +
                    std::to_string(needed)};
    for (const std::vector<int64_t>& shape : result)
      for (int64_t d : shape)
        *shapes++ = d;
  });
}

// The tensors as references, on the stack for the usual few: a call
// allocates nothing here. Throws Invalid for a malformed array.
class TensorRefs {
public:
  TensorRefs(const fusegen_tensor* tensors, int32_t count, const char* list) {
    if (count > kOnStack) {
      heap_.resize(static_cast<size_t>(count));
      refs_ = heap_.data();
    }
    refs_of(tensors, count, list, refs_);
  }
  TensorRefs(const TensorRefs&) = delete;
  TensorRefs& operator=(const TensorRefs&) = delete;
  const fusegen::TensorRef* data() const { return refs_; }

private:
  static constexpr int32_t kOnStack = 16;
  std::array<fusegen::TensorRef, kOnStack> stack_;
  std::vector<fusegen::TensorRef> heap_;
  fusegen::TensorRef* refs_ = stack_.data();
};

fusegen_status fusegen_function_call(const fusegen_function* function, const fusegen_tensor* arguments,
                                     int32_t argument_count, const fusegen_tensor* outputs, int32_t output_count,
                                     void* stream) {
  return guarded([&] {
    require(function, "function");
    TensorRefs args(arguments, argument_count, "arguments");
    TensorRefs outs(outputs, output_count, "outputs");
    function->function.call(args.data(), static_cast<size_t>(argument_count), outs.data(),
                            static_cast<size_t>(output_count), stream);
  });
}

fusegen_status fusegen_function_bind(const fusegen_function* function, const fusegen_tensor* arguments,
                                     int32_t argument_count, const fusegen_tensor* outputs, int32_t output_count,
                                     fusegen_bound_call** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(function, "function");
    TensorRefs args(arguments, argument_count, "arguments");
    TensorRefs outs(outputs, output_count, "outputs");
    *out = new fusegen_bound_call{function->function.bind(args.data(), static_cast<size_t>(argument_count), outs.data(),
                                                          static_cast<size_t>(output_count))};
  });
}

fusegen_status fusegen_bound_call_launch(const fusegen_bound_call* call, const void* const* argument_data,
                                         const void* const* output_data, void* stream) {
  return guarded([&] {
    require(call, "call");
    call->call.launch(argument_data, output_data, stream);
  });
}

void fusegen_bound_call_destroy(fusegen_bound_call* call) { delete call; }

fusegen_status fusegen_function_prepare(const fusegen_function* function, const char* const* dim_names,
                                        const int64_t* dim_values, int32_t count) {
  return guarded([&] {
    require(function, "function");
    if (count < 0 || (count > 0 && (!dim_names || !dim_values)))
      throw Invalid{"dims: " + std::to_string(count) + " names and values, but an array is NULL"};
    std::map<std::string, int64_t> dims;
    for (int32_t i = 0; i < count; ++i) {
      if (!dim_names[i])
        throw Invalid{"dim_names[" + std::to_string(i) + "] is NULL"};
      if (!dims.emplace(dim_names[i], dim_values[i]).second)
        throw fusegen::RuntimeError(ErrorKind::Argument, "dim '" + std::string(dim_names[i]) + "' is given twice");
    }
    function->function.prepare(dims);
  });
}

} // extern "C"
