#include "fusegen/NvrtcOptions.h"

namespace fusegen {

std::vector<std::string> nvrtc_options(const NvrtcTarget& target, Precision precision) {
  std::string arch = std::to_string(target.arch);
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
