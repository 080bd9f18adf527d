#include "OutputFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fusegen::cli {
namespace fs = std::filesystem;

namespace {

// The same file: by identity where both exist, else by absolute path.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec))
    return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(fs::absolute(a, ec), ec) == fs::weakly_canonical(fs::absolute(b, ec), ec);
}

} // namespace

Status write_output_file(const std::string& path, const std::string& text, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs)
    if (same_file(path, input))
      return Error{"refusing to write " + path + ": it is the input " + input + " (choose another output file)"};
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return Error{"cannot write " + path + ": it is a directory"};
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  errno = 0;
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  if (!out)
    return Error{"cannot write " + path + ": " + std::strerror(errno != 0 ? errno : EIO)};
  out << text;
  out.close();
  if (!out) {
    const int error = errno != 0 ? errno : EIO;
    std::remove(temporary.c_str());
    return Error{"cannot write " + path + ": " + std::strerror(error)};
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    std::remove(temporary.c_str());
    return Error{"cannot write " + path + ": " + ec.message()};
  }
  return Status::success();
}

} // namespace fusegen::cli
