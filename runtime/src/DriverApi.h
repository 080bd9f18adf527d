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

} // namespace fusegen::runtime

// Calls a driver entry point and checks it: FUSEGEN_CU(api, cuMemAlloc_v2, &p, n).
#define FUSEGEN_CU(api, function, ...) (api).check((api).function(__VA_ARGS__), #function)
