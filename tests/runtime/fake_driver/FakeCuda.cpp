#include "FakeCuda.h"

#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

namespace {

std::mutex g_mutex;
fakecuda::State g_state;
std::map<CUdeviceptr, size_t> g_allocations; // start -> size
struct FakeContext {
  int device = 0;
};
FakeContext g_primary;
thread_local std::vector<CUcontext> t_stack;
struct FakeFunction {
  std::string name;
  const std::string* image = nullptr; // its module's
  int max_dynamic_shared = 48 * 1024; // raised by the opt-in attribute, as the driver's
};

// The device's opt-in limit, as an A100's (8.0) or an H100's (9.0).
int shared_optin() { return g_state.compute_major >= 9 ? 232448 : 166912; }
struct FakeEvent {
  double at_ms = -1; // the clock when recorded; -1 before
  CUcontext context = nullptr; // current when it was made: records must be made there
  bool recorded = false;
  CUstream recorded_on = nullptr;
};
double g_clock_ms = 0; // simulated time, advanced by kernel launches
struct FakeModule {
  std::string image;
  std::vector<std::unique_ptr<FakeFunction>> functions; // freed with the module
};

CUresult enter(const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_state.recording)
    g_state.calls.push_back(name);
  if (g_state.fail_function == name) {
    g_state.fail_function.clear();
    return static_cast<CUresult>(g_state.fail_result);
  }
  return CUDA_SUCCESS;
}

#define FAKE_ENTER(name)                                                                                               \
  if (CUresult failed = enter(name); failed != CUDA_SUCCESS)                                                           \
  return failed

// The allocation containing [p, p + bytes), or end().
std::map<CUdeviceptr, size_t>::iterator find_allocation(CUdeviceptr p, size_t bytes) {
  auto it = g_allocations.upper_bound(p);
  if (it == g_allocations.begin())
    return g_allocations.end();
  --it;
  if (p + bytes > it->first + it->second)
    return g_allocations.end();
  return it;
}

} // namespace

extern "C" fakecuda::State* fakecuda_state() { return &g_state; }

extern "C" void fakecuda_reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_state.launches.clear();
  g_state.calls.clear();
  g_state.fail_function.clear();
  g_state.allocation_device.clear();
  g_state.launch_ms.clear();
  g_state.image_ms.clear();
  g_state.module_images.clear();
  g_state.compute_major = 9;
  g_state.stream_waits.clear();
}

void* g_last_stream = nullptr;

extern "C" void* fakecuda_last_stream() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last_stream;
}

extern "C" int fakecuda_call_count(const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return static_cast<int>(std::count(g_state.calls.begin(), g_state.calls.end(), name));
}

extern "C" int fakecuda_stream_wait_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return static_cast<int>(g_state.stream_waits.size());
}

extern "C" int fakecuda_stream_wait_at(int index, void** stream, void** producer, int* launches_before) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (index < 0 || static_cast<size_t>(index) >= g_state.stream_waits.size())
    return 0;
  const fakecuda::StreamWait& wait = g_state.stream_waits[static_cast<size_t>(index)];
  *stream = wait.stream;
  *producer = wait.producer;
  *launches_before = static_cast<int>(wait.launches_before);
  return 1;
}

extern "C" void fakecuda_set_recording(int on) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_state.recording = on != 0;
}

