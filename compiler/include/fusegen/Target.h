// The GPU that code is generated for: the features and sizes that the
// emitters and the runtime ask about, instead of testing the architecture
// number where they need it. One record, built in one place from the compute
// capability (`--arch` offline, the device's at run time).
#pragma once

#include "fusegen/Result.h"

#include <string>

namespace fusegen {

struct Target {
  int arch = 90;    // compute capability XY (sm_XY)
  int sm_count = 0; // streaming multiprocessors: how many blocks keep the GPU busy
  // Shared memory one block may use, static and dynamic together, with the
  // opt-in attribute (the launchers set it above 48 KiB): what bounds a
  // kernel's shared-memory cache.
  int max_shared_bytes_per_block = 0;
  // Warpgroup MMA (wgmma) with its a-features: compute capability 9.0 only
  // (sm_90a); later generations have other tensor-core instructions.
  bool wgmma = false;
  // Thread-block clusters with distributed shared memory (split-K shares,
  // cluster barriers): 9.0 and later.
  bool clusters = false;
  // Programmatic dependent launches (a kernel's prologue overlaps the
  // previous kernel's tail): 9.0 and later.
  bool dependent_launches = false;
  // Strict precision's GEMM products as FP16x3 (fp16 tensor cores, twice
  // tf32's rate, a 3xTF32 fallback per block where operands leave fp16's
  // range) where the template has them: on wgmma (templates/gemm/
  // mainloop_fp16x3.cuh). Elsewhere 3xTF32.
  bool fp16x3_products = false;
  // Tuning: GEMM output blocks taken in rastered order (measured faster on
  // the H100, bench/NOTES.md v25).
  bool rastered_gemm_blocks = false;

  // What NVRTC and nvcc compile for: "sm_90a" where the code uses the
  // architecture-specific features, else "sm_XY".
  std::string compile_arch() const;
};

// The target of compute capability `arch` (XY), with the SM count of that
// generation's datacenter part (A100 108, H100 SXM 132, B200 148) and its
// per-block shared memory (163 KiB on 8.0, 227 KiB on 9.0 and 10.0, 99 KiB
// on the workstation parts); an error below 8.0, which fusegen does not
// support.
Result<Target> target_for_arch(int arch);

} // namespace fusegen
