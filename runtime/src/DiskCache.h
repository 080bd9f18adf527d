// The on-disk cache of compiled kernels: one entry file per key (format in
// CacheEntry.h), written atomically (temporary file, fsync, rename) so that
// concurrent processes never see a partial entry. Reading never trusts a
// file: anything but a valid entry for exactly this key is reported as Bad
// for the caller to warn about, delete and rebuild.
#pragma once

#include "CacheEntry.h"
#include "CacheKey.h"

#include "fusegen/Result.h"

#include <string>
#include <vector>

namespace fusegen::runtime {

// Temporary files are named ".tmp-<entry name>-XXXXXX" in the cache directory.
inline constexpr std::string_view kTempPrefix = ".tmp-";
inline constexpr std::string_view kEntrySuffix = ".fgc";

class DiskCache {
public:
  // `dir` must have passed prepare_cache_dir.
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string path(const std::string& file_name) const { return dir_ + "/" + file_name; }

  enum class Lookup { Hit, Miss, Bad };
  struct Loaded {
    Lookup status = Lookup::Miss;
    CacheEntry entry;    // for Hit
    std::string problem; // for Bad
  };
  Loaded load(const CacheKey& key) const;
  Status store(const CacheKey& key, const CacheEntry& entry) const;
  // Removes an entry (a file, or whatever else sits at its name); best effort.
  void remove(const std::string& file_name) const;

  // Reads a file of the cache directory whole (regular files only).
  static Result<std::string> read_entry_file(const std::string& path);

private:
  std::string dir_;
};

} // namespace fusegen::runtime
