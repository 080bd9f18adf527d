// The disk cache directory: where it is, what is in it, and clearing it
// (`fusegen cache stats|verify|clear`). Entries are <sha256 of key>.fgc files
// (format in runtime/src/CacheEntry.h).
#pragma once

#include "fusegen/RemoteCacheOptions.h"
#include "fusegen/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusegen {

struct CacheLocation {
  bool enabled = false;
  std::string dir;
  std::string reason; // where the choice came from, or why there is no cache
};

// `explicit_dir` if given, else $FUSEGEN_CACHE_DIR, else $XDG_CACHE_HOME/fusegen,
// else ~/.cache/fusegen; FUSEGEN_CACHE=0 turns the disk cache off.
CacheLocation cache_location(const std::string& explicit_dir = "");

struct CacheEntryInfo {
  std::string file; // file name in the directory
  uint64_t bytes = 0;
  bool ok = false;
  std::string problem; // when not ok
  // From the entry's key, when it could be read.
  std::string fusion, dims, target, precision, fusegen_version, nvrtc_version;
  bool ptx = false;
};

struct CacheContents {
  std::string dir;
  std::vector<CacheEntryInfo> entries; // sorted by file name
  size_t temp_files = 0;               // left over from interrupted writes
  uint64_t total_bytes = 0;
};

// Reads and verifies every entry (structure, checksum, and that its name is
// the hash of its key). Errors if the directory is missing or unsafe.
Result<CacheContents> inspect_cache(const std::string& dir);

struct CacheClearReport {
  size_t removed = 0;            // entry and temporary files
  std::vector<std::string> left; // names like an entry's that are not files (e.g. directories), kept
};

// Deletes every entry file and fusegen temporary file, nothing else: only
// regular files (or links, unlinked) named <64 hex>.fgc or
// .tmp-<64 hex>.fgc-XXXXXX.
Result<CacheClearReport> clear_cache(const std::string& dir);

struct ArchiveReport {
  size_t entries = 0;               // exported, or imported into the disk cache
  size_t published = 0;             // imported into the remote cache as well
  uint64_t remote_failures = 0;     // remote cache operations that failed
  std::vector<std::string> skipped; // "what: why" for each entry left out or refused
};

// `fusegen cache export`: every valid entry of the disk cache `dir`, signed
// with the fleet key (`key_file`, else $FUSEGEN_CACHE_KEY_FILE), in one file
// (written atomically). Bad entries are skipped and listed.
Result<ArchiveReport> export_cache(const std::string& dir, const std::string& archive, const std::string& key_file);

// `fusegen cache import`: every entry of `archive` whose signature under the
// fleet key holds and that is a valid entry goes into the disk cache `dir`
// (created if missing) and, with `remote` options, into the remote cache as
// well; the others are refused and listed. Errors: no key, not an archive,
// a truncated archive, an unusable directory or remote cache.
Result<ArchiveReport> import_cache(const std::string& archive, const std::string& dir, const std::string& key_file,
                                   const RemoteCacheOptions* remote = nullptr);

} // namespace fusegen
