// NVRTC: its version, the architectures it can target, the target chosen for
// a device, and compilation of one generated source to a cubin (or PTX).
#pragma once

#include "fusegen/NvrtcOptions.h"
#include "fusegen/Result.h"

#include <string>
#include <vector>

namespace fusegen::runtime {

struct NvrtcInfo {
  int major = 0;
  int minor = 0;
  std::vector<int> archs; // sm_XY as XY, ascending
  std::string version() const { return std::to_string(major) + "." + std::to_string(minor); }
};

// Queried once per process.
const NvrtcInfo& nvrtc_info();

// What to compile for a device of compute capability `arch`: a cubin when
// NVRTC knows the arch; for a device newer than NVRTC, PTX for the newest
// arch it knows (the driver JIT-compiles it); for an arch NVRTC skips, a
// cubin of the closest lower arch of the same major (binary compatible).
// A pure function of (arch, NVRTC), so warm-up picks what a device will.
Result<NvrtcTarget> choose_target(int arch, const NvrtcInfo& info);

// "sm_90" or "compute_90".
std::string target_name(const NvrtcTarget& target);

// Compiles `source`; `program_name` is what the log calls the file. Returns
// the cubin (or PTX, NUL-terminated as cuModuleLoadData wants it) or an
// error holding the log.
Result<std::string> nvrtc_compile(const std::string& source, const std::string& program_name,
                                  const std::vector<std::string>& options, bool ptx);

// "  123 | the source line" for the first "(123): error" of an NVRTC log,
// so that a failure shows the offending generated line; empty if none.
std::string first_error_line(const std::string& log, const std::string& source);

} // namespace fusegen::runtime
