// A fake CUDA driver (libcuda.so.1) for testing the runtime's driver-API code
// without a GPU: device memory is host memory, contexts are a per-thread
// stack, modules must look like a cubin or PTX and contain the kernel names
// asked for, `fusegen_fill` launches are carried out, other launches are
// recorded (their kernels cannot run) and take simulated time that events
// measure (by the module's image or by grid); a launch with more than 48 KiB
// of dynamic shared memory fails unless the kernel opted in
// (cuFuncSetAttribute, up to the device's limit: 163 KiB on 8.0, 227 KiB on
// 9.0). Tests load it before the runtime
// opens "libcuda.so.1", which then resolves to it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fakecuda {

struct Launch {
  std::string kernel;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned shared_bytes = 0;
  void* stream = nullptr;
  void* context = nullptr;
  std::vector<unsigned char> params; // FusegenArgs (320 bytes) for generated kernels
  bool programmatic = false;          // cuLaunchKernelEx with programmatic stream serialization
};

// A cuStreamWaitEvent: `stream` waits for the event's last record.
struct StreamWait {
  void* stream = nullptr;
  void* event = nullptr;
  bool recorded = false;      // the event had been recorded
  void* producer = nullptr;   // the stream it was last recorded on
  void* context = nullptr;    // current at the wait
  size_t launches_before = 0; // kernel launches recorded before the wait
};

struct State {
  std::vector<Launch> launches;
  std::vector<std::string> calls; // every entry point called, in order
  int live_allocations = 0;
  int live_modules = 0;
  int primary_retains = 0; // retains minus releases
  int module_loads = 0;
  std::string fail_function; // the next call of this entry point fails...
  int fail_result = 0;       // ...with this CUresult
  // Where cuPointerGetAttributes says an allocation (by its start) lives:
  // a device ordinal, or kHostMemory. Allocations not listed are on device 0.
  std::map<unsigned long long, int> allocation_device;
  // Off (fakecuda_set_recording(0), for benchmarks of many calls): `calls`
  // and `launches` are not appended to; fills still run.
  bool recording = true;
  // Simulated time: each kernel launch advances a clock that events read, by
  // launch_ms["gx,gy,gz"] for its grid, or 0.01 ms.
  std::map<std::string, double> launch_ms;
  // Ahead of launch_ms: a launch of a kernel from a module loaded from
  // exactly this image (as module_images holds it) takes this long.
  std::map<std::string, double> image_ms;
  // Every image cuModuleLoadData loaded (while recording), in order; a
  // cubin up to its section header table's end.
  std::vector<std::string> module_images;
  int live_streams = 0;
  int live_events = 0;
  std::vector<StreamWait> stream_waits;
  int compute_major = 9; // the device's compute capability: compute_major.0
};
inline constexpr int kHostMemory = -1;

} // namespace fakecuda

// Exported by the fake library; found with dlsym.
extern "C" fakecuda::State* fakecuda_state();
extern "C" void fakecuda_reset();
extern "C" void fakecuda_set_recording(int on);
// The stream of the last kernel launch (recorded or not), for tests from C.
extern "C" void* fakecuda_last_stream();
// For tests from C (ctypes): how many times entry point `name` was called
// (while recording), and the stream waits: their count, and the i-th one's
// waiting stream, producer stream and kernel launches before it (0 when
// there is no i-th).
extern "C" int fakecuda_call_count(const char* name);
extern "C" int fakecuda_stream_wait_count();
extern "C" int fakecuda_stream_wait_at(int index, void** stream, void** producer, int* launches_before);
