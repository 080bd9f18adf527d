// Running the built `fusegen` binary (FUSEGEN_CLI_PATH) as a user does, for
// the command-line tests: its exit code, stdout and stderr.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fusegen::testing {

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const;

private:
  std::filesystem::path path_;
};

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs fusegen with `args` (stdin empty).
CliResult run_cli(const std::vector<std::string>& args);

std::string read_file(const std::filesystem::path& path);
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace fusegen::testing
