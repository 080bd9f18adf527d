#include "fusegen/Target.h"

namespace fusegen {
namespace {

struct Generation {
  int arch;
  int sm_count;
};

// The largest generation at or below a target's arch gives its SM count
// (8.6 and 8.9 parts are workstation GPUs; their counts vary by model).
constexpr Generation kGenerations[] = {{80, 108}, {86, 84}, {89, 128}, {90, 132}, {100, 148}, {120, 170}};

} // namespace

std::string Target::compile_arch() const { return "sm_" + std::to_string(arch) + (wgmma ? "a" : ""); }

Result<Target> target_for_arch(int arch) {
  if (arch < 80)
    return Error{"sm_" + std::to_string(arch) + " is not supported (fusegen targets sm_80 and newer)"};
  Target target;
  target.arch = arch;
  for (const Generation& generation : kGenerations)
    if (generation.arch <= arch)
      target.sm_count = generation.sm_count;
  target.wgmma = arch == 90;
  target.clusters = arch >= 90;
  target.dependent_launches = arch >= 90;
  target.rastered_gemm_blocks = arch >= 90;
  return target;
}

} // namespace fusegen
