// `fusegen cache stats|verify|clear [--cache-dir D]`: the disk cache of
// compiled kernels. `fusegen cache export|import FILE [--cache-key-file K]
// [--remote-cache URL]`: a single archive of signed entries, for machines
// that cannot reach the fleet's remote cache.
#ifdef FUSEGEN_HAVE_RUNTIME
#include "Commands.h"

#include "fusegen/CacheAdmin.h"

#include <cstdio>
#include <iostream>
#include <map>

namespace fusegen::cli {
namespace {

std::string size_text(uint64_t bytes) {
  char text[64];
  if (bytes < 1024 * 1024)
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  else
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

std::string describe(const CacheEntryInfo& entry) {
  return entry.fusion + " " + entry.dims + " " + entry.target + (entry.ptx ? " (PTX)" : "") + " " + entry.precision +
         " fusegen " + entry.fusegen_version + " nvrtc " + entry.nvrtc_version;
}

int stats(const CacheContents& contents) {
  size_t bad = 0;
  std::map<std::string, size_t> by_target;
  for (const CacheEntryInfo& entry : contents.entries) {
    if (!entry.ok)
      ++bad;
    else
      ++by_target[entry.target + (entry.ptx ? " (PTX)" : "") + ", fusegen " + entry.fusegen_version + ", nvrtc " +
                  entry.nvrtc_version];
  }
  std::cout << "entries: " << contents.entries.size() << " (" << size_text(contents.total_bytes) << "), " << bad
            << " bad, " << contents.temp_files << " temporary files\n";
  for (const auto& [target, count] : by_target)
    std::cout << "  " << target << ": " << count << (count == 1 ? " entry" : " entries") << "\n";
  return kExitOk;
}

int verify(const CacheContents& contents) {
  size_t bad = 0;
  for (const CacheEntryInfo& entry : contents.entries) {
    if (entry.ok) {
      std::cout << "ok   " << entry.file << "  " << describe(entry) << "\n";
    } else {
      ++bad;
      std::cout << "bad  " << entry.file << "  " << entry.problem << "\n";
    }
  }
  std::cout << contents.entries.size() - bad << " ok, " << bad << " bad"
            << (bad ? " (bad entries are rebuilt when next used; `fusegen cache clear` removes all)" : "") << "\n";
  return bad ? kExitSpecError : kExitOk;
}

int export_or_import(const std::string& action, const std::string& file, const std::string& dir,
                     const CacheArgs& args) {
  const std::string& key_file = args.cache_key_file;
  Result<ArchiveReport> done = Error{""};
  RemoteCacheOptions remote;
  remote.url = args.remote_cache.value_or("");
  remote.key_file = key_file;
  if (action == "export")
    done = export_cache(dir, file, key_file);
  else
    done = import_cache(file, dir, key_file, remote.url.empty() ? nullptr : &remote);
  if (!done) {
    std::cerr << "fusegen cache: error: " << done.error() << "\n";
    return kExitSpecError;
  }
  const ArchiveReport& report = done.value();
  for (const std::string& skipped : report.skipped)
    std::cerr << "fusegen cache: warning: " << (action == "export" ? "skipped " : "refused ") << skipped << "\n";
  if (action == "export") {
    std::cout << "exported " << report.entries << (report.entries == 1 ? " entry" : " entries") << " to " << file
              << "\n";
    return kExitOk;
  }
  std::cout << "imported " << report.entries << (report.entries == 1 ? " entry" : " entries") << ", refused "
            << report.skipped.size() << "\n";
  if (!remote.url.empty())
    std::cout << "published " << report.published << " to the remote cache\n";
  // An archive with a refused entry, or entries the remote store did not
  // take, did not do all it was asked to.
  bool incomplete = !report.skipped.empty() || (!remote.url.empty() && report.published != report.entries);
  return incomplete ? kExitSpecError : kExitOk;
}

} // namespace

int cache_command(const CacheArgs& args) {
  const std::string action = args.words.empty() ? "" : args.words[0];
  const bool archive = action == "export" || action == "import";
  const size_t expected = archive ? 2 : 1;
  if ((!archive && action != "stats" && action != "verify" && action != "clear") || args.words.size() != expected) {
    std::cerr << "fusegen cache: error: expected stats, verify, clear or export|import FILE (usage: fusegen cache "
                 "stats|verify|clear [--cache-dir D], fusegen cache export|import FILE [--cache-dir D] "
                 "[--cache-key-file K] [--remote-cache URL])\n";
    return kExitUsage;
  }
  if (args.remote_cache && action != "import") {
    std::cerr << "fusegen cache: error: --remote-cache goes with import (export reads the disk cache)\n";
    return kExitUsage;
  }
  // An explicit directory is used even when FUSEGEN_CACHE=0 turns the cache off for runs.
  std::string dir = args.cache_dir;
  if (dir.empty()) {
    CacheLocation where = cache_location();
    if (!where.enabled) {
      std::cerr << "fusegen cache: error: no cache directory (" << where.reason << "); use --cache-dir D\n";
      return kExitUsage;
    }
    dir = where.dir;
  }
  std::cout << "cache directory: " << dir << "\n";
  if (archive)
    return export_or_import(action, args.words[1], dir, args);
  if (action == "clear") {
    Result<CacheClearReport> cleared = clear_cache(dir);
    if (!cleared) {
      std::cerr << "fusegen cache: error: " << cleared.error() << "\n";
      return kExitSpecError;
    }
    const CacheClearReport& report = cleared.value();
    std::cout << "removed " << report.removed << (report.removed == 1 ? " file" : " files") << "\n";
    for (const std::string& name : report.left)
      std::cerr << "fusegen cache: warning: left " << name << " (named like an entry but not a file)\n";
    return kExitOk;
  }
  Result<CacheContents> contents = inspect_cache(dir);
  if (!contents) {
    std::cerr << "fusegen cache: error: " << contents.error() << "\n";
    return kExitSpecError;
  }
  return action == "stats" ? stats(contents.value()) : verify(contents.value());
}

} // namespace fusegen::cli
#endif // FUSEGEN_HAVE_RUNTIME
