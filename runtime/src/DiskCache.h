// The on-disk cache of compiled kernels: one entry file per key (format in
// CacheEntry.h), written atomically (temporary file, fsync, rename) so that
// concurrent processes never see a partial entry. Reading never trusts a
// file: anything but a valid entry for exactly this key is reported as Bad
// for the caller to warn about, delete and rebuild. A writer killed between
// creating its temporary file and the rename leaves that file behind; the
// first store of each DiskCache removes such files once they are old enough
// that no live writer can still own them.
#pragma once

#include "CacheEntry.h"
#include "CacheKey.h"

#include "fusegen/Result.h"

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace fusegen::runtime {

// Temporary files are named ".tmp-<entry name>-XXXXXX" in the cache directory.
inline constexpr std::string_view kTempPrefix = ".tmp-";
inline constexpr std::string_view kEntrySuffix = ".fgc";
// The names fusegen gives files in a cache directory: "<64 hex>.fgc" and
// ".tmp-<64 hex>.fgc-XXXXXX" (mkostemp's six characters). Only files so named
// are ever removed, so that a cache pointed at the wrong directory deletes
// none of a user's files (".tmp-notes" included).
bool is_entry_name(std::string_view name);
bool is_temp_name(std::string_view name);

// A write takes milliseconds; a temporary file this old belongs to a writer
// that died. (Should one still be alive, its rename fails and it warns.)
inline constexpr std::chrono::seconds kStaleTempAge{3600};

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
  // Errors name the directory and the reason but not the entry, so that a
  // full disk or read-only directory is one warning however many kernels
  // fail to be stored.
  Status store(const CacheKey& key, const CacheEntry& entry) const { return store_as(key.file_name(), entry); }
  // The same under an entry file name (the SHA-256 of the entry's key
  // material + ".fgc"), for entries whose key is known only as material.
  Status store_as(const std::string& name, const CacheEntry& entry) const;
  // Removes an entry (a file, or whatever else sits at its name); best effort.
  void remove(const std::string& file_name) const;
  // Deletes this user's temporary files (regular files named kTempPrefix...)
  // last modified more than `max_age` ago; returns how many. Best effort.
  size_t remove_stale_temp_files(std::chrono::seconds max_age = kStaleTempAge) const;

  // Reads a file of the cache directory whole (regular files only).
  static Result<std::string> read_entry_file(const std::string& path);

private:
  std::string dir_;
  mutable std::once_flag swept_; // stale temporary files, at the first store
};

} // namespace fusegen::runtime
