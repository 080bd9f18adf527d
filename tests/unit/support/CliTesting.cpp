#include "support/CliTesting.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fusegen::testing {
namespace fs = std::filesystem;

namespace {

// Single-quotes an argument for /bin/sh.
std::string shell_quote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

} // namespace

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ =
      fs::temp_directory_path() / ("fusegen_cli_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  fs::path file = path_ / name;
  std::ofstream(file, std::ios::binary) << text;
  return file.string();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

CliResult run_cli(const std::vector<std::string>& args) {
  TempDir capture;
  fs::path out = capture.path() / "stdout", err = capture.path() / "stderr";
  std::string command = shell_quote(FUSEGEN_CLI_PATH);
  for (const std::string& arg : args)
    command += " " + shell_quote(arg);
  command += " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string()) + " </dev/null";
  int status = std::system(command.c_str());
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(out);
  result.err = read_file(err);
  return result;
}

} // namespace fusegen::testing
