#include "DriverApi.h"

#include "Device.h"

#include "fusegen/Runtime.h"

#include <dlfcn.h>

#include <mutex>
#include <utility>
#include <vector>

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

struct StreamWaits {
  explicit StreamWaits(int device_ordinal) : ordinal(device_ordinal) {}
  const int ordinal;
  std::mutex mutex; // guards the rest, and keeps each event record with its wait
  bool opened = false;
  CUdevice device = 0;
  CUcontext primary = nullptr;                       // retained on first need
  std::vector<std::pair<CUcontext, CUevent>> events; // one per context
};

StreamWaits* stream_waits_create(int ordinal) { return new StreamWaits(ordinal); }

void stream_waits_destroy(StreamWaits* waits) noexcept {
  if (!waits)
    return;
  if (!waits->events.empty() || waits->primary) { // then the driver is loaded
    try {
      const DriverApi& api = driver();
      for (const auto& [context, event] : waits->events)
        api.cuEventDestroy_v2(event);
      if (waits->primary)
        api.cuDevicePrimaryCtxRelease_v2(waits->device);
    } catch (...) {
      // Nothing useful to do on failure here.
    }
  }
  delete waits;
}

namespace {

// Null and CU_STREAM_LEGACY name the same stream.
CUstream canonical_stream(void* stream) { return stream ? static_cast<CUstream>(stream) : CU_STREAM_LEGACY; }

} // namespace

void stream_wait(StreamWaits& waits, void* stream, void* producer) {
  if (canonical_stream(stream) == canonical_stream(producer))
    return;
  const DriverApi& api = driver();
  std::lock_guard<std::mutex> lock(waits.mutex);
  if (!waits.opened) {
    waits.device = open_device(api, waits.ordinal).device;
    waits.opened = true;
  }
  // The context calls use (RuntimeState::call_context): the current one when
  // it is on the device, else the primary context.
  CUcontext current = nullptr;
  FUSEGEN_CU(api, cuCtxGetCurrent, &current);
  CUcontext context = nullptr;
  CUdevice on = 0;
  if (current && api.cuCtxGetDevice(&on) == CUDA_SUCCESS && on == waits.device) {
    context = current;
  } else {
    if (!waits.primary)
      FUSEGEN_CU(api, cuDevicePrimaryCtxRetain, &waits.primary, waits.device);
    context = waits.primary;
  }
  ContextScope scope(api, context, current);
  CUevent event = nullptr;
  for (const auto& [made_in, made] : waits.events)
    if (made_in == context)
      event = made;
  if (!event) {
    waits.events.reserve(waits.events.size() + 1); // nothing can fail once the event exists
    FUSEGEN_CU(api, cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
    waits.events.emplace_back(context, event);
  }
  FUSEGEN_CU(api, cuEventRecord, event, static_cast<CUstream>(producer));
  FUSEGEN_CU(api, cuStreamWaitEvent, static_cast<CUstream>(stream), event, 0);
}

} // namespace fusegen::runtime
