// fusegen: kernel-fusion compiler command line.
#include "Commands.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* kUsage = R"(usage: fusegen <command> [options]
       fusegen SPEC -o kernels.cu [-H kernels.h] [options]

Generate CUDA (no GPU needed):
  fusegen SPEC -o kernels.cu [-H kernels.h] [--dims N=1024] [--arch sm_90]
         [--precision strict|tf32] [--gemm-block 128x64] [--emit=ir|plan|cuda]
      One self-contained .cu with every fusion of SPEC: extern "C" kernels
      and host launchers fusegen_<fusion>_launch(...) (define
      FUSEGEN_DEVICE_ONLY to drop them); -H writes a header declaring the
      launchers and fusegen_<fusion>_workspace_size(...). --dims bakes sizes
      in; without it symbolic dims are runtime arguments. --gemm-block forces
      every GEMM kernel's block (128x256, 128x128, 128x64 or 64x64) instead of the
      heuristic's, with :2, :4 or :8 a split-K over that many blocks (sm_90
      clusters; e.g. 64x64:8). Code for --arch sm_90 may use clusters: compile
      it for sm_90 or later. --emit stops early.

Commands:
  check SPEC [--dims N=128] [--dump-after=PASS|all]
      Parse and verify a spec; print each fusion's signature, inferred output
      shapes and fingerprint. Also plans and generates (no compiler run):
      what generation refuses is an error with --dims, a warning without.
  run SPEC [--fusion NAME] --dims N=128[,M=64] [--seed S] [--reference] [--save DIR]
      Run a fusion on random inputs with the CPU reference interpreter
      (float64) and print each output's shape, checksum and first values.
      --save DIR writes inputs (float32) and outputs (float64) as .npy files.
  run SPEC --device [--fusion NAME] --dims N=128 [--seed S] [--compare]
         [--precision strict|tf32] [--cache-dir D]
      Run a fusion on GPU 0 through the JIT runtime with the same random
      inputs; --compare checks every output and state tensor against the
      reference interpreter (|gpu - ref| <= atol + rtol*|ref|, 1e-4 strict,
      1e-2 tf32) and exits 1 on a mismatch. --inputs DIR loads the tensors
      from DIR/<name>.npy; --expect DIR compares with DIR/<name>.npy instead
      of the reference.

  plan SPEC [--fusion NAME] [--dims N=1024]
      Print the fusion plan: kernels, the ops each holds, the buffers between
      them and their sizes, and why ops were or were not fused.

JIT kernel cache (no GPU needed):
  warmup SPEC --dims N=128,1024 [--arch sm_90] [--precision strict|tf32]
         [--jobs 4] [--cache-dir D]
      Compile every fusion of SPEC for each binding (N=128,1024 is two
      values of N; several dims give every combination) into the disk cache,
      so JIT calls at those shapes on an sm_90 GPU compile nothing.
  cache stats|verify|clear [--cache-dir D]
      Summarize, check (every entry's checksum and key) or empty the cache.
      The directory is --cache-dir, $FUSEGEN_CACHE_DIR, $XDG_CACHE_HOME/fusegen
      or ~/.cache/fusegen; FUSEGEN_CACHE=0 turns the cache off for runs.

Options:
  --help       show this help
  --version    show the version

Exit codes: 0 success, 1 errors in the spec or a failed run, 2 bad command
line or unreadable file.
)";

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return fusegen::cli::kExitUsage;
  }
  const std::string command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return fusegen::cli::kExitOk;
  }
  if (command == "--version") {
    std::cout << "fusegen " << FUSEGEN_VERSION << "\n";
    return fusegen::cli::kExitOk;
  }
  if (command == "check")
    return fusegen::cli::check_command(rest);
  if (command == "run") {
    bool on_device = std::find(rest.begin(), rest.end(), "--device") != rest.end();
    return on_device ? fusegen::cli::device_run_command(rest) : fusegen::cli::run_command(rest);
  }
  if (command == "warmup")
    return fusegen::cli::warmup_command(rest);
  if (command == "cache")
    return fusegen::cli::cache_command(rest);
  if (command == "plan")
    return fusegen::cli::plan_command(rest);
  // `fusegen SPEC -o kernels.cu`: anything that is not a command is a spec file.
  if (command.empty() || command[0] != '-')
    if (command.find('.') != std::string::npos || command.find('/') != std::string::npos)
      return fusegen::cli::generate_command(args);
  std::cerr << "fusegen: error: unknown command '" << command << "' (see fusegen --help)\n";
  return fusegen::cli::kExitUsage;
}
