#include "fusegen/Target.h"

namespace fusegen {
namespace {

struct Generation {
  int arch;
  int sm_count;
  int max_shared_bytes_per_block; // cudaDevAttrMaxSharedMemoryPerBlockOptin
};

constexpr int kKiB = 1024;

// The largest generation at or below a target's arch gives its SM count and
// shared memory (8.6 and 8.9 parts are workstation GPUs; their counts vary
// by model; 8.7 takes 8.6's smaller shared memory, which is safe).
constexpr Generation kGenerations[] = {{80, 108, 163 * kKiB}, {86, 84, 99 * kKiB},    {89, 128, 99 * kKiB},
                                       {90, 132, 227 * kKiB}, {100, 148, 227 * kKiB}, {120, 170, 99 * kKiB}};

} // namespace

std::string Target::compile_arch() const { return "sm_" + std::to_string(arch) + (wgmma ? "a" : ""); }

Result<Target> target_for_arch(int arch) {
  if (arch < 80)
    return Error{"sm_" + std::to_string(arch) + " is not supported (fusegen targets sm_80 and newer)"};
  Target target;
  target.arch = arch;
  for (const Generation& generation : kGenerations)
    if (generation.arch <= arch) {
      target.sm_count = generation.sm_count;
      target.max_shared_bytes_per_block = generation.max_shared_bytes_per_block;
    }
  target.wgmma = arch == 90;
  target.fp16x3_products = target.wgmma;
  target.clusters = arch >= 90;
  target.dependent_launches = arch >= 90;
  target.rastered_gemm_blocks = arch >= 90;
  return target;
}

} // namespace fusegen
