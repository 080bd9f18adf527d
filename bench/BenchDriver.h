// Which CUDA driver a host-side benchmark runs on: the real libcuda.so.1 when
// it opens and reports a device, otherwise the fake driver of the runtime
// tests (tests/runtime/fake_driver), so the host-side costs can be measured
// on a machine without a GPU. With the fake, module loads and launches do no
// device work: the figures are fusegen's host time plus the fake's own small
// cost per entry point, not what a GPU driver adds.
#pragma once

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace fusegen::bench {

struct Driver {
  bool fake = false;
  std::string description; // for the report
};

// True when the real driver opens, initializes and has a device. Probed in a
// child process: once loaded, the real libcuda.so.1 would shadow the fake.
inline bool real_driver_usable() {
  pid_t child = ::fork();
  if (child < 0)
    return false;
  if (child == 0) {
    void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda)
      ::_exit(1);
    using Init = int (*)(unsigned);
    using Count = int (*)(int*);
    auto init = reinterpret_cast<Init>(::dlsym(cuda, "cuInit"));
    auto count = reinterpret_cast<Count>(::dlsym(cuda, "cuDeviceGetCount"));
    int devices = 0;
    ::_exit(init && count && init(0) == 0 && count(&devices) == 0 && devices > 0 ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// `mode` is "auto", "real" or "fake". Must run before fusegen opens the
// driver (its first device use). Throws std::runtime_error when the asked-for
// driver cannot be used.
inline Driver choose_driver(const std::string& mode) {
  Driver driver;
  if (mode != "auto" && mode != "real" && mode != "fake")
    throw std::runtime_error("--driver must be auto, real or fake, not '" + mode + "'");
  bool real = mode == "real" || (mode == "auto" && real_driver_usable());
  if (real) {
    driver.description = "real (libcuda.so.1)";
    return driver;
  }
  // Loaded globally first, the fake is what the runtime's dlopen("libcuda.so.1") finds.
  void* fake = ::dlopen(FUSEGEN_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
  if (!fake)
    throw std::runtime_error(std::string("cannot load the fake driver ") + FUSEGEN_FAKE_CUDA_PATH + ": " + ::dlerror());
  // The fake records every call and launch for the tests; a benchmark of
  // many calls turns that off so the fake's bookkeeping does not grow.
  using SetRecording = void (*)(int);
  if (auto set_recording = reinterpret_cast<SetRecording>(::dlsym(fake, "fakecuda_set_recording")))
    set_recording(0);
  driver.fake = true;
  driver.description = std::string("FAKE (") + FUSEGEN_FAKE_CUDA_PATH +
                       "; no GPU: modules are not loaded onto a device and launches run nothing, so these are "
                       "host-side costs only)";
  return driver;
}

} // namespace fusegen::bench
