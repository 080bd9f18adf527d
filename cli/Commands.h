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

// Documented exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitSpecError = 1; // diagnostics, or a failed run
inline constexpr int kExitUsage = 2;     // bad command line, unreadable or unwritable file

int check_command(const std::vector<std::string>& args);
int run_command(const std::vector<std::string>& args);
int plan_command(const std::vector<std::string>& args);
// `fusegen SPEC -o kernels.cu ...` (no subcommand word).
int generate_command(const std::vector<std::string>& args);
// The JIT runtime's commands (WarmupCommand.cpp, CacheCommand.cpp,
// DeviceRunCommand.cpp; RuntimeUnavailable.cpp in builds without NVRTC).
int warmup_command(const std::vector<std::string>& args);
int cache_command(const std::vector<std::string>& args);
// `fusegen run ... --device`.
int device_run_command(const std::vector<std::string>& args);

// A spec loaded and compiled for a command; diagnostics already printed.
struct LoadedSpec {
  SourceManager sources;
  Module module;
};

// Reads and compiles `path`; prints diagnostics to stderr. Sets `exit_code`
// and returns null on failure.
std::unique_ptr<LoadedSpec> load_spec(const std::string& path, const std::string& dump_after,
                                      int& exit_code);

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
