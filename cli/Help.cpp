#include "Help.h"

#include <CLI/CLI.hpp>

namespace fusegen::cli {
namespace {

// Each command's synopsis and what it does, shown by `fusegen COMMAND
// --help` and, all together, by `fusegen --help`.
struct CommandHelp {
  const char* name;
  const char* section; // the heading it is listed under in the full help
  const char* text;
};

constexpr CommandHelp kCommands[] = {
    {"generate", "Generate CUDA (no GPU needed):",
     R"(  fusegen [generate] SPEC -o kernels.cu [-H kernels.h] [--dims N=1024] [--arch sm_90]
         [--precision strict|tf32] [--strict-product 3xtf32|fp16x3]
         [--gemm-block 128x64] [--emit=ir|plan|cuda]
      One self-contained .cu with every fusion of SPEC: extern "C" kernels
      and host launchers fusegen_<fusion>_launch(...) (define
      FUSEGEN_DEVICE_ONLY to drop them); -H writes a header declaring the
      launchers and fusegen_<fusion>_workspace_size(...). --dims bakes sizes
      in; without it symbolic dims are runtime arguments. --gemm-block forces
      every GEMM kernel's block (128x256, 128x128, 128x64 or 64x64) instead of the
      heuristic's, with :2, :4 or :8 a split-K over that many blocks (sm_90
      clusters; e.g. 64x64:8). --arch defaults to sm_90, whose code uses
      sm_90a features (wgmma, clusters): compile it with nvcc -arch=sm_90a, as
      the file's first lines say; an #error stops a compilation for any other
      arch (or without -arch). --emit stops early. --strict-product fp16x3
      multiplies strict GEMMs on fp16 tensor cores where the target can
      (sm_90a wgmma; docs/kernels-gemm.md "FP16x3"); the default is 3xtf32.
)"},
    {"check", "Commands:", R"(  check SPEC [--dims N=128] [--dump-after=PASS|all]
      Parse and verify a spec; print each fusion's signature, inferred output
      shapes and fingerprint. Also plans and generates (no compiler run):
      what generation refuses is an error with --dims, a warning without.
)"},
    {"run", "Commands:", R"(  run SPEC [--fusion NAME] --dims N=128[,M=64] [--seed S | --inputs DIR] [--reference]
         [--save DIR]
      Run a fusion on random inputs (or DIR/<name>.npy) with the CPU
      reference interpreter (float64, on every hardware thread) and print
      each output's shape, checksum and first values. --save DIR writes
      inputs (float32) and outputs (float64) as .npy files.
  run SPEC --device [--fusion NAME] --dims N=128 [--seed S] [--compare]
         [--precision strict|tf32] [--cache-dir D] [--remote-cache URL]
      Run a fusion on GPU 0 through the JIT runtime with the same random
      inputs; --compare checks every output and state tensor against the
      reference interpreter (|gpu - ref| <= atol + rtol*|ref|, 1e-4 strict,
      1e-2 tf32) and exits 1 on a mismatch. --inputs DIR loads the tensors
      from DIR/<name>.npy; --expect DIR compares with DIR/<name>.npy instead
      of the reference.
)"},
    {"plan", "Commands:", R"(  plan SPEC [--fusion NAME] [--dims N=1024] [--strict-product 3xtf32|fp16x3]
      Print the fusion plan: kernels, the ops each holds, the buffers between
      them and their sizes, and why ops were or were not fused; then each
      launch's grid, block, shared memory and variant (blocks, products).
)"},
    {"warmup",
     "JIT kernel cache (no GPU needed):", R"(  warmup SPEC --dims N=128,1024 [--arch sm_90] [--precision strict|tf32]
         [--strict-product 3xtf32|fp16x3] [--jobs 4] [--cache-dir D]
         [--remote-cache URL] [--cache-key-file K]
      Compile every fusion of SPEC for each binding (N=128,1024 is two
      values of N; several dims give every combination) into the disk cache,
      so JIT calls at those shapes on an sm_90 GPU compile nothing. With a
      remote cache (redis://host:port[/db], or $FUSEGEN_REMOTE_CACHE) and the
      fleet key (K, or $FUSEGEN_CACHE_KEY_FILE), entries come from it and go
      to it, signed.
)"},
    {"cache", "JIT kernel cache (no GPU needed):", R"(  cache stats|verify|clear [--cache-dir D]
      Summarize, check (every entry's checksum and key) or empty the cache.
      The directory is --cache-dir, $FUSEGEN_CACHE_DIR, $XDG_CACHE_HOME/fusegen
      or ~/.cache/fusegen; FUSEGEN_CACHE=0 turns the cache off for runs.
  cache export|import FILE [--cache-dir D] [--cache-key-file K]
         [--remote-cache URL]
      Write every valid entry of the cache to one archive, each signed with
      the fleet key (K, or $FUSEGEN_CACHE_KEY_FILE), or check and take in
      such an archive (into the remote cache too with --remote-cache).
)"},
};

constexpr const char* kHeader = R"(usage: fusegen <command> [options]
       fusegen SPEC -o kernels.cu [-H kernels.h] [options]
)";

constexpr const char* kOptions = R"(
Options:
  --help       show this help (COMMAND --help: that command's)
  --version    show the version
)";

// The table of Commands.h's kExit* codes, which docs/cli.md repeats.
constexpr const char* kExitCodes = R"(
Exit codes (every command): 0 success; 1 errors in the spec, a refused
generation or a failed run; 2 a bad command line, or a file that cannot be
read or written (an output that would overwrite the spec is refused).
)";

const CommandHelp* find_command(const std::string& name) {
  for (const CommandHelp& command : kCommands)
    if (name == command.name)
      return &command;
  return nullptr;
}

// A command's synopsis as typed, "usage:\n  fusegen check SPEC ..." (the
// full help lists it under "fusegen").
std::string command_usage(const CommandHelp& command) {
  std::string text = std::string("\n") + command.text;
  const std::string line_start = std::string("\n  ") + command.name + " ";
  for (size_t at = text.find(line_start); at != std::string::npos; at = text.find(line_start, at + 1))
    text.insert(at + 3, "fusegen ");
  return "usage:" + text;
}

// CLI11's layout (option groups) between our synopsis and the exit codes;
// the spec positional is left out, as the synopsis names it.
class Formatter : public CLI::Formatter {
public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    if (app->get_parent() == nullptr)
      return full_usage();
    std::string text = CLI::Formatter::make_help(app, std::move(name), mode);
    for (size_t at = text.find("\n\n\n"); at != std::string::npos; at = text.find("\n\n\n"))
      text.erase(at, 1); // CLI11 puts two blank lines between groups
    return text;
  }
  // The value's placeholder only: the groups say which options go with
  // --device, where CLI11 would add "Needs: --device" to each.
  std::string make_option_opts(const CLI::Option* option) const override {
    return option->get_option_text().empty() ? "" : " " + option->get_option_text();
  }
  std::string make_description(const CLI::App*) const override { return ""; }
  std::string make_usage(const CLI::App* app, std::string) const override {
    const CommandHelp* command = find_command(app->get_name());
    return command ? command_usage(*command) : "usage: fusegen " + app->get_name() + " [options]\n";
  }
  std::string make_footer(const CLI::App*) const override { return kExitCodes + 1; }
};

} // namespace

std::string full_usage() {
  std::string text = kHeader;
  const char* section = "";
  for (const CommandHelp& command : kCommands) {
    if (std::string(section) != command.section) {
      section = command.section;
      text += std::string("\n") + section + "\n";
    }
    text += command.text;
  }
  return text + kOptions + kExitCodes;
}

std::shared_ptr<CLI::FormatterBase> help_formatter() { return std::make_shared<Formatter>(); }

} // namespace fusegen::cli
