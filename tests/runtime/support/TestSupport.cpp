#include "support/TestSupport.h"

#include "fusegen/Frontend.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fusegen::testing {

const char* const kElementwiseSpec = R"(# A one-kernel elementwise fusion.
fusion scale_relu {
  input x : f32[N, 64]
  param s : f32[64]
  h = relu(x * s)
  output y = h + 1.0
}
)";

std::string source_path(const std::string& relative) { return std::string(FUSEGEN_SOURCE_DIR) + "/" + relative; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "fusegen-test-XXXXXX").string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (!mkdtemp(name.data()))
    ADD_FAILURE() << "mkdtemp failed";
  path_ = name.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
  std::filesystem::remove_all(path_, ec);
}

ScopedEnv::ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str()))
    old_ = old;
  if (value)
    setenv(name_.c_str(), value->c_str(), 1);
  else
    unsetenv(name_.c_str());
}

ScopedEnv::~ScopedEnv() {
  if (old_)
    setenv(name_.c_str(), old_->c_str(), 1);
  else
    unsetenv(name_.c_str());
}

std::unique_ptr<LoadedModule> load_module(const std::string& text, const std::string& name) {
  auto loaded = std::make_unique<LoadedModule>();
  uint32_t file = loaded->sources.add_buffer(name, text);
  Diagnostics diags;
  std::optional<Module> module = compile_spec(loaded->sources, file, diags);
  if (!module) {
    ADD_FAILURE() << diags.render(loaded->sources);
    return nullptr;
  }
  loaded->module = std::move(*module);
  return loaded;
}

std::string thrown_message(const std::function<void()>& run) {
  try {
    run();
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "(no error)";
}

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
    result.output.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string cli_path() { return FUSEGEN_CLI_PATH; }

std::function<void(const std::string&)> WarningLog::sink() {
  return [this](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    lines_.push_back(line);
  };
}

std::vector<std::string> WarningLog::lines() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lines_;
}

std::vector<std::string> kernelbench_specs() {
  std::vector<std::string> specs;
  for (const char* dir : {"specs/kernelbench", "specs/kernelbench/small"}) {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(source_path(dir)))
      if (entry.path().extension() == ".fg")
        found.push_back(std::string(dir) + "/" + entry.path().filename().string());
    std::sort(found.begin(), found.end());
    specs.insert(specs.end(), found.begin(), found.end());
  }
  return specs;
}

std::string Comparison::summary() const {
  char text[160];
  std::snprintf(text, sizeof text, "max_abs_err=%.3g max_rel_err=%.3g mismatches=%zu (first at %zu)", max_abs, max_rel,
                mismatches, first_mismatch);
  return text;
}

Comparison compare_to_reference(const std::vector<float>& got, const HostTensor& want, double atol, double rtol) {
  Comparison c;
  if (got.size() != want.data.size()) {
    c.mismatches = std::max(got.size(), want.data.size());
    return c;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], r = want.data[i];
    bool ok = false;
    if (std::isnan(r) || std::isnan(g)) {
      ok = std::isnan(r) && std::isnan(g);
    } else if (std::isinf(r) || std::isinf(g)) {
      ok = g == r;
    } else {
      double diff = std::fabs(g - r);
      c.max_abs = std::max(c.max_abs, diff);
      if (r != 0)
        c.max_rel = std::max(c.max_rel, diff / std::fabs(r));
      ok = diff <= atol + rtol * std::fabs(r);
    }
    if (!ok && c.mismatches++ == 0)
      c.first_mismatch = i;
  }
  return c;
}

} // namespace fusegen::testing