extern "C" {

// NVRTC opens libcuda.so.1 too and asks for private tables; the fake has none.
CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid*) {
  *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuInit(unsigned int) {
  FAKE_ENTER("cuInit");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDriverGetVersion(int* version) {
  FAKE_ENTER("cuDriverGetVersion");
  *version = 12040;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  switch (error) {
  case CUDA_ERROR_OUT_OF_MEMORY: *text = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case CUDA_ERROR_INVALID_IMAGE: *text = "CUDA_ERROR_INVALID_IMAGE"; break;
  case CUDA_ERROR_NOT_FOUND: *text = "CUDA_ERROR_NOT_FOUND"; break;
  case CUDA_ERROR_LAUNCH_FAILED: *text = "CUDA_ERROR_LAUNCH_FAILED"; break;
  default: *text = "CUDA_ERROR_UNKNOWN"; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char** text) {
  *text = "fake driver error";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* count) {
  FAKE_ENTER("cuDeviceGetCount");
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  FAKE_ENTER("cuDeviceGetAttribute");
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = g_state.compute_major; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = shared_optin();
    break;
  default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice) {
  FAKE_ENTER("cuDeviceGetName");
  std::strncpy(name, "Fake GPU", static_cast<size_t>(length));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_state.primary_retains;
  *context = reinterpret_cast<CUcontext>(&g_primary);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease_v2");
  std::lock_guard<std::mutex> lock(g_mutex);
  --g_state.primary_retains;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  FAKE_ENTER("cuCtxGetCurrent");
  *context = t_stack.empty() ? nullptr : t_stack.back();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  FAKE_ENTER("cuCtxGetDevice");
  if (t_stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = reinterpret_cast<FakeContext*>(t_stack.back())->device;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPushCurrent(CUcontext context) {
  FAKE_ENTER("cuCtxPushCurrent_v2");
  t_stack.push_back(context);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* context) {
  FAKE_ENTER("cuCtxPopCurrent_v2");
  if (t_stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (context)
    *context = t_stack.back();
  t_stack.pop_back();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) {
  FAKE_ENTER("cuStreamSynchronize");
  return t_stack.empty() ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  FAKE_ENTER("cuStreamCreate");
  if (t_stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(g_mutex);
  *stream = reinterpret_cast<CUstream>(new int(0));
  ++g_state.live_streams;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  FAKE_ENTER("cuStreamDestroy_v2");
  std::lock_guard<std::mutex> lock(g_mutex);
  delete reinterpret_cast<int*>(stream);
  --g_state.live_streams;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int) {
  FAKE_ENTER("cuEventCreate");
  if (t_stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto* made = new FakeEvent;
  made->context = t_stack.back();
  *event = reinterpret_cast<CUevent>(made);
  ++g_state.live_events;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent event) {
  FAKE_ENTER("cuEventDestroy_v2");
  std::lock_guard<std::mutex> lock(g_mutex);
  delete reinterpret_cast<FakeEvent*>(event);
  --g_state.live_events;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  FAKE_ENTER("cuEventRecord");
  // The event and the stream must be of one context; the fake knows the
  // streams' contexts no better than "current", which the default streams are of.
  auto* recorded = reinterpret_cast<FakeEvent*>(event);
  if (t_stack.empty() || t_stack.back() != recorded->context)
    return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(g_mutex);
  recorded->at_ms = g_clock_ms;
  recorded->recorded = true;
  recorded->recorded_on = stream;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  FAKE_ENTER("cuStreamWaitEvent");
  if (t_stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const auto* waited = reinterpret_cast<FakeEvent*>(event);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_state.recording)
    g_state.stream_waits.push_back(
        {stream, event, waited->recorded, waited->recorded_on, t_stack.back(), g_state.launches.size()});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventSynchronize(CUevent) {
  FAKE_ENTER("cuEventSynchronize");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  FAKE_ENTER("cuEventElapsedTime_v2");
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto *a = reinterpret_cast<FakeEvent*>(start), *b = reinterpret_cast<FakeEvent*>(end);
  if (a->at_ms < 0 || b->at_ms < 0)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = static_cast<float>(b->at_ms - a->at_ms);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  FAKE_ENTER("cuMemAlloc_v2");
  if (t_stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (bytes > (size_t{1} << 32))
    return CUDA_ERROR_OUT_OF_MEMORY;
  void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  std::lock_guard<std::mutex> lock(g_mutex);
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  g_allocations[*pointer] = bytes;
  ++g_state.live_allocations;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) {
  FAKE_ENTER("cuMemFree_v2");
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_allocations.erase(pointer))
    return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void*>(pointer));
  --g_state.live_allocations;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD_v2");
  if (find_allocation(dst, bytes) == g_allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH_v2");
  if (find_allocation(src, bytes) == g_allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream) {
  FAKE_ENTER("cuMemcpyDtoDAsync_v2");
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t count) {
  FAKE_ENTER("cuMemsetD32_v2");
  if (find_allocation(dst, count * 4) == g_allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  auto* words = reinterpret_cast<unsigned int*>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream) {
  FAKE_ENTER("cuMemsetD8Async");
  if (find_allocation(dst, count) == g_allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void*>(dst), value, count);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes, void** data,
                                        CUdeviceptr pointer) {
  FAKE_ENTER("cuPointerGetAttributes");
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = find_allocation(pointer, 1);
  bool known = it != g_allocations.end();
  int device = 0;
  if (auto where = known ? g_state.allocation_device.find(it->first) : g_state.allocation_device.end();
      where != g_state.allocation_device.end())
    device = where->second;
  unsigned memory_type = !known                            ? 0u
                         : device == fakecuda::kHostMemory ? unsigned{CU_MEMORYTYPE_HOST}
                                                           : unsigned{CU_MEMORYTYPE_DEVICE};
  for (unsigned i = 0; i < count; ++i) {
    switch (attributes[i]) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned*>(data[i]) = memory_type; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<bool*>(data[i]) = false; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data[i]) = known ? std::max(device, 0) : -2; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data[i]) = known ? it->first : 0; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data[i]) = known ? it->second : 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  FAKE_ENTER("cuModuleLoadData");
  if (t_stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  const char* bytes = static_cast<const char*>(image);
  // A cubin is an ELF file; PTX is text with a .version directive.
  bool cubin = std::memcmp(bytes,
                           "\x7f"
                           "ELF",
                           4) == 0;
  bool ptx = !cubin && std::string_view(bytes, strnlen(bytes, 1 << 20)).find(".version") != std::string_view::npos;
  if (!cubin && !ptx)
    return CUDA_ERROR_INVALID_IMAGE;
  auto* loaded = new FakeModule;
  // An ELF's size is its section header table's end: e_shoff + e_shnum * e_shentsize.
  if (cubin) {
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    std::memcpy(&shoff, bytes + 0x28, 8);
    std::memcpy(&shentsize, bytes + 0x3a, 2);
    std::memcpy(&shnum, bytes + 0x3c, 2);
    loaded->image.assign(bytes, shoff + static_cast<uint64_t>(shentsize) * shnum);
  } else {
    loaded->image.assign(bytes);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_state.live_modules;
  ++g_state.module_loads;
  if (g_state.recording)
    g_state.module_images.push_back(loaded->image);
  *module = reinterpret_cast<CUmodule>(loaded);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  FAKE_ENTER("cuModuleUnload");
  delete reinterpret_cast<FakeModule*>(module);
  std::lock_guard<std::mutex> lock(g_mutex);
  --g_state.live_modules;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  FAKE_ENTER("cuModuleGetFunction");
  // The symbol's name is in the image's string table (or the PTX text).
  auto* loaded = reinterpret_cast<FakeModule*>(module);
  if (loaded->image.find(name) == std::string::npos)
    return CUDA_ERROR_NOT_FOUND;
  loaded->functions.push_back(std::make_unique<FakeFunction>());
  loaded->functions.back()->name = name;
  loaded->functions.back()->image = &loaded->image;
  *function = reinterpret_cast<CUfunction>(loaded->functions.back().get());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > shared_optin())
      return CUDA_ERROR_INVALID_VALUE;
    reinterpret_cast<FakeFunction*>(function)->max_dynamic_shared = value;
  }
  return CUDA_SUCCESS;
}
} // extern "C"

namespace {

// Both launch entry points: records the launch, carries out fills, advances
// the simulated clock.
CUresult launch_kernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared, CUstream stream, void** params, bool programmatic) {
  if (t_stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  // Above 48 KiB of dynamic shared memory the kernel must have opted in.
  if (static_cast<int>(shared) > reinterpret_cast<FakeFunction*>(function)->max_dynamic_shared)
    return CUDA_ERROR_INVALID_VALUE;
  fakecuda::Launch launch;
  launch.programmatic = programmatic;
  launch.kernel = reinterpret_cast<FakeFunction*>(function)->name;
  launch.grid[0] = gx;
  launch.grid[1] = gy;
  launch.grid[2] = gz;
  launch.block[0] = bx;
  launch.block[1] = by;
  launch.block[2] = bz;
  launch.shared_bytes = shared;
  launch.stream = stream;
  launch.context = t_stack.back();
  if (launch.kernel == "fusegen_fill") {
    // fusegen_fill(float* data, float value, long long count)
    CUdeviceptr data = *static_cast<CUdeviceptr*>(params[0]);
    float value = *static_cast<float*>(params[1]);
    long long count = *static_cast<long long*>(params[2]);
    if (static_cast<unsigned long long>(gx) * bx < static_cast<unsigned long long>(count))
      return CUDA_ERROR_LAUNCH_FAILED; // the grid would not cover the buffer
    if (find_allocation(data, static_cast<size_t>(count) * 4) == g_allocations.end())
      return CUDA_ERROR_LAUNCH_FAILED;
    auto* floats = reinterpret_cast<float*>(data);
    for (long long i = 0; i < count; ++i)
      floats[i] = value;
  } else {
    const auto* block = static_cast<const unsigned char*>(params[0]);
    launch.params.assign(block, block + 320);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_last_stream = stream;
  const std::string grid = std::to_string(gx) + "," + std::to_string(gy) + "," + std::to_string(gz);
  const std::string& image = *reinterpret_cast<FakeFunction*>(function)->image;
  auto by_image = g_state.image_ms.find(image);
  auto cost = g_state.launch_ms.find(grid);
  g_clock_ms += by_image != g_state.image_ms.end() ? by_image->second
                : cost == g_state.launch_ms.end()  ? 0.01
                                                   : cost->second;
  if (g_state.recording)
    g_state.launches.push_back(std::move(launch));
  return CUDA_SUCCESS;
}

} // namespace

extern "C" {

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream stream, void** params, void**) {
  FAKE_ENTER("cuLaunchKernel");
  return launch_kernel(function, gx, gy, gz, bx, by, bz, shared, stream, params, false);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction function, void** params, void**) {
  FAKE_ENTER("cuLaunchKernelEx");
  bool programmatic = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& attribute = config->attrs[i];
    if (attribute.id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      return CUDA_ERROR_INVALID_VALUE; // fusegen sets no other attribute
    programmatic = attribute.value.programmaticStreamSerializationAllowed != 0;
  }
  return launch_kernel(function, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                       config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream, params,
                       programmatic);
}

} // extern "C"
