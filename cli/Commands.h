// The fusegen subcommands. Each returns the process exit code.
#pragma once

#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"
#include "fusegen/Interpreter.h"
#include "fusegen/Specialize.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fusegen::cli {

// The exit codes of every command (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitSpecError = 1; // diagnostics, or a failed run
inline constexpr int kExitUsage = 2;     // bad command line, unreadable or unwritable file

// Each command's options as parsed (CommandLine.cpp declares them to CLI11).
// The commands check the values themselves, so that an error names the form
// expected; an optional is an option whose presence counts even when given
// empty (`--fusion ''` names no fusion; it does not mean "the only one").
struct GenerateArgs {
  std::vector<std::string> specs;            // the positionals: exactly one is expected
  std::optional<std::string> output, header; // -o (stdout without it), -H
  std::vector<std::string> dims;             // each --dims: "N=128,M=64"
  std::string arch = "sm_90";
  std::string precision;      // "": each fusion's own
  std::string strict_product; // "": the generator's choice
  std::optional<std::string> gemm_block;
  std::string emit = "cuda";
  std::string dump_after;
};

struct CheckArgs {
  std::vector<std::string> specs;
  std::vector<std::string> dims;
  std::string dump_after;
};

struct PlanArgs {
  std::vector<std::string> specs;
  std::string fusion; // "": every fusion
  std::vector<std::string> dims;
  std::string strict_product; // "": the generator's choice
  std::string dump_after;
};

// `run` on the reference interpreter, or with --device on the GPU (the
// device's options need --device; CLI11 refuses them without it).
struct RunArgs {
  std::vector<std::string> specs;
  std::optional<std::string> fusion;
  std::vector<std::string> dims;
  std::string seed = "0";
  std::optional<std::string> inputs;
  bool device = false;
  // The reference run's.
  std::optional<std::string> save;
  std::string dump_after;
  // The device run's.
  bool compare = false;
  std::optional<std::string> expect;
  std::string precision, cache_dir, remote_cache, cache_key_file;
};

struct WarmupArgs {
  std::vector<std::string> specs;
  std::vector<std::string> dims; // each a list of values: N=128,1024
  std::string arch = "sm_90";
  std::string precision;
  std::string strict_product; // "": the generator's choice
  std::string jobs = "1";
  std::string cache_dir, remote_cache, cache_key_file;
};

struct CacheArgs {
  std::vector<std::string> words; // the action, and FILE for export and import
  std::string cache_dir, cache_key_file;
  std::optional<std::string> remote_cache;
};

// The commands; each returns the process exit code.
int generate_command(const GenerateArgs& args); // `fusegen [generate] SPEC -o kernels.cu ...`
int check_command(const CheckArgs& args);
int plan_command(const PlanArgs& args);
int run_command(const RunArgs& args); // --device: device_run_command
// The JIT runtime's commands (WarmupCommand.cpp, CacheCommand.cpp,
// DeviceRunCommand.cpp; RuntimeUnavailable.cpp in builds without NVRTC).
int warmup_command(const WarmupArgs& args);
int cache_command(const CacheArgs& args);
int device_run_command(const RunArgs& args);

// A spec loaded and compiled for a command; diagnostics already printed.
struct LoadedSpec {
  SourceManager sources;
  Module module;
};

// Reads and compiles `path`; prints diagnostics to stderr. Sets `exit_code`
// and returns null on failure.
std::unique_ptr<LoadedSpec> load_spec(const std::string& path, const std::string& dump_after, int& exit_code);

// The fusion named `name`, or every fusion when `name` is empty.
Result<std::vector<const Fusion*>> select_fusions(const Module& module, const std::string& name);

// Binds the dims of `dims` that `fusion` uses (all its symbols must be bound
// when `dims` is not empty) and specializes; without dims returns the
// fusion as is. Prints diagnostics and sets `exit_code` on failure.
std::optional<Fusion> specialize_for(const LoadedSpec& spec, const Fusion& fusion, const DimBindings& dims,
                                     int& exit_code);

// What planning or generation refused, for stderr: at its spec location
// (`file:line:col: error: ...`, the line and a caret) when it has one, else
// "fusegen<command>: error: ...".
std::string render_refusal(const LoadedSpec& spec, const std::string& command, const std::string& message,
                           SourceLoc loc, Severity severity = Severity::Error);

// Plans and generates every fusion of `spec` for sm_90 (no compiler run),
// specialized at `dims` when given: what `fusegen check` adds to the front
// end's checks, so that a spec that checks also generates. Returns the first
// refusal (message and location), or success.
Result<bool> generation_check(const LoadedSpec& spec, const DimBindings& dims);

// Parses "N=128,M=64" (possibly repeated) into bindings.
Result<DimBindings> parse_dims(const std::vector<std::string>& specs);

// Every name given with --dims is a dim of some fusion of the spec (a typo is
// an error in every command, as in run); prints the error for `command`
// ("" for generation, which has no command word).
bool dims_are_known(const LoadedSpec& spec, const std::vector<std::string>& names, const std::string& command);
bool dims_are_known(const LoadedSpec& spec, const DimBindings& dims, const std::string& command);

// A specialized value's shape as numbers.
std::vector<int64_t> concrete_shape(const Value& value);

// Reads DIR/<name>.npy for each of `values` (name and concrete shape); the
// error names the file, or the expected and actual shapes.
Result<std::map<std::string, HostTensor>> load_tensors(const std::string& dir,
                                                       const std::vector<std::pair<std::string, const Value*>>& values);

// --inputs DIR: every argument of the specialized fusion from DIR/<name>.npy.
Result<std::map<std::string, HostTensor>> load_arguments(const std::string& dir, const Fusion& concrete);

// The reference interpreter as the commands run it: on every hardware thread,
// and, once a run has taken a second, a line on stderr as each op starts
// (a large batch takes minutes; issue 26).
InterpreterOptions reference_options(const std::string& command);

} // namespace fusegen::cli
