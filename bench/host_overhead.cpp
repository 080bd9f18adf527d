// Host time per call of a tiny fusion (y[1, 16] = a + b, the one
// bench/kernelbench.py's measure_overhead times from Python) through the C++
// API (Function::call, BoundCall::launch) and the C API
// (fusegen_function_call, fusegen_bound_call_launch), with and without the
// driver's pointer checks. The kernels are compiled (or taken
// from the disk cache) before timing; every timed call launches.
//
//   fusegen_bench_host_overhead [--calls N] [--driver auto|real|fake] [--cache-dir DIR]
//
// On a machine without a GPU it runs on the fake driver of the runtime tests
// and says so: the figures then leave out what a real driver's launch costs.
#include "BenchDriver.h"

#include "fusegen.h"
#include "fusegen/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr const char* kTinySpec = "fusion tiny_add {\n  input a : f32[1, 16]\n  input b : f32[1, 16]\n"
                                  "  output y = a + b\n}\n";

struct Timing {
  double batch_median_us = 0;
  double batch_min_us = 0;
  double back_to_back_us = 0;
};

constexpr int kBatch = 64; // calls per batch, as in bench/kernelbench.py's host_overhead
constexpr int kBatches = 300;

// Per call: the median and min over kBatches batches of kBatch calls, each
// begun on an idle GPU (after `synchronize`), and the mean of `calls`
// back-to-back calls. Back to back, tiny kernels can be launched faster than
// the GPU runs them, and then each launch waits for room in the stream's
// queue; a batch this small fits in it, so its time is the host's alone.
Timing time_calls(const std::function<void()>& call, const std::function<void()>& synchronize, int calls) {
  for (int i = 0; i < std::min(calls, 1000); ++i)
    call();
  using Clock = std::chrono::steady_clock;
  auto us_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  std::vector<double> per_call(kBatches);
  for (double& sample : per_call) {
    synchronize();
    Clock::time_point t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i)
      call();
    sample = us_since(t0) / kBatch;
  }
  synchronize();
  Clock::time_point begin = Clock::now();
  for (int i = 0; i < calls; ++i)
    call();
  Timing t;
  t.back_to_back_us = us_since(begin) / calls;
  synchronize();
  std::sort(per_call.begin(), per_call.end());
  t.batch_median_us = per_call[per_call.size() / 2];
  t.batch_min_us = per_call.front();
  return t;
}

void report(const char* label, const Timing& t) {
  std::printf("  %-52s batches: median %7.3f us, min %7.3f us; back to back %7.3f us per call\n", label,
              t.batch_median_us, t.batch_min_us, t.back_to_back_us);
}

void check(fusegen_status status, const char* what) {
  if (status != FUSEGEN_OK) {
    std::fprintf(stderr, "%s failed: %s: %s\n", what, fusegen_status_name(status), fusegen_last_error());
    std::exit(1);
  }
}

void cpp_api(const std::string& cache_dir, bool check_pointers, int calls) {
  fusegen::RuntimeOptions options;
  options.cache_dir = cache_dir;
  options.check_pointers = check_pointers;
  fusegen::Runtime rt(0, options);
  fusegen::Function f = rt.load_string(kTinySpec, "tiny.fg").function("tiny_add");
  fusegen::DeviceBuffer a = rt.allocate(64), b = rt.allocate(64), y = rt.allocate(64);
  rt.fill(a.data(), 1.0f, 16);
  rt.fill(b.data(), 2.0f, 16);
  const std::vector<fusegen::TensorArg> arguments = {{"a", a.data(), {1, 16}}, {"b", b.data(), {1, 16}}};
  const std::vector<fusegen::TensorOut> outputs = {{"y", y.data(), {1, 16}}};
  f.call(arguments, outputs); // compiles or loads the kernels
  auto synchronize = [&] { rt.synchronize(); };
  Timing prebuilt = time_calls([&] { f.call(arguments, outputs); }, synchronize, calls);
  // As a caller that builds its argument vectors for every call.
  Timing built = time_calls(
      [&] {
        f.call({{"a", a.data(), {1, 16}}, {"b", b.data(), {1, 16}}}, {{"y", y.data(), {1, 16}}});
      },
      synchronize, calls);
  const int64_t shape[] = {1, 16};
  const fusegen::TensorRef refs[] = {{"a", nullptr, shape, 2}, {"b", nullptr, shape, 2}, {"y", nullptr, shape, 2}};
  fusegen::BoundCall bound = f.bind(refs, 2, refs + 2, 1);
  const void* data[] = {a.data(), b.data()};
  const void* out_data[] = {y.data()};
  Timing launched = time_calls([&] { bound.launch(data, out_data); }, synchronize, calls);
  rt.synchronize();
  std::vector<float> host(16);
  rt.copy_to_host(host.data(), y.data(), 64);
  std::string label = std::string("C++ Function::call, check_pointers=") + (check_pointers ? "on" : "off");
  report((label + ", vectors reused").c_str(), prebuilt);
  report((label + ", vectors per call").c_str(), built);
  report((std::string("C++ BoundCall::launch, check_pointers=") + (check_pointers ? "on" : "off")).c_str(), launched);
}

