// Helpers for the runtime tests: temporary directories, environment
// variables for a scope, loading specs, running the CLI, collecting
// warnings, comparing device results with the reference interpreter.
#pragma once

#include "fusegen/Diagnostics.h"
#include "fusegen/HostTensor.h"
#include "fusegen/IR.h"
#include "fusegen/Runtime.h"
#include "fusegen/Specialize.h"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fusegen::testing {

// A path under the source tree.
std::string source_path(const std::string& relative);
std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);

// A fresh private directory, removed with everything in it.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

// Sets (or, with nullopt, unsets) an environment variable until destroyed.
class ScopedEnv {
public:
  ScopedEnv(std::string name, const std::optional<std::string>& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  std::string name_;
  std::optional<std::string> old_;
};

struct LoadedModule {
  SourceManager sources;
  Module module;
  const Fusion& fusion(size_t i = 0) const { return module.fusions.at(i); }
};
// Fails the test (and returns null) on spec errors.
std::unique_ptr<LoadedModule> load_module(const std::string& text, const std::string& name = "test.fg");

// Runs a shell command; stdout and stderr together.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};
CommandResult run_command(const std::string& command);

// The message of the RuntimeError that `run` throws, or "(no error)".
std::string thrown_message(const std::function<void()>& run);
std::string cli_path();

// Collects warnings from a runtime's warning sink.
class WarningLog {
public:
  std::function<void(const std::string&)> sink();
  std::vector<std::string> lines() const;
  size_t count() const { return lines().size(); }

private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

// The KernelBench seed specs, both shape sets, as paths relative to the
// source tree (specs/kernelbench/*.fg, then specs/kernelbench/small/*.fg).
std::vector<std::string> kernelbench_specs();

// A small elementwise-only fusion (one kernel, no workspace) with a
// symbolic N, used where any fusion will do.
extern const char* const kElementwiseSpec;

// Elementwise comparison as `fusegen run --compare` does it: within
// atol + rtol * |ref|, NaN only where the reference is NaN.
struct Comparison {
  double max_abs = 0;
  double max_rel = 0;
  size_t mismatches = 0;
  size_t first_mismatch = 0;
  std::string summary() const;
};
Comparison compare_to_reference(const std::vector<float>& got, const HostTensor& want, double atol, double rtol);

} // namespace fusegen::testing
