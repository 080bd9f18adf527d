// NVRTC options, built in one place for the JIT runtime, warm-up and tests.
#pragma once

#include "fusegen/IR.h"

#include <string>
#include <vector>

namespace fusegen {

struct NvrtcTarget {
  int arch = 90;     // sm_XY as XY
  bool cubin = true; // false: PTX for a device newer than NVRTC knows
};

// --gpu-architecture=sm_XY (sm_90a for 9.0; compute_XY for PTX), -default-device,
// --std=c++17, -DFUSEGEN_DEVICE_ONLY, and no fast-math in strict precision
// (IEEE division and square root, denormals kept).
std::vector<std::string> nvrtc_options(const NvrtcTarget& target, Precision precision);

} // namespace fusegen
