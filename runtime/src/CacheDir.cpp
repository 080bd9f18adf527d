#include "CacheDir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace fusegen {

CacheLocation cache_location(const std::string& explicit_dir) {
  CacheLocation where;
  const char* switch_value = std::getenv("FUSEGEN_CACHE");
  if (switch_value && std::string(switch_value) == "0") {
    where.reason = "turned off by FUSEGEN_CACHE=0";
    return where;
  }
  auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
  };
  if (!explicit_dir.empty()) {
    where.dir = explicit_dir;
    where.reason = "given explicitly";
  } else if (std::string dir = env("FUSEGEN_CACHE_DIR"); !dir.empty()) {
    where.dir = dir;
    where.reason = "from FUSEGEN_CACHE_DIR";
  } else if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && xdg[0] == '/') {
    where.dir = xdg + "/fusegen";
    where.reason = "from XDG_CACHE_HOME";
  } else if (std::string home = env("HOME"); !home.empty()) {
    where.dir = home + "/.cache/fusegen";
    where.reason = "the default under HOME";
  } else {
    where.reason = "no FUSEGEN_CACHE_DIR, XDG_CACHE_HOME or HOME to put it in";
    return where;
  }
  where.enabled = true;
  return where;
}

namespace runtime {
namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// mkdir -p with 0700 for every directory it makes.
Status create_private_dirs(const std::filesystem::path& path) {
  std::filesystem::path partial;
  for (const std::filesystem::path& part : path) {
    partial /= part;
    if (partial == partial.root_path())
      continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return Error{"cannot create " + partial.string() + ": " + std::strerror(errno)};
  }
  return Status::success();
}

} // namespace

Status prepare_cache_dir(const std::string& path, bool create) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno != ENOENT || !create)
      return Error{path + ": " + std::strerror(errno)};
    if (Status made = create_private_dirs(path); !made)
      return made;
    if (::stat(path.c_str(), &info) != 0)
      return Error{path + ": " + std::strerror(errno)};
  }
  if (!S_ISDIR(info.st_mode))
    return Error{path + " is not a directory"};
  if (info.st_uid != ::geteuid())
    return Error{path + " is owned by uid " + std::to_string(info.st_uid) + ", not by this user (uid " +
                 std::to_string(::geteuid()) + ")"};
  if (info.st_mode & (S_IWGRP | S_IWOTH))
    return Error{path + " is writable by " + std::string(info.st_mode & S_IWOTH ? "everyone" : "its group") +
                 " (mode " + octal_mode(info.st_mode) + "); use chmod 700"};
  return Status::success();
}

} // namespace runtime
} // namespace fusegen
