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
using runtime::is_entry_name;
using runtime::is_temp_name;
using runtime::kEntrySuffix;

CacheEntryInfo inspect_entry(const fs::directory_entry& file) {
  CacheEntryInfo info;
  info.file = file.path().filename().string();
  std::error_code ec;
  // Not followed; read_entry_file reports a link, FIFO or directory in an
  // entry's place without reading from it.
  info.bytes = fs::is_regular_file(file.symlink_status(ec)) ? file.file_size(ec) : 0;
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
  if (Status usable = runtime::check_entry_matches_key(entry.value()); !usable) {
    info.problem = usable.error();
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

Result<CacheClearReport> clear_cache(const std::string& dir) {
  if (Status usable = runtime::prepare_cache_dir(dir, false); !usable)
    return Error{usable.error()};
  CacheClearReport report;
  std::vector<fs::path> doomed;
  std::error_code ec;
  for (const fs::directory_entry& file : fs::directory_iterator(dir, ec)) {
    std::string name = file.path().filename().string();
    if (!is_temp_name(name) && !is_entry_name(name))
      continue;
    // Files and links are unlinked (a link's target is untouched); anything
    // else under such a name was not made by fusegen and stays.
    std::error_code status_ec;
    const fs::file_status status = file.symlink_status(status_ec);
    if (!status_ec && (fs::is_regular_file(status) || fs::is_symlink(status)))
      doomed.push_back(file.path());
    else
      report.left.push_back(name);
  }
  if (ec)
    return Error{"cannot list " + dir + ": " + ec.message()};
  for (const fs::path& path : doomed) {
    if (!fs::remove(path, ec) && ec)
      return Error{"cannot remove " + path.string() + ": " + ec.message()};
    ++report.removed;
  }
  std::sort(report.left.begin(), report.left.end());
  return report;
}

} // namespace fusegen
