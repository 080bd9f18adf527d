#include "fusegen/NvrtcOptions.h"

namespace fusegen {

std::vector<std::string> nvrtc_options(const NvrtcTarget& target, Precision precision) {
  // sm_90a: Hopper's architecture-specific features (wgmma), which every
  // compute capability 9.0 device has; a 9.0a cubin runs on exactly those.
  std::string arch = std::to_string(target.arch) + (target.cubin && target.arch == 90 ? "a" : "");
  std::vector<std::string> options = {
      (target.cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") + arch,
      "-default-device",
      "--std=c++17",
      "-DFUSEGEN_DEVICE_ONLY",
  };
  if (precision == Precision::Strict) {
    // NVRTC's defaults, spelled out: results must track float64 within 1e-4.
    options.push_back("--prec-div=true");
    options.push_back("--prec-sqrt=true");
    options.push_back("--ftz=false");
    options.push_back("--fmad=true");
  } else {
    options.push_back("--ftz=false");
  }
  return options;
}

} // namespace fusegen
