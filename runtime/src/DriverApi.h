// The CUDA driver API, opened at run time (dlopen "libcuda.so.1") instead of
// linked, so that fusegen runs on machines without a driver (generation,
// NVRTC, warm-up) and reports "no CUDA driver" only when a device is needed.
//
// Every entry point fusegen uses is listed once below, by its exported ABI
// symbol (the _v2 names are what cuda.h's macros select); the member of that
// name has the header's prototype. Types come from the toolkit's cuda.h.
#pragma once

#include <cuda.h>

#include <string>

#define FUSEGEN_DRIVER_FUNCTIONS(X)                                                                                    \
  X(cuInit)                                                                                                            \
  X(cuDriverGetVersion)                                                                                                \
  X(cuGetErrorName)                                                                                                    \
  X(cuGetErrorString)                                                                                                  \
  X(cuDeviceGetCount)                                                                                                  \
  X(cuDeviceGet)                                                                                                       \
  X(cuDeviceGetAttribute)                                                                                              \
  X(cuDeviceGetName)                                                                                                   \
  X(cuDevicePrimaryCtxRetain)                                                                                          \
  X(cuDevicePrimaryCtxRelease_v2)                                                                                      \
  X(cuCtxGetCurrent)                                                                                                   \
  X(cuCtxGetDevice)                                                                                                    \
  X(cuCtxPushCurrent_v2)                                                                                               \
  X(cuCtxPopCurrent_v2)                                                                                                \
  X(cuCtxSynchronize)                                                                                                  \
  X(cuStreamSynchronize)                                                                                               \
  X(cuStreamCreate)                                                                                                    \
  X(cuStreamDestroy_v2)                                                                                                \
  X(cuStreamWaitEvent)                                                                                                 \
  X(cuEventCreate)                                                                                                     \
  X(cuEventDestroy_v2)                                                                                                 \
  X(cuEventRecord)                                                                                                     \
  X(cuEventSynchronize)                                                                                                \
  X(cuEventElapsedTime_v2)                                                                                             \
  X(cuMemAlloc_v2)                                                                                                     \
  X(cuMemFree_v2)                                                                                                      \
  X(cuMemcpyHtoD_v2)                                                                                                   \
  X(cuMemcpyDtoH_v2)                                                                                                   \
  X(cuMemcpyDtoDAsync_v2)                                                                                              \
  X(cuMemsetD32_v2)                                                                                                    \
  X(cuMemsetD8Async)                                                                                                   \
  X(cuPointerGetAttributes)                                                                                            \
  X(cuModuleLoadData)                                                                                                  \
  X(cuModuleUnload)                                                                                                    \
  X(cuModuleGetFunction)                                                                                               \
  X(cuFuncSetAttribute)                                                                                                \
  X(cuLaunchKernel)                                                                                                    \
  X(cuLaunchKernelEx)

namespace fusegen::runtime {

struct DriverApi {
#define FUSEGEN_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  FUSEGEN_DRIVER_FUNCTIONS(FUSEGEN_DRIVER_MEMBER)
#undef FUSEGEN_DRIVER_MEMBER

  // "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
  std::string describe(CUresult result, const char* function) const;
  // Throws RuntimeError (ErrorKind::Driver) naming the function on failure.
  void check(CUresult result, const char* function) const;
};

// The process-wide driver, loaded and cuInit'ed on first use. Throws
// RuntimeError (ErrorKind::NoDriver) when libcuda cannot be opened, lacks an
// entry point, or cuInit fails; the outcome is remembered.
const DriverApi& driver();

// Stream ordering for the C API's fusegen_runtime_stream_wait: the work
// enqueued later on one stream waits for the work enqueued so far on another
// (a producer's, such as __cuda_array_interface__'s `stream`), without
// blocking the host. capi/CApi.cpp declares these three itself (cuda.h is not
// on its include path), so they take and give no driver types.
struct StreamWaits;
// For device `ordinal`; nothing is asked of the driver before the first wait.
StreamWaits* stream_waits_create(int ordinal);
// Destroys the events and releases the primary context if it was retained.
void stream_waits_destroy(StreamWaits* waits) noexcept;
// Records an event on `producer` and makes `stream` wait for it
// (cuStreamWaitEvent), in the context calls use: the thread's current one
// when it is on the device, else the device's primary context (pushed and
// popped around). Streams are CUstream handles; null and CU_STREAM_LEGACY
// are both the legacy default stream, CU_STREAM_PER_THREAD the per-thread
// one. When the two are the same stream nothing is done and the driver is not
// opened. One event per context, made on first use and reused; a lock keeps
// each record with its wait, so concurrent waits cannot swap records.
// Throws RuntimeError: NoDriver (no driver or no such device), Driver.
void stream_wait(StreamWaits& waits, void* stream, void* producer);

} // namespace fusegen::runtime

// Calls a driver entry point and checks it: FUSEGEN_CU(api, cuMemAlloc_v2, &p, n).
#define FUSEGEN_CU(api, function, ...) (api).check((api).function(__VA_ARGS__), #function)