void c_api(const std::string& cache_dir, bool check_pointers, int calls) {
  fusegen_runtime_options options;
  fusegen_runtime_options_init(&options);
  options.cache_dir = cache_dir.c_str();
  options.check_pointers = check_pointers ? 1 : 0;
  fusegen_runtime* rt = nullptr;
  check(fusegen_runtime_create(0, &options, &rt), "fusegen_runtime_create");
  fusegen_program* program = nullptr;
  check(fusegen_program_load_string(rt, kTinySpec, "tiny.fg", &program), "fusegen_program_load_string");
  fusegen_function* f = nullptr;
  check(fusegen_program_function(program, "tiny_add", &f), "fusegen_program_function");
  // Device memory from a C++ Runtime on the same device (the C API takes
  // the caller's pointers and has no allocator).
  fusegen::Runtime memory(0);
  fusegen::DeviceBuffer a = memory.allocate(64), b = memory.allocate(64), y = memory.allocate(64);
  const int64_t shape[] = {1, 16};
  const fusegen_tensor arguments[] = {{"a", a.data(), shape, 2, FUSEGEN_FLOAT32},
                                      {"b", b.data(), shape, 2, FUSEGEN_FLOAT32}};
  const fusegen_tensor outputs[] = {{"y", y.data(), shape, 2, FUSEGEN_FLOAT32}};
  check(fusegen_function_call(f, arguments, 2, outputs, 1, nullptr), "fusegen_function_call");
  Timing t = time_calls(
      [&] {
        if (fusegen_function_call(f, arguments, 2, outputs, 1, nullptr) != FUSEGEN_OK)
          check(FUSEGEN_ERROR_INTERNAL, "fusegen_function_call");
      },
      [&] { check(fusegen_runtime_synchronize(rt, nullptr), "fusegen_runtime_synchronize"); }, calls);
  fusegen_bound_call* bound = nullptr;
  check(fusegen_function_bind(f, arguments, 2, outputs, 1, &bound), "fusegen_function_bind");
  const void* data[] = {a.data(), b.data()};
  const void* out_data[] = {y.data()};
  Timing launched = time_calls(
      [&] {
        if (fusegen_bound_call_launch(bound, data, out_data, nullptr) != FUSEGEN_OK)
          check(FUSEGEN_ERROR_INTERNAL, "fusegen_bound_call_launch");
      },
      [&] { check(fusegen_runtime_synchronize(rt, nullptr), "fusegen_runtime_synchronize"); }, calls);
  check(fusegen_runtime_synchronize(rt, nullptr), "fusegen_runtime_synchronize");
  const char* pointers = check_pointers ? "on" : "off";
  report((std::string("C fusegen_function_call, check_pointers=") + pointers).c_str(), t);
  report((std::string("C fusegen_bound_call_launch, check_pointers=") + pointers).c_str(), launched);
  fusegen_bound_call_destroy(bound);
  fusegen_function_destroy(f);
  fusegen_program_destroy(program);
  fusegen_runtime_destroy(rt);
}

