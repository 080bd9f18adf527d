#include "fusegen/CacheAdmin.h"

#include "CacheDir.h"
#include "CacheEntry.h"
#include "CacheKey.h"
#include "DiskCache.h"

#include "fusegen/Sha256.h"

#include <algorithm>
#include <filesystem>

namespace fusegen {
namespace {

namespace fs = std::filesystem;
using runtime::kEntrySuffix;
using runtime::kTempPrefix;

bool is_entry_name(const std::string& name) {
  return name.size() == 64 + kEntrySuffix.size() && name.ends_with(kEntrySuffix) && name[0] != '.';
}

bool is_temp_name(const std::string& name) { return name.starts_with(kTempPrefix); }

CacheEntryInfo inspect_entry(const fs::directory_entry& file) {
  CacheEntryInfo info;
  info.file = file.path().filename().string();
  std::error_code ec;
  info.bytes = file.is_regular_file(ec) ? file.file_size(ec) : 0;
  Result<std::string> bytes = runtime::DiskCache::read_entry_file(file.path().string());
  if (!bytes) {
    info.problem = bytes.error();
    return info;
  }
  Result<runtime::CacheEntry> entry = runtime::decode_entry(bytes.value());
  if (!entry) {
    info.problem = entry.error();
    return info;
  }
  const std::string& key = entry.value().key_material;
  info.fusion = runtime::key_field(key, "fusion");
  info.dims = runtime::key_field(key, "dims");
  info.target = runtime::key_field(key, "target");
  info.precision = runtime::key_field(key, "precision");
  info.fusegen_version = runtime::key_field(key, "fusegen");
  info.nvrtc_version = runtime::key_field(key, "nvrtc");
  info.ptx = entry.value().ptx;
  if (sha256_hex(key) + std::string(kEntrySuffix) != info.file) {
    info.problem = "file name is not the hash of the entry's key";
    return info;
  }
  info.ok = true;
  return info;
}

} // namespace

Result<CacheContents> inspect_cache(const std::string& dir) {
  if (Status usable = runtime::prepare_cache_dir(dir, false); !usable)
    return Error{usable.error()};
  CacheContents contents;
  contents.dir = dir;
  std::error_code ec;
  for (const fs::directory_entry& file : fs::directory_iterator(dir, ec)) {
    std::string name = file.path().filename().string();
    if (is_temp_name(name)) {
      ++contents.temp_files;
    } else if (is_entry_name(name)) {
      contents.entries.push_back(inspect_entry(file));
      contents.total_bytes += contents.entries.back().bytes;
    }
  }
  if (ec)
    return Error{"cannot list " + dir + ": " + ec.message()};
  std::sort(contents.entries.begin(), contents.entries.end(),
            [](const CacheEntryInfo& a, const CacheEntryInfo& b) { return a.file < b.file; });
  return contents;
}

Result<size_t> clear_cache(const std::string& dir) {
  if (Status usable = runtime::prepare_cache_dir(dir, false); !usable)
    return Error{usable.error()};
  std::vector<fs::path> doomed;
  std::error_code ec;
  for (const fs::directory_entry& file : fs::directory_iterator(dir, ec)) {
    std::string name = file.path().filename().string();
    if (is_temp_name(name) || is_entry_name(name))
      doomed.push_back(file.path());
  }
  if (ec)
    return Error{"cannot list " + dir + ": " + ec.message()};
  for (const fs::path& path : doomed) {
    fs::remove_all(path, ec);
    if (ec)
      return Error{"cannot remove " + path.string() + ": " + ec.message()};
  }
  return doomed.size();
}

} // namespace fusegen
