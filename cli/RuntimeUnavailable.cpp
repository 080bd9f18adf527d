// The runtime commands in a build without the CUDA toolkit (no NVRTC): they
// say so instead of disappearing.
#ifndef FUSEGEN_HAVE_RUNTIME
#include "Commands.h"

#include <iostream>

namespace fusegen::cli {
namespace {

int unavailable(const char* command) {
  std::cerr << "fusegen " << command
            << ": error: this fusegen was built without the CUDA toolkit (NVRTC); install it and rebuild\n";
  return kExitUsage;
}

} // namespace

int warmup_command(const WarmupArgs&) { return unavailable("warmup"); }
int cache_command(const CacheArgs&) { return unavailable("cache"); }
int device_run_command(const RunArgs&) { return unavailable("run --device"); }

} // namespace fusegen::cli
#endif // FUSEGEN_HAVE_RUNTIME