// The driver's own cost, for scale: cuLaunchKernel of an empty kernel with
// one 320-byte parameter (the size of fusegen's FusegenArgs) on the primary
// context, nothing around it, then with an 8-byte one, then the other
// driver calls a fusegen call makes (its context, and with pointer checks one
// cuPointerGetAttributes per tensor). What the calls above take beyond the
// launch is fusegen's. Real driver only.
void driver_launch_alone(int calls) {
  void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda)
    throw std::runtime_error("cannot open libcuda.so.1");
  auto entry = [&](const char* name) {
    void* symbol = ::dlsym(cuda, name);
    if (!symbol)
      throw std::runtime_error(std::string("libcuda.so.1 has no ") + name);
    return symbol;
  };
  using Status = int;
  auto retain = reinterpret_cast<Status (*)(void**, int)>(entry("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<Status (*)(void*)>(entry("cuCtxSetCurrent"));
  auto load = reinterpret_cast<Status (*)(void**, const void*)>(entry("cuModuleLoadData"));
  auto get_function = reinterpret_cast<Status (*)(void**, void*, const char*)>(entry("cuModuleGetFunction"));
  auto launch = reinterpret_cast<Status (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                            void*, void**, void**)>(entry("cuLaunchKernel"));
  auto synchronize_context = reinterpret_cast<Status (*)()>(entry("cuCtxSynchronize"));
  static const char kEmptyKernel[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                                     ".visible .entry empty(.param .align 8 .b8 args[320])\n{\n  ret;\n}\n"
                                     ".visible .entry empty8(.param .align 8 .b8 args[8])\n{\n  ret;\n}\n";
  void* context = nullptr;
  void* module = nullptr;
  void* function = nullptr;
  void* function8 = nullptr;
  if (retain(&context, 0) != 0 || set_current(context) != 0 || load(&module, kEmptyKernel) != 0 ||
      get_function(&function, module, "empty") != 0 || get_function(&function8, module, "empty8") != 0)
    throw std::runtime_error("cannot load the empty kernel");
  unsigned long long args[40] = {};
  void* params[] = {args};
  auto launch_empty = [&] {
    if (launch(function, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) != 0)
      throw std::runtime_error("cuLaunchKernel failed");
  };
  auto synchronize = [&] {
    if (synchronize_context() != 0)
      throw std::runtime_error("cuCtxSynchronize failed");
  };
  report("driver alone: cuLaunchKernel of an empty kernel", time_calls(launch_empty, synchronize, calls));
  // Whether the parameter's size matters: the same with 8 bytes.
  auto launch_small = [&] {
    if (launch(function8, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) != 0)
      throw std::runtime_error("cuLaunchKernel failed");
  };
  report("driver alone: the same with an 8-byte parameter", time_calls(launch_small, synchronize, calls));
  // The other driver calls of every fusegen call, each on its own: what
  // fusegen's part of a call (its time beyond the launch) is made of.
  auto get_current = reinterpret_cast<Status (*)(void**)>(entry("cuCtxGetCurrent"));
  auto get_device = reinterpret_cast<Status (*)(int*)>(entry("cuCtxGetDevice"));
  auto pointer_attributes =
      reinterpret_cast<Status (*)(unsigned, const int*, void**, unsigned long long)>(entry("cuPointerGetAttributes"));
  auto allocate = reinterpret_cast<Status (*)(unsigned long long*, size_t)>(entry("cuMemAlloc_v2"));
  auto release = reinterpret_cast<Status (*)(unsigned long long)>(entry("cuMemFree_v2"));
  auto idle = [] {};
  auto must = [](Status status, const char* what) {
    if (status != 0)
      throw std::runtime_error(std::string(what) + " failed");
  };
  auto context_of_call = [&] {
    void* current = nullptr;
    int device = -1;
    must(get_current(&current), "cuCtxGetCurrent");
    must(get_device(&device), "cuCtxGetDevice");
  };
  report("driver alone: cuCtxGetCurrent + cuCtxGetDevice", time_calls(context_of_call, idle, calls));
  unsigned long long buffer = 0;
  must(allocate(&buffer, 64), "cuMemAlloc");
  auto check_one_pointer = [&] {
    // CallCheck.cpp's five: memory type, managed, ordinal, range start, size
    const int attributes[] = {2, 8, 9, 11, 12};
    unsigned long long values[5] = {};
    void* data[] = {&values[0], &values[1], &values[2], &values[3], &values[4]};
    must(pointer_attributes(5, attributes, data, buffer), "cuPointerGetAttributes");
  };
  report("driver alone: cuPointerGetAttributes of one tensor", time_calls(check_one_pointer, idle, calls));
  must(release(buffer), "cuMemFree");
}

} // namespace

int main(int argc, char** argv) {
  int calls = 100000;
  std::string mode = "auto";
  std::string cache_dir;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--calls" && i + 1 < argc)
      calls = std::atoi(argv[++i]);
    else if (arg == "--driver" && i + 1 < argc)
      mode = argv[++i];
    else if (arg == "--cache-dir" && i + 1 < argc)
      cache_dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--calls N] [--driver auto|real|fake] [--cache-dir DIR]\n", argv[0]);
      return 2;
    }
  }
  if (calls <= 0) {
    std::fprintf(stderr, "--calls must be positive\n");
    return 2;
  }
  fusegen::bench::Driver driver;
  try {
    driver = fusegen::bench::choose_driver(mode);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::filesystem::path temp;
  if (cache_dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "fusegen-bench-XXXXXX").string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (!::mkdtemp(name.data())) {
      std::perror("mkdtemp");
      return 1;
    }
    temp = cache_dir = name.data();
  }
  std::printf("fusegen %s host overhead per call: y[1, 16] = a + b\n", fusegen_version());
  std::printf("driver: %s\n", driver.description.c_str());
  std::printf("calls per figure: %d (after %d untimed)\n", calls, std::min(calls, 1000));
  int status = 0;
  try {
    for (bool check_pointers : {true, false})
      cpp_api(cache_dir, check_pointers, calls);
    for (bool check_pointers : {true, false})
      c_api(cache_dir, check_pointers, calls);
    if (!driver.fake)
      driver_launch_alone(calls);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    status = 1;
  }
  if (!temp.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp, ec);
  }
  return status;
}
