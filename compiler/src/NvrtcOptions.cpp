#include "fusegen/NvrtcOptions.h"

#include "fusegen/Target.h"

namespace fusegen {

std::vector<std::string> nvrtc_options(const NvrtcTarget& target, Precision precision) {
  // A cubin for the target's own arch (sm_90a: Hopper's architecture-specific
  // features, which every 9.0 device has; such a cubin runs on exactly
  // those); PTX for the plain compute capability.
  Result<Target> gpu = target_for_arch(target.arch);
  std::string arch = !target.cubin ? "compute_" + std::to_string(target.arch)
                     : gpu         ? gpu.value().compile_arch()
                                   : "sm_" + std::to_string(target.arch);
  std::vector<std::string> options = {
      "--gpu-architecture=" + arch,
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
