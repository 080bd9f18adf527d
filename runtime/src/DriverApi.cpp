#include "DriverApi.h"

#include "fusegen/Runtime.h"

#include <dlfcn.h>

#include <mutex>

namespace fusegen::runtime {
namespace {

constexpr const char* kDriverLibrary = "libcuda.so.1";

struct LoadedDriver {
  DriverApi api;
  std::string error; // empty when usable
};

LoadedDriver load_driver() {
  LoadedDriver loaded;
  // Never closed: modules and contexts may outlive any owner we could tie it to.
  void* handle = dlopen(kDriverLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    loaded.error = std::string("no CUDA driver: cannot open ") + kDriverLibrary + " (" + (why ? why : "unknown") + ")";
    return loaded;
  }
#define FUSEGEN_DRIVER_LOOKUP(name)                                                                                    \
  loaded.api.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                                         \
  if (!loaded.api.name) {                                                                                              \
    loaded.error = "no usable CUDA driver: " + std::string(kDriverLibrary) + " lacks " #name " (driver too old?)";     \
    return loaded;                                                                                                     \
  }
  FUSEGEN_DRIVER_FUNCTIONS(FUSEGEN_DRIVER_LOOKUP)
#undef FUSEGEN_DRIVER_LOOKUP
  CUresult init = loaded.api.cuInit(0);
  if (init != CUDA_SUCCESS)
    loaded.error = "no CUDA device: " + loaded.api.describe(init, "cuInit");
  return loaded;
}

} // namespace

std::string DriverApi::describe(CUresult result, const char* function) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(result, &name);
  if (cuGetErrorString)
    cuGetErrorString(result, &text);
  std::string message = std::string(function) + ": ";
  message += name ? name : "CUDA error " + std::to_string(static_cast<int>(result));
  if (text)
    message += std::string(" (") + text + ")";
  return message;
}

void DriverApi::check(CUresult result, const char* function) const {
  if (result != CUDA_SUCCESS)
    throw RuntimeError(ErrorKind::Driver, describe(result, function));
}

const DriverApi& driver() {
  static const LoadedDriver loaded = load_driver(); // thread-safe, once per process
  if (!loaded.error.empty())
    throw RuntimeError(ErrorKind::NoDriver, loaded.error);
  return loaded.api;
}

} // namespace fusegen::runtime
